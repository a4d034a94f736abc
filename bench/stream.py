"""Section 1: binlog → change log on one workload, next to the C decoder on the same binlog.

Measured on one throwaway server: MariaDB's C decoder (``mariadb-binlog --verbose``), optionally
python-mysql-replication, sparkcdc's log reader alone (protocol + decode into the event store),
the start-up of an empty ``sparkcdc run --available-now`` and the whole run over the workload.
The whole run's lines are stamped as they arrive, which splits its time into start-up, the
micro-batches (what the sink reports reading and writing in each) and the stop: the "where the
time goes" table of bench/RESULTS.md.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench import baselines, startup, workload
from sparkcdc.sources.mysql.throwaway import ThrowawayMariaDB

BATCH_LINE = re.compile(r"batch \d+: (\d+) changes .*\(read ([\d.]+)s, written in ([\d.]+)s\)")
QUERY_STARTED = "stream query started"

ReaderOnly = Callable[[ThrowawayMariaDB, int, Path], baselines.Measurement]
YamlFor = Callable[..., Path]  # (folder, server, tables, **pipeline settings) -> YAML file


def timed_run(cfg: Path) -> tuple[float, list[tuple[float, str]]]:
    """``sparkcdc run --available-now`` of ``cfg``: its seconds, its lines with arrival times."""
    started = time.perf_counter()
    proc = startup.launch(cfg)
    assert proc.stdout is not None
    lines = [(time.perf_counter() - started, line.rstrip()) for line in proc.stdout]
    proc.wait()
    total = time.perf_counter() - started
    if proc.returncode != 0:
        tail = "\n".join(line for _, line in lines[-40:])
        raise RuntimeError(f"sparkcdc run failed:\n{tail}")
    return total, lines


def where_time_goes(total: float, lines: list[tuple[float, str]]) -> dict[str, Any]:
    """The run's time split into start-up, micro-batches (sink read/write) and stop."""
    query = next((t for t, line in lines if QUERY_STARTED in line), 0.0)
    batches = [(t, BATCH_LINE.search(line)) for t, line in lines]
    found = [(t, m) for t, m in batches if m is not None]
    last = found[-1][0] if found else query
    return {
        "query_started_s": query,
        "batches": len(found),
        "batch_rows": sum(int(m.group(1)) for _, m in found),
        "batches_s": last - query,
        "sink_read_s": sum(float(m.group(2)) for _, m in found),
        "sink_write_s": sum(float(m.group(3)) for _, m in found),
        "stop_s": total - last,
    }


def measure(
    server: ThrowawayMariaDB,
    work: Path,
    load: workload.Workload,
    yaml_for: YamlFor,
    reader_only: ReaderOnly,
    pmr_rows: int = 0,
    repeats: int = 3,
) -> dict[str, Any]:
    """Every figure of section 1 for the workload ``load`` already written on ``server``; the
    C decoder and the log reader alone are the median of ``repeats`` runs taking turns."""
    c, r = baselines.alternating(
        repeats,
        lambda: baselines.mariadb_binlog(server, load.changes),
        lambda: reader_only(server, load.changes, work),
    )
    for m in (c, r):
        runs = ", ".join(f"{s:.2f}" for s in m.runs)
        print(f"  {m.name}: {m.rows_per_s:,.0f} rows/s (median of {runs} s)", flush=True)
    found = [c]
    if pmr_rows:
        p = baselines.python_mysql_replication(server, pmr_rows)
        print(f"  {p.name}: {p.rows_per_s:,.0f} rows/s", flush=True)
        found.append(p)
    idle = work / "idle"
    idle.mkdir()
    server.execute("CREATE TABLE IF NOT EXISTS bench.empty (id INT PRIMARY KEY)")
    # an empty stream: a table nothing writes to, from the log's end (nothing to skip)
    empty = yaml_for(idle, server, r"bench\.empty", startup="latest")
    start = startup.measure_startup(empty, idle / "checkpoint")
    fixed = start["total_s"]
    e2e_dir = work / "e2e"
    e2e_dir.mkdir()
    total, lines = timed_run(yaml_for(e2e_dir, server, r"bench\.events"))
    e = baselines.Measurement("sparkcdc run --available-now (binlog → Delta)", load.changes, total)
    steady = baselines.Measurement(
        "  … without an empty run's start-up and stop", load.changes, max(total - fixed, 1e-9)
    )
    print(
        f"  {e.name}: {e.rows_per_s:,.0f} rows/s ({total:.1f}s; empty run {fixed:.1f}s, "
        f"first commit after {start['first_commit_s']:.1f}s)",
        flush=True,
    )
    return {
        "changes": load.changes,
        "inserts": load.inserts,
        "updated_rows": load.updated_rows,
        "startup_s": fixed,
        "startup": start,
        "timeline": where_time_goes(total, lines),
        "measurements": [
            {
                "name": m.name,
                "rows": m.rows,
                "seconds": m.seconds,
                "rows_per_s": m.rows_per_s,
                "runs": list(m.runs),
            }
            for m in (*found, r, e, steady)
        ],
    }
