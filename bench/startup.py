"""Pipeline start-up: from ``sparkcdc run`` launched to the first micro-batch committed.

An empty stream (one table, no rows) run with ``--available-now``. The bench stamps every line
the run prints when it arrives and watches Spark's checkpoint for the first commit file, so the
start-up splits into the phases of ``sparkcdc run``: Python start and the source check (until
``capturing … tables``), the JVM and the Spark session (until ``Spark session started``), the
data source's registration and the query's start with its source process (until ``stream query
started``), and the first micro-batch (until ``checkpoint/spark/commits/0`` exists). The run's
end, the query's stop and the session's, is timed apart.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

PHASES = (
    ("capturing ", "Python start, source checked"),
    ("Spark session started", "JVM and Spark session"),
    ("stream query started", "data source registered, query and source process started"),
)


def launch(cfg: Path) -> subprocess.Popen[str]:
    """``sparkcdc run --available-now`` of ``cfg``, every line it prints on its stdout."""
    return subprocess.Popen(
        [sys.executable, "-m", "sparkcdc.cli.main", "run", str(cfg), "--available-now"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def measure_startup(cfg: Path, checkpoint: Path) -> dict[str, Any]:
    """Start-up of the pipeline in ``cfg`` (empty stream), its phases and its stop."""
    commit = checkpoint / "spark" / "commits" / "0"
    started = time.perf_counter()
    proc = launch(cfg)
    seen: dict[str, float] = {}
    lines: list[str] = []
    committed: list[float] = []

    def watch() -> None:
        while proc.poll() is None and not commit.exists():
            time.sleep(0.01)
        if commit.exists():
            committed.append(time.perf_counter() - started)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    assert proc.stdout is not None
    for line in proc.stdout:
        lines.append(line)
        for marker, _ in PHASES:
            if marker in line and marker not in seen:
                seen[marker] = time.perf_counter() - started
    proc.wait()
    total = time.perf_counter() - started
    watcher.join()
    missing = [m for m, _ in PHASES if m not in seen]
    if proc.returncode != 0 or missing or not committed:
        raise RuntimeError(f"the empty run did not start as expected:\n{''.join(lines)[-3000:]}")
    phases, previous = [], 0.0
    for marker, name in PHASES:
        phases.append({"phase": name, "seconds": seen[marker] - previous})
        previous = seen[marker]
    phases.append({"phase": "first micro-batch (committed)", "seconds": committed[0] - previous})
    return {"first_commit_s": committed[0], "total_s": total, "phases": phases,
            "bare_spark_s": bare_spark()}  # fmt: skip


BARE_SPARK = (
    "from pyspark.sql import SparkSession\n"
    "spark = SparkSession.builder.master('local[*]').appName('bare')"
    ".config('spark.ui.showConsoleProgress', 'false').getOrCreate()\n"
    "spark.range(1).count()\n"
    "spark.stop()\n"
)


def bare_spark() -> float:
    """Seconds of a bare Spark session that runs one trivial job and stops (a new Python
    process, as ``sparkcdc run`` is): the floor an empty run is measured against."""
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", BARE_SPARK], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"the bare Spark session failed:\n{done.stderr[-3000:]}")
    return time.perf_counter() - started
