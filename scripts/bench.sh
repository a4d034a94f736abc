#!/usr/bin/env bash
# Runs every benchmark section and writes bench/RESULTS.md (figures) and bench/results.json.
# Extra arguments go to `python -m bench.run` (e.g. --only latency).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/python -m bench.run "$@"
