"""``source.heartbeat`` on a PostgreSQL server where nothing at all is written: without it the
reader has hardly a position past its start to report; with it, its heartbeats are WAL of the
captured database that the stream passes, and the reader's progress markers follow them. The
action query runs at each heartbeat; a failing one stops the stream with one sentence."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from sparkcdc.config.model import HeartbeatConfig, SourceConfig
from sparkcdc.core.errors import SourceError
from sparkcdc.sources.postgres.offset import LsnOffset
from sparkcdc.sources.postgres.settings import PostgresSettings
from sparkcdc.sources.postgres.source import PostgresSource
from sparkcdc.sources.postgres.stream.reader import PgLogReader
from sparkcdc.sources.postgres.throwaway import ThrowawayPostgres, throwaway_postgres
from sparkcdc.store.ring import EventStore

pytestmark = pytest.mark.postgres


@pytest.fixture(scope="module")
def quiet() -> Iterator[ThrowawayPostgres]:
    """A server of this module's own, so no other test writes WAL meanwhile."""
    with throwaway_postgres() as server:
        server.execute(
            "CREATE TABLE t (id int PRIMARY KEY)",
            "CREATE TABLE beats (n serial PRIMARY KEY, ts timestamptz DEFAULT clock_timestamp())",
        )
        yield server


def stream(
    server: ThrowawayPostgres, slot: str, heartbeat: HeartbeatConfig, seconds: float
) -> tuple[int, PgLogReader]:
    """How many positions past its start a reader's progress markers reached in ``seconds``
    (or until its error closed the store), and the reader."""
    config = SourceConfig(
        server.host, server.port, server.user, server.password, (r"public\.t",),
        startup="latest", type="postgres", settings=PostgresSettings(slot=slot, publication=slot),
        heartbeat=heartbeat,
    )  # fmt: skip
    source = PostgresSource(config)
    start = source.startup_offset("latest")
    store = EventStore()
    reader = source.open_reader(start, store, "", 64)
    assert isinstance(reader, PgLogReader)
    reader.start()
    seen: set[int] = set()
    deadline = time.monotonic() + seconds
    try:
        while time.monotonic() < deadline and reader.error is None:
            try:
                batch = store.get(timeout=0.2)
            except SourceError:
                break  # closed with the reader's error
            if batch is None:
                continue
            for item in batch.items:
                assert item.batch is None or item.is_ddl  # no rows: nothing was written
                assert isinstance(item.after, LsnOffset)
                seen.add(item.after.lsn)
            store.ack(batch)
    finally:
        reader.stop()
        server.execute(f"SELECT pg_drop_replication_slot('{slot}')")
    return len({lsn for lsn in seen if lsn > start.lsn}), reader


def test_heartbeats_give_a_quiet_slot_positions_to_follow(quiet: ThrowawayPostgres) -> None:
    # the server may log one snapshot of its running transactions meanwhile, no more
    assert stream(quiet, "without_heartbeat", HeartbeatConfig(), 5.0)[0] <= 1
    markers, reader = stream(quiet, "with_heartbeat", HeartbeatConfig(0.5), 5.0)
    assert markers >= 3 and reader.stats().heartbeats >= 4


def test_the_action_query_runs_at_each_heartbeat(quiet: ThrowawayPostgres) -> None:
    before = quiet.query("SELECT count(*) FROM beats")[0][0]
    beat = HeartbeatConfig(0.5, "INSERT INTO beats DEFAULT VALUES")
    _, reader = stream(quiet, "with_action", beat, 3.0)
    assert reader.error is None, reader.error
    stamps = [ts for (ts,) in quiet.query(f"SELECT ts FROM beats WHERE n > {before} ORDER BY n")]
    assert 4 <= len(stamps) <= 6, stamps  # 3 s at 0.5 s
    assert len(stamps) - 1 <= reader.stats().heartbeats <= len(stamps)
    gaps = [(b - a).total_seconds() for a, b in zip(stamps, stamps[1:], strict=False)]
    assert min(gaps) >= 0.4, gaps


def test_a_failing_action_query_stops_the_stream_naming_it(quiet: ThrowawayPostgres) -> None:
    beat = HeartbeatConfig(0.3, "INSERT INTO missing VALUES (1)")
    _, reader = stream(quiet, "with_failing_action", beat, 5.0)
    error = reader.error
    assert isinstance(error, SourceError) and error.fields["key"] == "source.heartbeat.action_query"
    message = str(error)
    assert message == (
        f"source.heartbeat.action_query failed on {quiet.host}:{quiet.port} (relation "
        '"missing" does not exist); fix the statement or the privileges it needs, or leave it out.'
    )
