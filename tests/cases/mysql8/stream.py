"""Reading what a MySQL 8 test primary serves with the project's log reader: the items it puts
into the event store, until a number of changes arrived or a condition holds (a following
stream), or until a position (a bounded read, which ends with the store closed)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sparkcdc.config.model import SourceConfig
from sparkcdc.core.logitem import LogItem
from sparkcdc.sources.mysql.binlog.reader import LogReader
from sparkcdc.sources.mysql.offset import BinlogOffset
from sparkcdc.sources.mysql.schema.history import SchemaHistory
from sparkcdc.store.ring import EventStore
from tests.cases.mysql8.binlog import BinlogWriter
from tests.cases.mysql8.columns import Table
from tests.fakes.mysql_primary import MySQLPrimary


def serve(made: list[MySQLPrimary], writer: BinlogWriter, *tables: Table) -> MySQLPrimary:
    primary = MySQLPrimary("cdc", "cdc-pw", binlog=writer, tables=list(tables),
                           version=writer.version)  # fmt: skip
    made.append(primary)
    return primary


def source_of(primary: MySQLPrimary, *patterns: str) -> SourceConfig:
    return SourceConfig("127.0.0.1", primary.port, "cdc", "cdc-pw", patterns or (r"shop\..*",))


def change_rows(items: list[LogItem]) -> list[dict[str, Any]]:
    return [r for i in items if i.batch is not None and not i.is_ddl for r in i.batch.to_pylist()]


def stream(
    primary: MySQLPrimary, start: BinlogOffset, tmp: Path, changes: int, settle: float = 0.0,
    source: SourceConfig | None = None,
) -> list[LogItem]:  # fmt: skip
    """Every item (one per transaction) the log reader puts from ``start`` until ``changes``
    changes arrived, and ``settle`` seconds more."""
    store = EventStore()
    history = SchemaHistory(tmp / "history.jsonl")
    reader = LogReader(source or source_of(primary), start, store, history, item_rows=1)
    reader.start()
    items: list[LogItem] = []
    deadline, quiet = time.monotonic() + 30, 0.0
    try:
        while len(change_rows(items)) < changes or time.monotonic() < quiet:
            assert time.monotonic() < deadline, f"timed out with {change_rows(items)}"
            if not quiet and len(change_rows(items)) >= changes:
                quiet = time.monotonic() + settle
            assert reader.error is None, reader.error
            batch = store.get(timeout=0.2)
            if batch is not None:
                items.extend(batch.items)
                store.ack(batch)
    finally:
        reader.stop()
    return items


def read_until(
    source: SourceConfig, start: BinlogOffset, stop: BinlogOffset, tmp: Path,
    items: list[LogItem] | None = None,
) -> list[LogItem]:  # fmt: skip
    """Every item the log reader puts from ``start`` until it reached ``stop`` (it closes the
    store there), appended to ``items`` (which holds them also when the error that stopped the
    reader is raised)."""
    store = EventStore()
    reader = LogReader(source, start, store, SchemaHistory(tmp / "history.jsonl"), item_rows=1,
                       stop_at=stop)  # fmt: skip
    reader.start()
    items = [] if items is None else items
    deadline = time.monotonic() + 30
    try:
        while True:
            assert time.monotonic() < deadline, f"{stop} not reached; read {items}"
            closed = store.closed  # then what get() does not return was never put
            batch = store.get(timeout=0.2)  # raises the reader's error once it stopped
            if batch is None:
                if closed:
                    return items
                continue
            items.extend(batch.items)
            store.ack(batch)
    finally:
        reader.stop()


def read_while(
    source: SourceConfig, start: BinlogOffset, tmp: Path, done: Callable[[list[LogItem]], bool]
) -> list[LogItem]:
    """Every item the log reader puts from ``start`` (following the log, heartbeats on when
    ``source.heartbeat`` says) until ``done(items)``."""
    store = EventStore()
    reader = LogReader(source, start, store, SchemaHistory(tmp / "history.jsonl"), item_rows=1)
    reader.start()
    items: list[LogItem] = []
    deadline = time.monotonic() + 30
    try:
        while not done(items):
            assert time.monotonic() < deadline, f"not done with {items}"
            batch = store.get(timeout=0.2)
            if batch is not None:
                items.extend(batch.items)
                store.ack(batch)
    finally:
        reader.stop()
    return items
