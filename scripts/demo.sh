#!/usr/bin/env bash
# Installs what is missing (scripts/setup.sh), then runs the demo: a throwaway MariaDB, a shop
# workload streamed by `sparkcdc run` into ./lake, and a source-vs-replica check at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/python -m sparkcdc.demo "$@"
