"""``source.heartbeat`` in the binlog reader against a real MariaDB server: the action query
runs at the interval on a connection of its own and its transactions move the reader's
position; a failing one stops the stream with one sentence naming it; on a server where nothing
is written the heartbeat follows a new binlog file, which the reader without it does not."""

from __future__ import annotations

import itertools
import time
from pathlib import Path

import pytest

from sparkcdc.config.model import HeartbeatConfig, SourceConfig
from sparkcdc.core.errors import SourceError
from sparkcdc.core.logitem import LogItem
from sparkcdc.sources.mysql.binlog.reader import LogReader
from sparkcdc.sources.mysql.offset import BinlogOffset
from sparkcdc.sources.mysql.schema.history import SchemaHistory
from sparkcdc.sources.mysql.throwaway import ThrowawayMariaDB
from sparkcdc.store.ring import EventStore

pytestmark = pytest.mark.mariadb

_server_ids = itertools.count(7600)


def log_end(server: ThrowawayMariaDB) -> BinlogOffset:
    file, pos, *_ = server.query("SHOW MASTER STATUS")[0]
    gtid = str(server.query("SELECT @@gtid_binlog_pos")[0][0])
    return BinlogOffset(str(file), int(pos), gtid)


def source(server: ThrowawayMariaDB, table: str, heartbeat: HeartbeatConfig) -> SourceConfig:
    return server.source_config(table, server_id=next(_server_ids), heartbeat=heartbeat)


def read(reader: LogReader, store: EventStore, seconds: float) -> list[LogItem]:
    """Every item the reader puts within ``seconds`` (acknowledged at once)."""
    items: list[LogItem] = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not store.closed:
        try:
            batch = store.get(timeout=0.1)
        except SourceError:
            break  # the store was closed with the reader's error
        if batch is not None:
            items.extend(batch.items)
            store.ack(batch)
    return items


def open_reader(server: ThrowawayMariaDB, config: SourceConfig, tmp: Path) -> LogReader:
    store = EventStore(max_bytes=8 << 20, max_items=1024)
    reader = LogReader(config, log_end(server), store, SchemaHistory(tmp / "history.jsonl"))
    reader.start()
    return reader


def test_the_action_query_runs_at_the_interval_and_moves_the_position(
    mariadb: ThrowawayMariaDB, db: str, tmp_path: Path
) -> None:
    mariadb.execute(
        f"CREATE TABLE `{db}`.quiet (id INT PRIMARY KEY)",
        f"CREATE TABLE `{db}`.beat (n INT AUTO_INCREMENT PRIMARY KEY, ts DATETIME(6))",
    )
    query = f"INSERT INTO `{db}`.beat (ts) VALUES (NOW(6))"
    reader = open_reader(mariadb, source(mariadb, rf"{db}\.quiet", HeartbeatConfig(0.4, query)),
                         tmp_path)  # fmt: skip
    try:
        start = reader.start_offset
        items = read(reader, reader.store, 3.0)
        assert reader.error is None, reader.error
        beats = reader.stats().heartbeats
    finally:
        reader.stop()
    stamps = [ts for (ts,) in mariadb.query(f"SELECT ts FROM `{db}`.beat ORDER BY n")]
    assert 4 <= len(stamps) <= 8, stamps  # 3 s at 0.4 s
    assert len(stamps) - 1 <= beats <= len(stamps)  # the last may have run after the count
    gaps = [(b - a).total_seconds() for a, b in itertools.pairwise(stamps)]
    assert min(gaps) >= 0.3, gaps  # once an interval, not whenever the stream is idle
    # the action query's transactions are traffic of a table not captured: progress markers
    # past the start, no change rows
    markers = [it.after for it in items if it.batch is None]
    assert len({m for m in markers if m > start}) >= 4
    assert all(it.is_ddl for it in items if it.batch is not None)


def test_a_failing_action_query_stops_the_stream_naming_it(
    mariadb: ThrowawayMariaDB, db: str, tmp_path: Path
) -> None:
    mariadb.execute(f"CREATE TABLE `{db}`.quiet (id INT PRIMARY KEY)")
    query = f"INSERT INTO `{db}`.missing VALUES (1)"
    reader = open_reader(mariadb, source(mariadb, rf"{db}\.quiet", HeartbeatConfig(0.3, query)),
                         tmp_path)  # fmt: skip
    try:
        read(reader, reader.store, 5.0)  # ends once the store is closed with the error
        error = reader.error
    finally:
        reader.stop()
    assert isinstance(error, SourceError) and reader.store.closed
    message = str(error)
    assert message.startswith(
        f"source.heartbeat.action_query failed on 127.0.0.1:{mariadb.port} (error 1146: "
        f"Table '{db}.missing' doesn't exist); fix the statement"
    ), message
    assert message.endswith(".") and ". " not in message  # one sentence
    assert error.fields["key"] == "source.heartbeat.action_query"


def test_on_a_quiet_server_the_heartbeat_follows_a_new_binlog_file(
    mariadb: ThrowawayMariaDB, db: str, tmp_path: Path
) -> None:
    mariadb.execute(f"CREATE TABLE `{db}`.quiet (id INT PRIMARY KEY)")
    table = rf"{db}\.quiet"
    with_beats = open_reader(mariadb, source(mariadb, table, HeartbeatConfig(0.3)), tmp_path)
    without = open_reader(mariadb, source(mariadb, table, HeartbeatConfig()), tmp_path / "b")
    try:
        read(with_beats, with_beats.store, 1.0)
        read(without, without.store, 0.1)
        mariadb.execute("FLUSH BINARY LOGS")
        new_file = log_end(mariadb).file
        found = read(with_beats, with_beats.store, 2.0) + read(without, without.store, 0.5)
        assert with_beats.error is None and without.error is None
    finally:
        with_beats.stop()
        without.stop()
    mine = [it.after for it in found if it.batch is None and isinstance(it.after, BinlogOffset)]
    assert any(m.file == new_file for m in mine), mine
    positions = (with_beats.stats().position, without.stats().position)
    assert isinstance(positions[0], BinlogOffset) and positions[0].file == new_file
    assert isinstance(positions[1], BinlogOffset) and positions[1].file != new_file
