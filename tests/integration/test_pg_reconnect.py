"""The replication connection is lost while the log reader streams (fault ``pg-walsender-kill``:
its walsender terminated; a clean restart of the server): the reader reconnects within
``source.reconnect_timeout`` and resumes at the last position it put, so every change arrives
exactly once; past the limit it stops with one sentence naming the server and the setting."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator

import pytest

from sparkcdc.config.model import SourceConfig
from sparkcdc.core.errors import ConnectionFailed, SourceError
from sparkcdc.sources.postgres.settings import PostgresSettings
from sparkcdc.sources.postgres.source import PostgresSource
from sparkcdc.sources.postgres.stream.reader import PgLogReader
from sparkcdc.sources.postgres.throwaway import ThrowawayPostgres, throwaway_postgres
from sparkcdc.store.ring import EventStore

pytestmark = pytest.mark.postgres

TERMINATE = "SELECT pg_terminate_backend(pid) FROM pg_stat_replication"


@pytest.fixture
def own_server() -> Iterator[ThrowawayPostgres]:
    """A server of this test's own: stopping it must not disturb other tests."""
    with throwaway_postgres() as server:
        server.execute("CREATE TABLE t (id int PRIMARY KEY, v int)")
        yield server


def open_reader(server: ThrowawayPostgres, timeout: float = 60.0) -> tuple[PgLogReader, EventStore]:
    config = SourceConfig(
        server.host, server.port, server.user, server.password, (r"public\.t",),
        startup="latest", type="postgres", reconnect_timeout=timeout,
        settings=PostgresSettings(slot="reconnect", publication="reconnect"),
    )  # fmt: skip
    source = PostgresSource(config)
    start = source.startup_offset("latest")
    store = EventStore()
    reader = source.open_reader(start, store, "", 64)
    assert isinstance(reader, PgLogReader)
    reader.start()
    return reader, store


def collect(
    reader: PgLogReader, store: EventStore, until: Callable[[list[int]], bool]
) -> list[int]:
    """The ids of the changes the reader puts, acknowledged batch by batch, until ``until``."""
    ids: list[int] = []
    deadline = time.monotonic() + 60
    while not until(ids) and time.monotonic() < deadline:
        batch = store.get(timeout=0.2)
        if batch is None:
            continue
        for item in batch.items:
            if item.batch is not None and not item.is_ddl:
                ids.extend(json.loads(k)[0] for k in item.batch.column("key").to_pylist())
        store.ack(batch)
        reader.ack(batch.items[-1].after)
    return ids


def insert(server: ThrowawayPostgres, ids: range) -> None:
    for i in ids:
        server.execute(f"INSERT INTO t VALUES ({i}, {i})")


def lost_mid_stream(server: ThrowawayPostgres, lose: Callable[[], None]) -> None:
    reader, store = open_reader(server)
    try:
        insert(server, range(0, 50))
        first = collect(reader, store, lambda ids: len(ids) >= 50)
        lose()
        insert(server, range(50, 100))
        second = collect(reader, store, lambda ids: len(ids) >= 50)
        time.sleep(1.0)  # a late duplicate would arrive now
        second += collect(reader, store, lambda ids: True)
        assert reader.error is None, reader.error
        assert sorted(first + second) == list(range(100))  # each once
        assert reader.stats().reconnects >= 1
    finally:
        reader.stop()
        server.execute("SELECT pg_drop_replication_slot('reconnect')")


def test_pg_walsender_terminated_mid_stream_reconnects(own_server: ThrowawayPostgres) -> None:
    def terminate() -> None:
        assert own_server.query(TERMINATE) == [(True,)]

    lost_mid_stream(own_server, terminate)


def test_pg_clean_restart_mid_stream_reconnects(own_server: ThrowawayPostgres) -> None:
    lost_mid_stream(own_server, own_server.restart)


def test_pg_walsender_gone_for_good_is_one_sentence(own_server: ThrowawayPostgres) -> None:
    reader, store = open_reader(own_server, timeout=2.0)
    try:
        collect(reader, store, lambda ids: reader.stats().connected)
        own_server.stop(remove=False)
        reader.join(30)
        error = reader.error
        assert isinstance(error, ConnectionFailed), error
        assert isinstance(error, SourceError) and "\n" not in str(error)
        assert f"{own_server.host}:{own_server.port}" in str(error)
        assert "source.reconnect_timeout" in str(error)
    finally:
        reader.stop()
