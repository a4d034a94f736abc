#!/usr/bin/env bash
# Runs every benchmark section and writes bench/RESULTS.md (figures) and bench/results.json.
# Extra arguments go to `python -m bench.run` (e.g. --only latency).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh

# the snapshot section's Spark JDBC baseline reads with MariaDB Connector/J (Debian's jar)
if [ ! -f /usr/share/java/mariadb-java-client.jar ]; then
  SUDO=""
  if [ "$(id -u)" != "0" ] && command -v sudo >/dev/null 2>&1; then SUDO="sudo"; fi
  echo "bench: installing libmariadb-java"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends libmariadb-java >/dev/null
fi
exec .venv/bin/python -m bench.run "$@"
