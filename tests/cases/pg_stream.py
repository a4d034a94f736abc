"""The PostgreSQL log reader in tests: a reader on a test's own slot, the items it puts until a
condition holds, their rows and schema events."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from sparkcdc.config.model import SourceConfig
from sparkcdc.core.logitem import LogItem
from sparkcdc.sources.postgres.offset import LsnOffset
from sparkcdc.sources.postgres.settings import PostgresSettings
from sparkcdc.sources.postgres.source import PostgresSource
from sparkcdc.sources.postgres.stream.reader import PgLogReader
from sparkcdc.sources.postgres.throwaway import ThrowawayPostgres
from sparkcdc.sources.postgres.wire.lsn import parse_lsn
from sparkcdc.store.ring import EventStore

Items = list[LogItem]


def source_of(pg: ThrowawayPostgres, database: str, slot: str, **extra: Any) -> SourceConfig:
    settings = PostgresSettings(database=database, slot=slot, publication=slot)
    return SourceConfig(
        pg.host, pg.port, pg.user, pg.password, (r"public\..*",), startup="latest",
        type="postgres", settings=settings, **extra,
    )  # fmt: skip


def read_until(
    reader: PgLogReader, store: EventStore, done: Callable[[Items], bool], timeout: float = 20
) -> Items:
    """The items the reader puts until ``done`` holds for them (the reader keeps running)."""
    items: Items = []
    deadline = time.monotonic() + timeout
    while not done(items):
        assert time.monotonic() < deadline, f"timed out with {rows(items)}"
        if reader.error is not None:
            raise reader.error
        batch = store.get(timeout=0.2)
        if batch is not None:
            items.extend(batch.items)
            store.ack(batch)
    return items


def rows(items: Items) -> list[dict[str, Any]]:
    return [r for i in items if i.batch is not None and not i.is_ddl for r in i.batch.to_pylist()]


def schema_events(items: Items) -> list[dict[str, Any]]:
    return [r for i in items if i.batch is not None and i.is_ddl for r in i.batch.to_pylist()]


def images(r: dict[str, Any]) -> tuple[Any, Any]:
    load = json.loads
    return (None if r["before"] is None else load(r["before"]),
            None if r["after"] is None else load(r["after"]))  # fmt: skip


def opened(
    pg: ThrowawayPostgres, db: str, slot: str, typed: bool = False, item_rows: int = 2048,
    start: LsnOffset | None = None, history: str = "", **extra: Any,
) -> tuple[PgLogReader, EventStore, LsnOffset]:  # fmt: skip
    """A started reader of ``slot`` from ``start`` (default: the WAL's end), its store and
    start; ``history``: its schema history file."""
    source = PostgresSource(source_of(pg, db, slot))
    begin = start or source.startup_offset("latest")
    store = EventStore()
    reader = source.open_reader(begin, store, history, item_rows, typed=typed)
    reader = replace_reader(reader, **extra)
    reader.start()
    return reader, store, begin


def replace_reader(reader: PgLogReader, **extra: Any) -> PgLogReader:
    for name, value in extra.items():
        setattr(reader, name, value)
    return reader


def confirmed_lsn(pg: ThrowawayPostgres, slot: str) -> int:
    [(text,)] = pg.query(
        f"SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = '{slot}'"
    )
    return parse_lsn(text)


def wait_for(check: Callable[[], bool], timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)
