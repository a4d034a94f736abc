"""Baselines measured on the same binlog in the same run as sparkcdc.

- ``mariadb-binlog --read-from-remote-server --verbose``: MariaDB's own C decoder, printing every
  row change as pseudo-SQL (output discarded).
- python-mysql-replication: the common pure-Python binlog reader, every row decoded to Python
  values (on a prefix of the workload: at its speed the whole million would take minutes).
"""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from sparkcdc.sources.mysql.throwaway import ThrowawayMariaDB
from sparkcdc.sources.port import LogReader
from sparkcdc.store.ring import EventStore


@dataclass(frozen=True)
class Measurement:
    name: str
    rows: int
    seconds: float
    runs: tuple[float, ...] = ()  # every run's seconds when ``seconds`` is their median

    @property
    def rows_per_s(self) -> float:
        return self.rows / self.seconds if self.seconds > 0 else float("inf")


def alternating(repeats: int, *measures: Callable[[], Measurement]) -> list[Measurement]:
    """Each of ``measures`` run ``repeats`` times, taking turns (so a slow spell of the machine
    touches all of them), as the median run with every run's seconds."""
    runs: list[list[Measurement]] = [[] for _ in measures]
    for _ in range(repeats):
        for taken, measure in zip(runs, measures, strict=True):
            taken.append(measure())
    out = []
    for taken in runs:
        middle = sorted(taken, key=lambda m: m.seconds)[len(taken) // 2]
        out.append(replace(middle, runs=tuple(m.seconds for m in taken)))
    return out


def drain_reader(name: str, reader: LogReader, store: EventStore, rows: int) -> Measurement:
    """Start ``reader`` and take its items from ``store`` until ``rows`` row changes came: the
    log reader alone, timed from its start."""
    seen = 0
    started = time.perf_counter()
    reader.start()
    try:
        while seen < rows:
            if reader.error is not None:
                raise reader.error
            batch = store.get(timeout=1.0)
            if batch is None:
                continue
            seen += sum(item.rows for item in batch.items if not item.is_ddl)
            store.ack(batch)
        elapsed = time.perf_counter() - started
    finally:
        reader.stop()
    return Measurement(name, seen, elapsed)


def mariadb_binlog(server: ThrowawayMariaDB, rows: int) -> Measurement:
    """Time the C decoder over every binlog file of the server (output to /dev/null)."""
    tool = shutil.which("mariadb-binlog") or shutil.which("mysqlbinlog")
    if tool is None:
        raise RuntimeError("mariadb-binlog is not installed (Debian package mariadb-client)")
    first = server.query("SHOW BINARY LOGS")[0][0]
    started = time.perf_counter()
    subprocess.run(
        [
            tool,
            "--read-from-remote-server",
            "--verbose",
            "--base64-output=DECODE-ROWS",
            "--to-last-log",
            f"--host={server.host}",
            f"--port={server.port}",
            f"--user={server.user}",
            first,
        ],
        stdout=subprocess.DEVNULL,
        check=True,
    )
    return Measurement("mariadb-binlog --verbose (C)", rows, time.perf_counter() - started)


def python_mysql_replication(server: ThrowawayMariaDB, max_rows: int) -> Measurement:
    """Decode row events with python-mysql-replication until ``max_rows`` rows were seen."""
    from pymysqlreplication import BinLogStreamReader
    from pymysqlreplication.row_event import DeleteRowsEvent, UpdateRowsEvent, WriteRowsEvent

    first = server.query("SHOW BINARY LOGS")[0][0]
    stream = BinLogStreamReader(
        connection_settings={
            "host": server.host,
            "port": server.port,
            "user": server.user,
            "passwd": server.password,
        },
        server_id=9101,
        blocking=False,
        resume_stream=True,
        log_file=first,
        log_pos=4,
        only_events=[WriteRowsEvent, UpdateRowsEvent, DeleteRowsEvent],
        is_mariadb=True,
    )
    rows = 0
    started = time.perf_counter()
    try:
        for event in stream:
            rows += len(event.rows)
            if rows >= max_rows:
                break
    finally:
        stream.close()
    return Measurement("python-mysql-replication", rows, time.perf_counter() - started)
