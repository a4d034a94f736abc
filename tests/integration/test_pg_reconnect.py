"""The replication connection is lost while the log reader streams (fault ``pg-walsender-kill``:
its walsender terminated; a clean restart of the server): the reader reconnects within
``source.reconnect_timeout`` and resumes at the last position it put, so every change arrives
exactly once; past the limit it stops with one sentence naming the server and the setting.

The reader's catalog connection, which judges each Relation message, is lost too (fault
``db-restart``, or its backend terminated): through a loopback proxy the server's end arrives
as a reset (RST), as through a firewall or a load balancer, which libpq reports on a connection
it still calls open. The catalog is reopened, and a schema change after the loss arrives once,
as does every row."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterator

import pytest

from sparkcdc.config.model import SourceConfig
from sparkcdc.core.errors import ConnectionFailed, SourceError
from sparkcdc.sources.postgres.settings import PostgresSettings
from sparkcdc.sources.postgres.source import PostgresSource
from sparkcdc.sources.postgres.stream.reader import PgLogReader
from sparkcdc.sources.postgres.throwaway import ThrowawayPostgres, throwaway_postgres
from sparkcdc.sources.throwaway import ThrowawayServerError
from sparkcdc.store.ring import EventStore
from tests.faults.proxy import TcpProxy

pytestmark = pytest.mark.postgres

TERMINATE = "SELECT pg_terminate_backend(pid) FROM pg_stat_replication"
TERMINATE_CATALOG = (  # the reader's catalog connection (no heartbeat: its only other one)
    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
    " WHERE application_name = 'sparkcdc' AND backend_type = 'client backend'"
)


@pytest.fixture
def own_server() -> Iterator[ThrowawayPostgres]:
    """A server of this test's own: stopping it must not disturb other tests."""
    with throwaway_postgres() as server:
        server.execute("CREATE TABLE t (id int PRIMARY KEY, v int)")
        yield server


@pytest.fixture
def proxy(own_server: ThrowawayPostgres) -> Iterator[TcpProxy]:
    """A loopback proxy to the server: what the server closes arrives reset."""
    through = TcpProxy(own_server.port)
    yield through
    through.close()


def open_reader(
    server: ThrowawayPostgres, timeout: float = 60.0, port: int | None = None,
    store: EventStore | None = None,
) -> tuple[PgLogReader, EventStore]:  # fmt: skip
    config = SourceConfig(
        server.host, port or server.port, server.user, server.password, (r"public\.t",),
        startup="latest", type="postgres", reconnect_timeout=timeout,
        settings=PostgresSettings(slot="reconnect", publication="reconnect"),
    )  # fmt: skip
    source = PostgresSource(config)
    start = source.startup_offset("latest")
    store = store or EventStore()
    reader = source.open_reader(start, store, "", 64)
    assert isinstance(reader, PgLogReader)
    reader.start()
    return reader, store


def collect(
    reader: PgLogReader,
    store: EventStore,
    until: Callable[[list[int]], bool],
    kinds: list[str] | None = None,
) -> list[int]:
    """The ids of the changes the reader puts, acknowledged batch by batch, until ``until``
    (the kinds of its schema events into ``kinds``)."""
    ids: list[int] = []
    deadline = time.monotonic() + 60
    while not until(ids) and time.monotonic() < deadline and reader.error is None:
        batch = store.get(timeout=0.2)
        if batch is None:
            continue
        for item in batch.items:
            if item.batch is not None and item.is_ddl and kinds is not None:
                kinds += [json.loads(a)["kind"] for a in item.batch.column("after").to_pylist()]
            elif item.batch is not None and not item.is_ddl:
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


def schema_change_after_loss(
    server: ThrowawayPostgres, proxy: TcpProxy, lose: Callable[[], None]
) -> PgLogReader:
    """A reader through ``proxy`` reads rows; ``lose`` breaks connections; a column is added
    and more rows written: each row arrives once, and the schema change once."""
    reader, store = open_reader(server, port=proxy.port)
    kinds: list[str] = []
    try:
        insert(server, range(0, 50))
        first = collect(reader, store, lambda ids: len(ids) >= 50, kinds)
        lose()
        server.execute("ALTER TABLE t ADD COLUMN w int")  # a Relation message before the rows
        insert(server, range(50, 100))
        second = collect(reader, store, lambda ids: len(ids) >= 50, kinds)
        time.sleep(1.0)  # a late duplicate would arrive now
        second += collect(reader, store, lambda ids: True, kinds)
        assert reader.error is None, reader.error
        assert sorted(first + second) == list(range(100))  # each once
        assert kinds.count("alter") == 1, kinds
        return reader
    finally:
        reader.stop()
        server.execute("SELECT pg_drop_replication_slot('reconnect')")


def test_pg_restart_mid_stream_reopens_the_catalog(
    own_server: ThrowawayPostgres, proxy: TcpProxy
) -> None:
    reader = schema_change_after_loss(own_server, proxy, own_server.restart)
    assert reader.stats().reconnects >= 1


def test_pg_catalog_backend_terminated_mid_stream_is_reopened(
    own_server: ThrowawayPostgres, proxy: TcpProxy
) -> None:
    def terminate() -> None:
        assert own_server.query(TERMINATE_CATALOG) == [(True,)]

    schema_change_after_loss(own_server, proxy, terminate)


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


ROWS = 400_000  # more than the socket buffers hold: much is still on the server's side


def test_db_kill9_in_a_big_transaction_delivered_in_pieces_resumes_without_duplicates(
    own_server: ThrowawayPostgres, caplog: pytest.LogCaptureFixture
) -> None:
    """The fault campaign's ``db-kill9`` during ``big-txn`` (seed 6007): one transaction larger
    than the store, delivered in pieces, its server gone while the reader waits for room. The
    reader resumes at the last piece it put and drops the rows before it, but the rows it had
    collected after that piece from the lost connection were kept, and the resumed stream's
    first Relation message handed them on as rows of the transaction: its resume counter ran
    ahead, and as many rows arrived twice."""
    caplog.set_level(logging.INFO, logger="sparkcdc.reader")
    reader, store = open_reader(own_server, store=EventStore(max_bytes=64 * 1024))
    try:
        own_server.execute(f"INSERT INTO t SELECT i, i FROM generate_series(0, {ROWS - 1}) i")
        first = collect(reader, store, lambda ids: len(ids) >= 640)
        deadline = time.monotonic() + 30
        while not store.full:  # until the reader waits for room, holding what it received
            assert time.monotonic() < deadline, "the store never filled"
            time.sleep(0.05)
        own_server.kill()  # kill -9: what the walsender had not sent is gone with it
        started_by = time.monotonic() + 30
        while True:  # a backend of the killed server may hold its shared memory a moment
            try:
                own_server.restart()
                break
            except ThrowawayServerError:
                assert time.monotonic() < started_by, "the server did not start again"
                time.sleep(0.2)
        rest = collect(reader, store, lambda ids: len(first) + len(ids) >= ROWS)
        time.sleep(1.0)  # a late duplicate would arrive now
        rest += collect(reader, store, lambda ids: True)
        assert reader.error is None, reader.error
        resumed = [r.getMessage() for r in caplog.records if "streaming slot" in r.getMessage()]
        assert len(resumed) == 2 and "changes" in resumed[1], resumed  # inside the transaction
        both = first + rest
        assert len(both) - len(set(both)) == 0, "rows arrived twice"
        assert sorted(both) == list(range(ROWS))
        assert reader.stats().reconnects >= 1
    finally:
        reader.stop()
        own_server.execute("SELECT pg_drop_replication_slot('reconnect')")
