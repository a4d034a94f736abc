#!/usr/bin/env bash
# The kill -9 trials at full strength: five kill -9 of the whole pipeline per phase, for each
# source and sink (Delta: mid-stream, mid initial snapshot and mid incremental snapshot on
# MariaDB and PostgreSQL; Iceberg: mid-stream and mid initial snapshot on both, mid incremental
# snapshot on MariaDB), then replica == source, a change log without gap or duplicate and
# history tables equal to the change log's rebuild; and the Iceberg lake on S3 with its catalog
# in PostgreSQL through a crash. The default test run has one crash per phase and leaves out
# some of these source × sink pairs (SPARKCDC_EXTENDED=1, set here, runs them all). Extra
# arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export SPARKCDC_EXTENDED=1 SPARKCDC_CRASH_TRIALS=5 SPARKCDC_SNAPSHOT_CRASH_TRIALS=5 \
  SPARKCDC_INCREMENTAL_CRASH_TRIALS=5 SPARKCDC_ICEBERG_CRASH_TRIALS=5 \
  SPARKCDC_ICEBERG_SNAPSHOT_CRASH_TRIALS=5 SPARKCDC_ICEBERG_INCREMENTAL_CRASH_TRIALS=5
exec .venv/bin/pytest -p no:cacheprovider -q --durations=20 tests/e2e/test_exactly_once.py \
  tests/e2e/test_snapshot.py tests/e2e/test_incremental.py tests/e2e/test_iceberg.py \
  -k "kill_9 or s3" "$@"
