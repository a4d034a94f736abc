#!/usr/bin/env bash
# Installs what sparkcdc needs on a Debian 12 machine, skipping what is already there:
# MariaDB server binaries (never started as a service: tests and the demo start private
# servers), Java 17+, Python 3.11+ with venv, libfaketime (the fault campaign), then .venv with
# the packages at the versions constraints.txt pins.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" != "0" ] && command -v sudo >/dev/null 2>&1; then SUDO="sudo"; fi

need=()
command -v mariadbd >/dev/null 2>&1 || [ -x /usr/sbin/mariadbd ] || need+=(mariadb-server)
command -v mariadb-binlog >/dev/null 2>&1 || need+=(mariadb-client)
# PostgreSQL's server (initdb, postgres; pg_recvlogical comes with it, from the client package)
pg_bin() {  # the newest /usr/lib/postgresql/<version>/bin/$1, else $1 on PATH, else nothing
  local found
  found=$(ls -d /usr/lib/postgresql/*/bin/"$1" 2>/dev/null | sort -V | tail -1 || true)
  echo "${found:-$(command -v "$1" || true)}"
}
if [ -z "$(pg_bin initdb)" ]; then need+=(postgresql)
elif [ -z "$(pg_bin pg_recvlogical)" ]; then need+=(postgresql-client); fi
java_major() { java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -1; }
if ! command -v java >/dev/null 2>&1 || [ "$(java_major)" -lt 17 ]; then need+=(default-jre-headless); fi

pick_python() {
  for py in python3.13 python3.12 python3.11 python3; do
    if command -v "$py" >/dev/null 2>&1 && "$py" -c 'import sys, venv, ensurepip; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
      echo "$py"; return 0
    fi
  done
  return 1
}
PY=$(pick_python || true)
if [ -z "$PY" ]; then need+=(python3 python3-venv python3-dev); fi
# the fault campaign's clock-skew fault runs the database servers under libfaketime
ls /usr/lib/*/faketime/libfaketime.so.1 >/dev/null 2>&1 || need+=(libfaketime)
# the compiled row decoder needs a C compiler and Python's headers
command -v gcc >/dev/null 2>&1 || need+=(gcc)
has_headers() {
  "$1" -c 'import os, sys, sysconfig; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))'
}
if [ -n "$PY" ] && ! has_headers "$PY"; then need+=(python3-dev); fi

if [ ${#need[@]} -gt 0 ]; then
  echo "setup: installing ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  # policy-rc.d keeps Debian from starting the system MariaDB service during the install
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' | $SUDO tee /usr/sbin/policy-rc.d >/dev/null
    $SUDO chmod +x /usr/sbin/policy-rc.d
    trap '$SUDO rm -f /usr/sbin/policy-rc.d' EXIT
  fi
  $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  PY=$(pick_python)
fi

# the stamp holds a digest of what the packages come from: another pyproject.toml or
# constraints.txt installs them again
stamp=.venv/.sparkcdc-installed
if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv with $PY"
  "$PY" -m venv .venv
fi
wanted=$(cat pyproject.toml constraints.txt | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$wanted" ]; then
  echo "setup: installing pinned Python packages into .venv"
  .venv/bin/python -m pip install -q --upgrade pip
  # pyproject.toml admits ranges; constraints.txt pins the versions the tests run with
  .venv/bin/python -m pip install -q -c constraints.txt -e '.[dev]'
  echo "$wanted" >"$stamp"
fi
# the C modules (sources/mysql/binlog/_*.c: the row decoder, the packet splitter;
# sources/postgres/pgoutput/_*.c: the tuple reader), each rebuilt when its source changes
suffix=$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
inc=$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
for src in src/sparkcdc/sources/mysql/binlog/_*.c src/sparkcdc/sources/postgres/pgoutput/_*.c; do
  ext=${src%.c}$suffix
  if [ ! -f "$ext" ] || [ "$src" -nt "$ext" ]; then
    echo "setup: compiling $(basename "$src")"
    gcc -O2 -Wall -shared -fPIC -I"$inc" "$src" -o "$ext"
  fi
done
# the package's bytecode, as pip writes it when it installs a wheel: the editable install leaves
# it to the first import, and where PYTHONDONTWRITEBYTECODE is set it is never written, so every
# Python process Spark starts (the source's, the planners', the workers') compiled sparkcdc again
.venv/bin/python -m compileall -q src/sparkcdc
echo "setup: ready ($(.venv/bin/python --version), $(java -version 2>&1 | head -1), $(mariadbd --version 2>/dev/null || /usr/sbin/mariadbd --version), $("$(pg_bin postgres)" --version))"
