#!/usr/bin/env bash
# Installs what is missing (scripts/setup.sh), then lints, type-checks and runs the test suite.
# Extra arguments go to pytest (e.g. scripts/test.sh tests/unit -k store).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
echo "== ruff"
.venv/bin/ruff check src tests bench
echo "== mypy"
.venv/bin/mypy
echo "== pytest"
set +e
.venv/bin/pytest -p no:cacheprovider -q --durations=15 "$@"
rc=$?
set -e
if [ "$rc" = "5" ]; then echo "pytest collected no tests" >&2; exit 1; fi
exit "$rc"
