#!/usr/bin/env bash
# Runs every benchmark section and writes bench/RESULTS.md (figures) and bench/results.json.
# Extra arguments go to `python -m bench.run` (e.g. --only latency).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh

# the snapshot sections' Spark JDBC baselines read with Debian's jars: MariaDB Connector/J
# (snapshot) and the PostgreSQL JDBC driver (pg-snapshot)
missing=""
[ -f /usr/share/java/mariadb-java-client.jar ] || missing="$missing libmariadb-java"
[ -f /usr/share/java/postgresql.jar ] || missing="$missing libpostgresql-jdbc-java"
if [ -n "$missing" ]; then
  SUDO=""
  if [ "$(id -u)" != "0" ] && command -v sudo >/dev/null 2>&1; then SUDO="sudo"; fi
  echo "bench: installing$missing"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  # shellcheck disable=SC2086  # one word per package
  $SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi
exec .venv/bin/python -m bench.run "$@"
