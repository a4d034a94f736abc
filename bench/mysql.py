"""Section ``mysql``: the log reader on MySQL 8's binlog next to MariaDB's, in the same run.

No MySQL server can be installed here, so the MySQL side is the tests' protocol-level MySQL 8
primary (:mod:`tests.fakes.mysql_primary`) serving a binlog built byte by byte in MySQL 8.0.36's
formats (:mod:`tests.cases.mysql8`). It runs in a process of its own (``python -m bench.mysql
serve``), as MariaDB does, so the reader in the bench process does not share its GIL with the
server. Both sides carry the same workload on a table of the same columns: single-row insert
transactions, then rounds of one transaction updating every row (:mod:`bench.workload`).

Measured, taking turns: sparkcdc's log reader alone (``bench.run.reader_only``) from ``earliest``
on each server; besides, a bare replication session counting the primary's events
(:func:`~sparkcdc.sources.mysql.binlog.dump.open_dump`, no decoding): what the primary can serve.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

from bench import baselines, workload
from sparkcdc.config.model import SourceConfig
from sparkcdc.sources.mysql.settings import MySQLSettings
from sparkcdc.sources.mysql.throwaway import ThrowawayMariaDB

UUID = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
VERSION = "8.0.36"
ReaderOnly = Callable[[Any, int, Path], baselines.Measurement]  # (server or config, rows, folder)


def events_table() -> Any:
    """``bench.events`` of :data:`bench.workload.TABLE_DDL` for the MySQL 8 writer."""
    from tests.cases.mysql8 import Column, Table

    return Table("bench", "events", [
        Column("id", "bigint", nullable=False), Column("account", "int", nullable=False),
        Column("amount", "decimal(12,2)"), Column("note", "varchar(64)"),
        Column("created", "datetime(6)"), Column("flag", "tinyint"),
    ], ["id"], table_id=100)  # fmt: skip


def build(inserts: int, update_rounds: int) -> tuple[Any, Any]:
    """A MySQL 8 binlog (writer, table) of the section-1 workload: ``inserts`` single-row insert
    transactions (rows as ``bench.singles`` makes them), then ``update_rounds`` transactions
    each setting ``amount = amount + 1, flag = 1 - flag`` on every row; GTIDs throughout."""
    from tests.cases.mysql8 import BinlogWriter

    writer, table = BinlogWriter(version=VERSION), events_table()
    created = time.strftime("%Y-%m-%d %H:%M:%S.000000")
    rows = [(i, i % 1000, Decimal(i) / 100, f"note-{i}", created, i % 2) for i in range(inserts)]
    write, gno = writer.transaction, 0
    for row in rows:
        gno += 1
        write([("c", table, None, row)], (UUID, gno))
    for _ in range(update_rounds):
        after = [(r[0], r[1], r[2] + 1, r[3], r[4], 1 - r[5]) for r in rows]
        gno += 1
        write([("u", table, b, a) for b, a in zip(rows, after, strict=True)], (UUID, gno))
        rows = after
    return writer, table


def serve(inserts: int, update_rounds: int) -> None:
    """Build the binlog, serve it and print one JSON line (port, build seconds, events in the
    file); serve until stdin closes."""
    from tests.fakes.mysql_primary import MySQLPrimary

    started = time.perf_counter()
    writer, table = build(inserts, update_rounds)
    build_s = time.perf_counter() - started
    events = sum(len(items) for items in writer.files.values())
    with MySQLPrimary("cdc", "cdc-pw", binlog=writer, tables=[table], version=VERSION) as p:
        for name in writer.files:  # framed as dump packets before the runs, as mysqld's
            p.framed(name, 4, 0, 1 << 16)  # files are in the page cache after writing them
        print(json.dumps({"port": p.port, "build_s": build_s, "events": events}), flush=True)
        sys.stdin.read()


@dataclass(frozen=True)
class Served:
    config: SourceConfig
    build_s: float
    events: int
    pid: int

    def cpu_s(self) -> float:
        """The primary process's CPU seconds so far (Linux: its ``/proc`` stat)."""
        with open(f"/proc/{self.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def own_cpu_s() -> float:
    used = resource.getrusage(resource.RUSAGE_SELF)
    return used.ru_utime + used.ru_stime


def with_cpu(
    measure: Callable[[], baselines.Measurement], served: Served, cpu: list[tuple[float, float]]
) -> Callable[[], baselines.Measurement]:
    """``measure``, appending the bench process's and the primary's CPU seconds of each run."""

    def run() -> baselines.Measurement:
        own, primary = own_cpu_s(), served.cpu_s()
        m = measure()
        cpu.append((own_cpu_s() - own, served.cpu_s() - primary))
        return m

    return run


@contextmanager
def primary_process(inserts: int, update_rounds: int) -> Iterator[Served]:
    """The MySQL 8 test primary serving the workload, in a process of its own."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "bench.mysql", "serve", str(inserts), str(update_rounds)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the MySQL 8 test primary did not start (exit {proc.wait()})")
        info = json.loads(line)
        config = SourceConfig(
            "127.0.0.1", info["port"], "cdc", "cdc-pw", (r"bench\.events",),
            settings=MySQLSettings(),
        )  # fmt: skip
        yield Served(config, info["build_s"], info["events"], proc.pid)
    finally:
        proc.stdin.close()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def bare_dump(served: Served) -> baselines.Measurement:
    """A replication session from the first file counting whole events, nothing decoded."""
    from sparkcdc.sources.mysql.binlog.dump import open_dump

    wanted = served.events + 1  # the dump's fake ROTATE, then every event of the file
    seen = 0
    started = time.perf_counter()
    conn, events = open_dump(served.config, 9201, "binlog.000001", 4)
    try:
        for batch in events:
            seen += len(batch)
            if seen >= wanted:
                break
        elapsed = time.perf_counter() - started
    finally:
        conn.close()
    return baselines.Measurement("test primary alone (bare session counting events)", seen, elapsed)


def _figures(m: baselines.Measurement, cpu: list[tuple[float, float]]) -> dict[str, Any]:
    return {
        "name": m.name,
        "rows": m.rows,
        "seconds": m.seconds,
        "rows_per_s": m.rows_per_s,
        "runs": list(m.runs),
        "bench_cpu_s": statistics.median(c[0] for c in cpu),
        "primary_cpu_s": statistics.median(c[1] for c in cpu),
    }


def mysql_section(args: argparse.Namespace, work: Path, reader_only: ReaderOnly) -> dict[str, Any]:
    """The log reader alone on MariaDB and on the MySQL 8 test primary, the same changes."""
    inserts = args.mysql_changes // (1 + args.update_rounds)
    changes = inserts * (1 + args.update_rounds)
    server = ThrowawayMariaDB.start(base_dir=str(work))
    try:
        workload.create_schema(server)
        load = workload.write_changes(server, inserts, args.update_rounds)
        print(f"MariaDB: wrote {load.changes:,} changes in {load.seconds:.1f}s", flush=True)
        with primary_process(inserts, args.update_rounds) as served:
            print(f"MySQL 8: built {changes:,} changes in {served.build_s:.1f}s", flush=True)
            (work / "maria").mkdir()
            (work / "mysql").mkdir()
            cpu: tuple[list[tuple[float, float]], ...] = ([], [], [])
            maria, mysql, alone = baselines.alternating(
                args.repeats,
                with_cpu(lambda: reader_only(server, load.changes, work / "maria"), served, cpu[0]),
                with_cpu(
                    lambda: reader_only(served.config, changes, work / "mysql"), served, cpu[1]
                ),
                with_cpu(lambda: bare_dump(served), served, cpu[2]),
            )
    finally:
        server.stop()
    for m in (maria, mysql, alone):
        runs = ", ".join(f"{s:.2f}" for s in m.runs)
        print(f"  {m.name}: {m.rows_per_s:,.0f}/s (median of {runs} s)", flush=True)
    return {
        "changes": changes,
        "inserts": inserts,
        "update_rounds": args.update_rounds,
        "mysql_version": VERSION,
        "mysql_build_s": served.build_s,
        "mysql_events": served.events,
        "mariadb": _figures(maria, cpu[0]),
        "mysql": _figures(mysql, cpu[1]),
        "primary_alone": _figures(alone, cpu[2]),
        "ratio": mysql.rows_per_s / maria.rows_per_s,
    }


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "serve":
        serve(int(sys.argv[2]), int(sys.argv[3]))
    else:
        raise SystemExit("usage: python -m bench.mysql serve INSERTS UPDATE_ROUNDS")
