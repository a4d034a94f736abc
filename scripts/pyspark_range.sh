#!/usr/bin/env bash
# Runs a slice of the test suite against the lowest and the highest pyspark pyproject.toml
# admits, each in a venv of its own under a temporary folder, every other package at the version
# constraints.txt pins (the dev tools as pyproject.toml pins them). The sources run from src/ as
# they are, with the C modules scripts/setup.sh compiled there.
#
#   scripts/pyspark_range.sh [--lowest | --highest] [pytest arguments ...]
#
# Without --lowest or --highest both ends run; without pytest arguments the slice is tests/spark
# (the data sources on a local Spark) and the command line's run into Delta from MariaDB and
# PostgreSQL. PYTHON names the interpreter the venvs are made from (default .venv/bin/python);
# KEEP=1 keeps the temporary folder. Exit status: 0 when every end passed.
set -euo pipefail
cd "$(dirname "$0")/.."

ends=(lowest highest)
case "${1:-}" in
  --lowest) ends=(lowest); shift ;;
  --highest) ends=(highest); shift ;;
esac
slice=("$@")
if [ ${#slice[@]} -eq 0 ]; then
  slice=(tests/spark tests/e2e/test_mysql_run.py tests/e2e/test_pg_run.py)
fi
PY=${PYTHON:-.venv/bin/python}
work=$(mktemp -d -t sparkcdc-pyspark-XXXXXX)
if [ "${KEEP:-0}" != 1 ]; then trap 'rm -rf "$work"' EXIT; fi

# what every venv installs: the package's requirements and dev tools but pyspark, the pins but
# pyspark's; and pyspark's range
"$PY" - "$work" <<'PYTHON'
import re
import sys
import tomllib
from pathlib import Path

work = Path(sys.argv[1])
project = tomllib.loads(Path("pyproject.toml").read_text())["project"]
wanted = project["dependencies"] + project["optional-dependencies"]["dev"]


def name(requirement: str) -> str:
    return re.split(r"[<>=!~ \[;]", requirement, maxsplit=1)[0].lower()


(spark,) = [r for r in wanted if name(r) == "pyspark"]
lowest = re.search(r">=\s*([0-9][0-9.]*)", spark)
if lowest is None:
    sys.exit(f"pyproject.toml's {spark!r} names no lowest version (>=)")
(work / "requirements.txt").write_text("".join(f"{r}\n" for r in wanted if name(r) != "pyspark"))
(work / "lowest").write_text(f"pyspark=={lowest.group(1)}\n")
(work / "highest").write_text(f"{spark}\n")
PYTHON
grep -v '^pyspark==' constraints.txt >"$work/constraints.txt"

status=0
results=()
for end in "${ends[@]}"; do
  venv=$work/venv-$end
  echo "== the $end pyspark admitted ($(cat "$work/$end")): installing into $venv"
  "$PY" -m venv "$venv"
  "$venv/bin/python" -m pip install -q -c "$work/constraints.txt" \
    -r "$work/requirements.txt" -r "$work/$end"
  version=$("$venv/bin/python" -c 'import pyspark; print(pyspark.__version__)')
  echo "== pyspark $version: pytest ${slice[*]}"
  start=$SECONDS
  set +e
  PYTHONPATH=$PWD/src "$venv/bin/python" -m pytest -p no:cacheprovider -q "${slice[@]}"
  rc=$?
  set -e
  results+=("pyspark $version ($end): pytest exit status $rc in $((SECONDS - start)) s")
  if [ "$rc" != 0 ]; then status=1; fi
done
printf '%s\n' "${results[@]}"
exit "$status"
