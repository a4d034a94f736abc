#!/usr/bin/env bash
# Coverage-guided fuzzing of the log readers' decoders (atheris, libFuzzer for Python): real binlog
# and pgoutput streams, mutated, must decode or stop with sparkcdc's own error naming the event
# and its place (docs/fuzzing.md). Any other outcome (a raw exception, a hang, memory past the
# limit) is written to the crashes folder and the script exits non-zero.
#   scripts/fuzz.sh [--seconds N] [--target binlog|pgoutput|all] [--crashes DIR]
# --seconds is the time per target (default 300). PYTHON=/path/to/python skips the setup and
# runs with that interpreter (atheris and the project's packages installed in it).
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=300
target=all
crashes=fuzz-crashes
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds="$2"; shift 2 ;;
    --target) target="$2"; shift 2 ;;
    --crashes) crashes="$2"; shift 2 ;;
    *) echo "usage: scripts/fuzz.sh [--seconds N] [--target binlog|pgoutput|all] [--crashes DIR]" >&2
       exit 64 ;;
  esac
done

if [ -z "${PYTHON:-}" ]; then
  bash scripts/setup.sh  # the pinned dev packages, atheris among them, and the C modules
  PYTHON=.venv/bin/python
fi
if ! "$PYTHON" -c 'import atheris' 2>/dev/null; then
  pin=$(sed -n 's/.*"\(atheris==[^"]*\)".*/\1/p' pyproject.toml)
  "$PYTHON" -m pip install -q "$pin"
fi

targets=(binlog pgoutput)
[ "$target" = all ] || targets=("$target")
mkdir -p "$crashes"
status=0
for t in "${targets[@]}"; do
  echo "== fuzzing $t for ${seconds}s (crashes: $crashes/)"
  log="$crashes/$t.log"
  set +e
  PYTHONPATH="$PWD/src:$PWD" "$PYTHON" -m tests.fuzz.run --target "$t" --seconds "$seconds" \
    --crashes "$crashes" --corpus ".fuzz-corpus/$t" >"$log" 2>&1
  rc=$?
  set -e
  grep -E "^(Done|stat::(number_of_executed_units|average_exec_per_sec|new_units_added|peak_rss_mb)|SUMMARY|Test unit written)" "$log" || true
  found=$(find "$crashes" -name "$t-*" -type f | wc -l)
  if [ "$found" -gt 0 ] || [ "$rc" != 0 ]; then
    echo "fuzz: $t ended with status $rc, $found finding(s) in $crashes/ (log: $log; replay one:" \
      "PYTHONPATH=src:. python -m tests.fuzz.run --target $t --replay FILE)" >&2
    status=1
  fi
done
exit "$status"
