"""``source.heartbeat_interval`` on a server where nothing at all is written: without it the
reader has hardly a position past its start to report; with it, its heartbeats are WAL of the
captured database that the stream passes, and the reader's progress markers follow them."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from sparkcdc.config.model import SourceConfig
from sparkcdc.config.values import ConfigError
from sparkcdc.sources.postgres.offset import LsnOffset
from sparkcdc.sources.postgres.settings import PostgresSettings
from sparkcdc.sources.postgres.source import PostgresSource
from sparkcdc.sources.postgres.throwaway import ThrowawayPostgres, throwaway_postgres
from sparkcdc.store.ring import EventStore

pytestmark = pytest.mark.postgres


@pytest.fixture(scope="module")
def quiet() -> Iterator[ThrowawayPostgres]:
    """A server of this module's own, so no other test writes WAL meanwhile."""
    with throwaway_postgres() as server:
        server.execute("CREATE TABLE t (id int PRIMARY KEY)")
        yield server


def markers(server: ThrowawayPostgres, slot: str, every: float, seconds: float) -> int:
    """How many positions past its start a reader's progress markers reached in ``seconds``."""
    settings = PostgresSettings(slot=slot, publication=slot, heartbeat_interval=every)
    config = SourceConfig(
        server.host, server.port, server.user, server.password, (r"public\.t",),
        startup="latest", type="postgres", settings=settings,
    )  # fmt: skip
    source = PostgresSource(config)
    start = source.startup_offset("latest")
    store = EventStore()
    reader = source.open_reader(start, store, "", 64)
    reader.start()
    seen: set[int] = set()
    deadline = time.monotonic() + seconds
    try:
        while time.monotonic() < deadline:
            assert reader.error is None, reader.error
            batch = store.get(timeout=0.2)
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
    return len({lsn for lsn in seen if lsn > start.lsn})


def test_heartbeats_give_a_quiet_slot_positions_to_follow(quiet: ThrowawayPostgres) -> None:
    # the server may log one snapshot of its running transactions meanwhile, no more
    assert markers(quiet, "without_heartbeat", 0.0, 5.0) <= 1
    assert markers(quiet, "with_heartbeat", 0.5, 5.0) >= 3


def test_the_heartbeat_interval_is_a_duration() -> None:
    given = {"heartbeat_interval": "30s"}.get
    assert PostgresSettings.from_values(given, lambda k: k).heartbeat_interval == 30.0
    with pytest.raises(ConfigError, match="heartbeat_interval"):
        PostgresSettings.from_values({"heartbeat_interval": "often"}.get, lambda k: k)
