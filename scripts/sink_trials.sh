#!/usr/bin/env bash
# The Iceberg sink's crash trials at full strength (tests/e2e/test_iceberg.py): five kill -9 of
# the whole pipeline per phase (initial snapshot and stream on MariaDB and PostgreSQL,
# incremental snapshot on MariaDB), then replica == source and a change log without gap or
# duplicate; and the lake on S3 with its catalog in PostgreSQL through a crash. The default test
# run has two crashes per phase. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export SPARKCDC_ICEBERG_CRASH_TRIALS=5 SPARKCDC_ICEBERG_SNAPSHOT_CRASH_TRIALS=5 \
  SPARKCDC_ICEBERG_INCREMENTAL_CRASH_TRIALS=5
exec .venv/bin/pytest -p no:cacheprovider -q --durations=10 tests/e2e/test_iceberg.py \
  -k "kill_9 or s3" "$@"
