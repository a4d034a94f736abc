"""Section 9: how the pipeline's cost grows with the number of captured tables.

The same rows and the same changes, once on one table and once spread over many (300, then
1,000): ``total_rows`` rows in all (``total_rows / n`` per table), snapshotted by a first
``sparkcdc run --available-now`` (startup ``initial``), then ``updates`` single-row UPDATE
transactions round robin over the tables, caught up by a second run. Each run's time is split
as section 1 splits it (:func:`bench.stream.where_time_goes`); the figures compared leave the
start-up out: from the stream query's start to the last micro-batch written. Last, what one
change-log append costs as a table's log grows (:mod:`bench.commit_cost`).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from bench import commit_cost, stream
from sparkcdc.sources.mysql.throwaway import ThrowawayMariaDB

YamlFor = stream.YamlFor


def table_name(n: int, i: int) -> str:
    return f"t{n}.t{i:04d}"


def write_tables(server: ThrowawayMariaDB, n: int, total_rows: int) -> None:
    """``n`` tables in the database ``t<n>``, ``total_rows // n`` rows each."""
    per_table = total_rows // n
    server.execute(f"CREATE DATABASE t{n}")
    for i in range(n):
        name = table_name(n, i)
        server.execute(
            f"CREATE TABLE {name} (id INT PRIMARY KEY, account INT NOT NULL, "
            "amount DECIMAL(12,2), note VARCHAR(64))",
            f"INSERT INTO {name} SELECT seq, seq % 1000, seq * 0.01, CONCAT('note-', seq) "
            f"FROM seq_1_to_{per_table}",
            database=f"t{n}",
        )


def write_updates(server: ThrowawayMariaDB, n: int, total_rows: int, updates: int) -> float:
    """``updates`` single-row UPDATE transactions, round robin over the ``n`` tables; seconds."""
    per_table = total_rows // n
    started = time.perf_counter()
    statements = [
        f"UPDATE {table_name(n, i % n)} SET amount = amount + 1 "
        f"WHERE id = {1 + (i // n) % per_table}"
        for i in range(updates)
    ]
    server.execute(*statements)
    return time.perf_counter() - started


def measure_tables(
    server: ThrowawayMariaDB, work: Path, yaml_for: YamlFor, n: int, total_rows: int, updates: int
) -> dict[str, Any]:
    """The snapshot and the catch-up of ``n`` tables (module docstring)."""
    folder = work / f"tables-{n}"
    folder.mkdir()
    write_tables(server, n, total_rows)
    cfg = yaml_for(folder, server, rf"t{n}\..*", startup="initial")
    total, lines = stream.timed_run(cfg)
    snap = stream.where_time_goes(total, lines)
    wrote_s = write_updates(server, n, total_rows, updates)
    total, lines = stream.timed_run(cfg)
    catch = stream.where_time_goes(total, lines)
    if catch["batch_rows"] != updates:
        raise RuntimeError(f"{n} tables: the catch-up wrote {catch['batch_rows']} changes, "
                           f"not {updates}")  # fmt: skip
    figures = {
        "tables": n,
        "rows": total_rows,
        "updates": updates,
        "updates_written_s": wrote_s,
        "snapshot": snap,
        "catch_up": catch,
        "snapshot_rows_per_s": total_rows / max(snap["batches_s"], 1e-9),
        "catch_up_changes_per_s": updates / max(catch["batches_s"], 1e-9),
    }
    print(
        f"  {n} tables: snapshot {snap['batches_s']:.1f}s ({snap['batches']} batches), "
        f"catch-up {catch['batches_s']:.1f}s ({catch['batches']} batches, "
        f"{figures['catch_up_changes_per_s']:,.0f} changes/s)",
        flush=True,
    )
    return figures


def run(
    work: Path, yaml_for: YamlFor, counts: list[int], total_rows: int, updates: int
) -> dict[str, Any]:
    """Section 9 for each table count of ``counts`` (the first one the baseline), each on a
    server of its own."""
    found = []
    for n in counts:
        server = ThrowawayMariaDB.start(base_dir=str(work))
        try:
            found.append(measure_tables(server, work, yaml_for, n, total_rows, updates))
        finally:
            server.stop()
    return {"runs": found, "commit_cost": commit_cost.run()}


def with_section(markdown: str, results: dict[str, Any]) -> str:
    """``markdown`` with section 9, if measured, before ``## Where the time goes``."""
    s = results.get("tables")
    head, mark, tail = markdown.partition("## Where the time goes\n")
    return head + "\n".join(section(s)) + "\n" + mark + tail if s and mark else markdown


def section(s: dict[str, Any]) -> list[str]:
    """Section 9 in RESULTS.md: each table count next to the first (one table), and where the
    time of each run goes."""
    runs = s["runs"]
    base = runs[0]
    first = base["rows"]
    out = [
        "## 9. Many tables: the same rows and changes over 1, 300 and 1,000 tables",
        "",
        f"{first:,} rows in all (`id int` primary key, `int`, `decimal(12,2)`, `varchar(64)`), "
        f"snapshotted by a first `sparkcdc run --available-now` (`startup: initial`), then "
        f"{base['updates']:,} single-row `UPDATE` transactions round robin over the tables, "
        "caught up by a second run; each table count on a throwaway MariaDB of its own. Seconds "
        "from the stream query's start to the last micro-batch written (start-up excluded); the "
        "ratio is the rate next to the one-table run's (goal for 300 tables: ≥ 0.5×).",
        "",
        "| tables | snapshot s | rows/s | × one table | catch-up s | changes/s | × one table |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in runs:
        out.append(
            f"| {r['tables']:,} | {r['snapshot']['batches_s']:.2f} | "
            f"{r['snapshot_rows_per_s']:,.0f} | "
            f"{r['snapshot_rows_per_s'] / base['snapshot_rows_per_s']:.2f}× | "
            f"{r['catch_up']['batches_s']:.2f} | {r['catch_up_changes_per_s']:,.0f} | "
            f"{r['catch_up_changes_per_s'] / base['catch_up_changes_per_s']:.2f}× |"
        )
    out += [
        "",
        "Where the time goes (seconds): start-up (until the stream query started), the "
        "micro-batches (the sink's reading of a batch and its writing, both inside), the stop.",
        "",
        "| tables | run | start-up | batches | micro-batches | sink reads | sink writes | stop |",
        "|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in runs:
        for name in ("snapshot", "catch_up"):
            t = r[name]
            out.append(
                f"| {r['tables']:,} | {name.replace('_', '-')} | {t['query_started_s']:.2f} | "
                f"{t['batches']} | {t['batches_s']:.2f} | {t['sink_read_s']:.2f} | "
                f"{t['sink_write_s']:.2f} | {t['stop_s']:.2f} |"
            )
    costs = s.get("commit_cost")
    return out + [""] + (commit_cost.section(costs) if costs else [])
