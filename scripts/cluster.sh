#!/usr/bin/env bash
# The full trial on a real Spark cluster (tests/e2e/test_cluster.py): a standalone master and two
# workers on loopback, the lake on S3 (moto), from MariaDB and from PostgreSQL: the initial
# snapshot's tasks on both workers, a worker killed with kill -9 mid-snapshot and the driver
# mid-stream, then replica == source and a change log without gap or duplicate. The default test
# run has only its reduced test (no faults), for both sources. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
SPARKCDC_CLUSTER_TRIAL=1 exec .venv/bin/pytest -p no:cacheprovider -q --durations=5 \
  tests/e2e/test_cluster.py "$@"
