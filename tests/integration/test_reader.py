"""The log reader and start modes against a real MariaDB server and a real event store: ops,
offsets and orders of multi-row transactions, split transactions and the resume counter, DDL in
the stream, progress markers, restarts, every start mode, and a killed replication connection."""

from __future__ import annotations

import contextlib
import itertools
import json
import logging
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from sparkcdc.config.model import SourceConfig
from sparkcdc.core.convert import arrow_schema, decode_images
from sparkcdc.core.errors import ConfigError, ConnectionFailed, LogPositionGone
from sparkcdc.core.images import images_of
from sparkcdc.core.logitem import LogItem
from sparkcdc.core.schema import TableSchema
from sparkcdc.sources.mysql.binlog.reader import LogReader
from sparkcdc.sources.mysql.offset import BinlogOffset
from sparkcdc.sources.mysql.schema.history import SchemaHistory
from sparkcdc.sources.mysql.server.catalog import MySQLCatalog
from sparkcdc.sources.mysql.server.startup import resolve_startup
from sparkcdc.sources.mysql.throwaway import ThrowawayMariaDB
from sparkcdc.spark.stream.delivery import DeliveryQueue
from sparkcdc.store.ring import EventStore
from tests.cases.binlog import compressed_binlog

pytestmark = pytest.mark.mariadb

_server_ids = itertools.count(7100)


def source_for(server: ThrowawayMariaDB, pattern: str) -> SourceConfig:
    return server.source_config(pattern, server_id=next(_server_ids))


def latest(server: ThrowawayMariaDB) -> BinlogOffset:
    with catalog_of(server) as cat:
        return cat.current_offset()


@contextlib.contextmanager
def catalog_of(server: ThrowawayMariaDB) -> Iterator[MySQLCatalog]:
    cat = MySQLCatalog(server.host, server.port, server.user, server.password)
    try:
        yield cat
    finally:
        cat.close()


class Harness:
    """A reader streaming into a real store, and a consumer that gets and acks everything."""

    def __init__(
        self,
        source: SourceConfig,
        start: BinlogOffset,
        history: Path,
        item_rows: int = 2048,
        max_items: int = 4096,
        **kwargs: Any,
    ) -> None:
        self.store = EventStore(max_bytes=64 << 20, max_items=max_items)
        self.reader = LogReader(
            source, start, self.store, SchemaHistory(history), item_rows=item_rows, **kwargs
        )
        self.items: list[LogItem] = []
        self.reader.start()
        # schemas are read from the catalog when the reader starts: let it do so before the
        # test changes any (a DDL between the start offset and that read is not seen)
        self.until(lambda items: bool(items))

    def until(self, done: Callable[[list[LogItem]], bool], timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while not done(self.items):
            assert time.monotonic() < deadline, f"timed out; got {len(self.items)} items"
            assert self.reader.error is None, self.reader.error
            batch = self.store.get(timeout=0.2)
            if batch is not None:
                self.items.extend(batch.items)
                self.store.ack(batch)

    def until_rows(self, n: int, timeout: float = 30.0) -> list[dict[str, Any]]:
        self.until(lambda items: len(change_rows(items)) >= n, timeout)
        return change_rows(self.items)

    def settle(self, seconds: float = 1.5) -> None:
        """Collect whatever arrives within ``seconds`` more."""
        end = time.monotonic() + seconds
        self.until(lambda _: time.monotonic() >= end, seconds + 5)

    def close(self) -> None:
        self.reader.stop()


@pytest.fixture
def harnesses() -> Iterator[list[Harness]]:
    made: list[Harness] = []
    yield made
    for h in made:
        h.close()


def change_rows(items: list[LogItem]) -> list[dict[str, Any]]:
    return [
        r for it in items if it.batch is not None and not it.is_ddl for r in it.batch.to_pylist()
    ]


def ddl_items(items: list[LogItem]) -> list[LogItem]:
    return [it for it in items if it.is_ddl]


def test_multi_row_transactions_ops_offsets_orders(
    mariadb: ThrowawayMariaDB, db: str, tmp_path: Path, harnesses: list[Harness]
) -> None:
    mariadb.execute(
        f"CREATE TABLE `{db}`.t (id INT PRIMARY KEY, v VARCHAR(20))",
        f"CREATE TABLE `{db}`.u (id INT PRIMARY KEY, n INT)",
    )
    start = latest(mariadb)
    h = Harness(source_for(mariadb, rf"{db}\..*"), start, tmp_path / "h.jsonl")
    harnesses.append(h)
    with contextlib.closing(mariadb.connect(db)) as conn, conn.cursor() as cur:
        cur.execute("BEGIN")
        cur.execute("INSERT INTO t VALUES (1,'a'),(2,'b'),(3,'c')")
        cur.execute("INSERT INTO u VALUES (1, 10)")
        cur.execute("UPDATE t SET v='B' WHERE id=2")
        cur.execute("DELETE FROM t WHERE id=3")
        cur.execute("COMMIT")
        cur.execute("UPDATE u SET n = n + 1")
    end = latest(mariadb)
    rows = h.until_rows(7)
    h.until(lambda items: bool(items) and items[-1].after == end)

    announce = h.items[0]
    assert announce.is_ddl and announce.after == start
    assert {(r["table"], r["op"], r["ddl"]) for r in announce.batch.to_pylist()} == {
        ("t", "s", None),
        ("u", "s", None),
    }
    first, second = rows[:6], rows[6:]
    assert [(r["table"], r["op"]) for r in first] == [
        ("t", "c"),
        ("t", "c"),
        ("t", "c"),
        ("u", "c"),
        ("t", "u"),
        ("t", "d"),
    ]
    assert [r["transaction"]["total_order"] for r in first] == [1, 2, 3, 4, 5, 6]
    assert [r["transaction"]["data_collection_order"] for r in first] == [1, 2, 3, 1, 4, 5]
    assert [r["source"]["row"] for r in first] == [0, 1, 2, 0, 0, 0]
    assert len({r["source"]["gtid"] for r in first}) == 1
    assert first[0]["transaction"]["id"] == first[0]["source"]["gtid"]
    assert json.loads(first[4]["before"]) == {"id": 2, "v": "b"}
    assert json.loads(first[4]["after"]) == {"id": 2, "v": "B"}
    assert json.loads(first[5]["key"]) == [3] and first[5]["after"] is None
    assert first[0]["source"]["ts_ms"] > 0 and first[0]["source"]["snapshot"] is False
    positions = [r["source"]["pos"] for r in first]
    assert positions == sorted(positions) and positions[0] > start.pos
    assert second[0]["op"] == "u" and second[0]["transaction"]["total_order"] == 1
    gtid_seq = int(second[0]["source"]["gtid"].rsplit("-", 1)[1])
    assert gtid_seq == int(first[0]["source"]["gtid"].rsplit("-", 1)[1]) + 1
    # every item ends at a boundary; the last one is the log's end, gtid included
    change_items = [it for it in h.items if it.batch is not None and not it.is_ddl]
    assert all(it.after.at_boundary for it in change_items)
    assert change_items[-1].after == end and change_items[-1].after.gtid == end.gtid
    assert h.reader.stats().rows == 7


def test_big_transaction_is_split_and_resumes_at_inner_offset(
    mariadb: ThrowawayMariaDB, db: str, tmp_path: Path, harnesses: list[Harness]
) -> None:
    mariadb.execute(f"CREATE TABLE `{db}`.t (id INT PRIMARY KEY, v INT)")
    start = latest(mariadb)
    history = tmp_path / "h.jsonl"
    source = source_for(mariadb, rf"{db}\.t")
    h = Harness(source, start, history, item_rows=10)
    harnesses.append(h)
    with contextlib.closing(mariadb.connect(db)) as conn, conn.cursor() as cur:
        cur.execute("BEGIN")
        cur.execute("INSERT INTO t VALUES " + ",".join(f"({i},{i})" for i in range(1, 21)))
        cur.execute("INSERT INTO t VALUES " + ",".join(f"({i},{i})" for i in range(21, 36)))
        cur.execute("COMMIT")
    rows = h.until_rows(35)
    items = [it for it in h.items if it.batch is not None and not it.is_ddl]
    assert [it.rows for it in items] == [10, 10, 10, 5]
    txn_start = items[0].after
    assert [it.after.skip for it in items] == [10, 20, 30, 0]
    assert all((it.after.file, it.after.pos) == (txn_start.file, txn_start.pos) for it in items[:3])
    assert items[3].after == latest(mariadb)
    assert [json.loads(r["after"])["id"] for r in rows] == list(range(1, 36))
    assert [r["transaction"]["total_order"] for r in rows] == list(range(1, 36))

    again = Harness(source, items[1].after, history, item_rows=10)  # after 20 rows
    harnesses.append(again)
    rest = again.until_rows(15)
    again.settle(1.0)
    rest = change_rows(again.items)
    assert [json.loads(r["after"])["id"] for r in rest] == list(range(21, 36))
    assert [r["transaction"]["total_order"] for r in rest] == list(range(21, 36))
    assert [r["source"]["row"] for r in rest] == [r["source"]["row"] for r in rows[20:]]
    resumed = [it for it in again.items if it.batch is not None and not it.is_ddl]
    assert [it.after.skip for it in resumed] == [30, 0]


@pytest.mark.parametrize("compressed", [False, True], ids=["plain", "log_bin_compress"])
def test_ddl_mid_stream_comes_in_order_and_later_rows_follow_it(
    mariadb: ThrowawayMariaDB, db: str, tmp_path: Path, harnesses: list[Harness], compressed: bool
) -> None:
    mariadb.execute(f"CREATE TABLE `{db}`.t (id INT PRIMARY KEY, v INT)")
    start = latest(mariadb)
    history = SchemaHistory(tmp_path / "h.jsonl")
    h = Harness(source_for(mariadb, rf"{db}\..*"), start, tmp_path / "h.jsonl")
    harnesses.append(h)
    with compressed_binlog(mariadb, compressed):
        mariadb.execute(
            "INSERT INTO t VALUES (1, 1)",
            "ALTER TABLE t ADD COLUMN note VARCHAR(10) DEFAULT 'x'",
            "INSERT INTO t VALUES (2, 2, 'two')",
            "CREATE TABLE born (id INT PRIMARY KEY)",
            "INSERT INTO born VALUES (7)",
            "RENAME TABLE born TO grown",
            "TRUNCATE TABLE grown",
            "DROP TABLE grown",
            database=db,
        )
    h.until(lambda items: len(ddl_items(items)) >= 6)
    kinds = [
        ("ddl" if it.is_ddl else "rows" if it.batch is not None else "marker") for it in h.items
    ]
    kinds = [k for k in kinds if k != "marker"]
    assert kinds == ["ddl", "rows", "ddl", "rows", "ddl", "rows", "ddl", "ddl", "ddl"]
    changes = [
        (r["table"], json.loads(r["after"]))
        for it in ddl_items(h.items)
        for r in it.batch.to_pylist()
    ]
    again = {"resnapshot": f"the table was renamed from {db}.born"}
    assert changes == [
        ("t", {"kind": "announce"}),
        ("t", {"kind": "alter", "existing": {"fill": {"note": "x"}}}),
        ("born", {"kind": "create"}),
        ("grown", {"kind": "rename", "from": f"{db}.born", "existing": again}),
        ("grown", {"kind": "truncate"}),
        ("grown", {"kind": "drop"}),
    ]
    alter = ddl_items(h.items)[1]
    (row,) = alter.batch.to_pylist()
    assert row["op"] == "s" and row["table"] == "t" and row["ddl"].startswith("ALTER TABLE")
    new_schema = json.loads(row["schema"])
    assert [c["name"] for c in new_schema["columns"]] == ["id", "v", "note"]
    assert [c["name"] for c in json.loads(row["before"])["columns"]] == ["id", "v"]
    rows = change_rows(h.items)
    assert json.loads(rows[0]["after"]) == {"id": 1, "v": 1}
    assert json.loads(rows[1]["after"]) == {"id": 2, "v": 2, "note": "two"}
    assert rows[1]["schema_id"] == row["schema_id"] != rows[0]["schema_id"]
    created = ddl_items(h.items)[2].batch.to_pylist()[0]
    assert created["table"] == "born" and created["before"] is None
    assert rows[2]["table"] == "born" and json.loads(rows[2]["after"]) == {"id": 7}
    # the history knows the schema in force at each point
    assert alter.after.at_boundary
    at_alter = history.schemas_at(alter.after)
    assert at_alter is not None and len(at_alter[(db, "t")].columns) == 3
    before_alter = history.schemas_at(start)
    assert before_alter is not None and len(before_alter[(db, "t")].columns) == 2
    dropped = ddl_items(h.items)[-1]
    assert dropped.batch.to_pylist()[0]["schema"] is None
    assert set(history.schemas_at(dropped.after) or {}) == {(db, "t")}


def test_an_alter_before_the_schemas_were_read_makes_its_table_read_again(
    mariadb: ThrowawayMariaDB, db: str, tmp_path: Path, harnesses: list[Harness]
) -> None:
    """A stream starting before an ALTER reads today's schema from the catalog, which holds
    the ALTER already: the ALTER's change asks for the table to be read again."""
    mariadb.execute(f"CREATE TABLE `{db}`.t (id INT PRIMARY KEY, m DECIMAL(10,3))")
    start = latest(mariadb)
    mariadb.execute("ALTER TABLE t MODIFY m DECIMAL(10,1)", "ALTER TABLE t ADD x INT DEFAULT 1",
                    database=db)  # fmt: skip
    h = Harness(source_for(mariadb, rf"{db}\.t"), start, tmp_path / "h.jsonl")
    harnesses.append(h)
    h.until(lambda items: len(ddl_items(items)) >= 3)  # both read: an ALTER after is followed
    mariadb.execute("ALTER TABLE t ADD y INT DEFAULT 2", database=db)
    h.until(lambda items: len(ddl_items(items)) >= 4)
    changes = [json.loads(r["after"]) for it in ddl_items(h.items) for r in it.batch.to_pylist()]
    late = "the table's schema was read from the catalog after this statement ran"
    assert [c["kind"] for c in changes] == ["announce", "alter", "unknown", "alter"]
    assert [late in c.get("existing", {}).get("resnapshot", "") for c in changes] == [
        False, True, True, False]  # fmt: skip
    assert changes[3]["existing"] == {"fill": {"y": 2}}


def test_purged_start_closes_the_store_with_the_error(
    mariadb: ThrowawayMariaDB, db: str, tmp_path: Path
) -> None:
    mariadb.execute(f"CREATE TABLE `{db}`.t (id INT PRIMARY KEY)")
    store = EventStore()
    reader = LogReader(
        source_for(mariadb, rf"{db}\.t"),
        BinlogOffset("mysql-bin.999999", 4),
        store,
        SchemaHistory(tmp_path / "h.jsonl"),
    )
    reader.start()
    reader.join(20)
    assert not reader.running
    assert isinstance(reader.error, LogPositionGone) and "mysql-bin.999999" in str(reader.error)
    with pytest.raises(LogPositionGone):
        while store.get(timeout=1) is not None:
            pass


def test_stop_is_prompt_while_the_stream_is_idle(
    mariadb: ThrowawayMariaDB, db: str, tmp_path: Path
) -> None:
    mariadb.execute(f"CREATE TABLE `{db}`.t (id INT PRIMARY KEY)")
    h = Harness(source_for(mariadb, rf"{db}\.t"), latest(mariadb), tmp_path / "h.jsonl")
    h.settle(0.5)
    assert h.reader.stats().connected
    began = time.monotonic()
    h.reader.stop()
    assert time.monotonic() - began < 2 and not h.reader.running
    assert h.reader.error is None and not h.store.closed


def test_progress_markers_for_other_tables(
    mariadb: ThrowawayMariaDB, db: str, tmp_path: Path, harnesses: list[Harness]
) -> None:
    mariadb.execute(
        f"CREATE TABLE `{db}`.mine (id INT PRIMARY KEY)",
        f"CREATE TABLE `{db}`.other (id INT PRIMARY KEY)",
    )
    start = latest(mariadb)
    h = Harness(source_for(mariadb, rf"{db}\.mine"), start, tmp_path / "h.jsonl")
    harnesses.append(h)
    for i in range(200):
        mariadb.execute(f"INSERT INTO other VALUES ({i})", database=db)
    end = latest(mariadb)
    h.until(lambda items: bool(items) and items[-1].after == end)
    markers = [it for it in h.items if it.batch is None]
    assert markers and all(it.after.at_boundary for it in markers)
    assert len(markers) < 100  # at most one every ~200 ms, not one per transaction
    assert [m.after for m in markers] == sorted(m.after for m in markers)
    assert not change_rows(h.items)


def txn_ends(items: list[LogItem]) -> list[tuple[int, BinlogOffset]]:
    """(change rows before it, offset) of every boundary the change items show: their
    ``after`` and the transaction ends inside coalesced items."""
    out: list[tuple[int, BinlogOffset]] = []
    rows = 0
    for it in items:
        if it.batch is None or it.is_ddl:
            continue
        out += [(rows + before, offset) for before, offset in it.boundaries]
        rows += it.rows
        if it.after.at_boundary:
            out.append((rows, it.after))
    return out


def test_restart_at_boundary_gives_exactly_the_following_transactions(
    mariadb: ThrowawayMariaDB, db: str, tmp_path: Path, harnesses: list[Harness]
) -> None:
    mariadb.execute(f"CREATE TABLE `{db}`.t (id INT PRIMARY KEY)")
    start = latest(mariadb)
    source = source_for(mariadb, rf"{db}\.t")
    for i in range(1, 7):  # written before the reader starts: it may coalesce them
        mariadb.execute(f"INSERT INTO t VALUES ({i})", database=db)
    h = Harness(source, start, tmp_path / "h.jsonl")
    harnesses.append(h)
    h.until_rows(6)
    ends = txn_ends(h.items)
    assert all(offset.at_boundary for _, offset in ends)
    assert [offset for _, offset in ends] == sorted(offset for _, offset in ends)
    after_txn = {rows: offset for rows, offset in reversed(ends)}  # first boundary per count
    assert sorted(after_txn) == [1, 2, 3, 4, 5, 6]  # a boundary after every transaction
    h.close()
    for k in (1, 2, 5):
        again = Harness(source, after_txn[k], tmp_path / "h.jsonl")
        harnesses.append(again)
        again.until_rows(6 - k)
        again.settle(0.5)
        assert [json.loads(r["after"])["id"] for r in change_rows(again.items)] == list(
            range(k + 1, 7)
        )
        assert again.items[0].is_ddl and again.items[0].after == after_txn[k]
        again.close()


def test_a_replay_ends_at_any_boundary_also_inside_coalesced_items(
    mariadb: ThrowawayMariaDB, db: str, tmp_path: Path, harnesses: list[Harness]
) -> None:
    mariadb.execute(f"CREATE TABLE `{db}`.t (id INT PRIMARY KEY)")
    start = latest(mariadb)
    source = source_for(mariadb, rf"{db}\.t")
    with contextlib.closing(mariadb.connect(db)) as conn, conn.cursor() as cur:
        for i in range(300):  # single-row transactions, a backlog when the reader starts
            cur.execute(f"INSERT INTO t VALUES ({i})")
            if i % 50 == 49:  # and a bigger one now and then, split into items of 16 rows
                cur.execute(
                    "INSERT INTO t VALUES " + ",".join(f"({-i * 100 - j})" for j in range(1, 41))
                )
    h = Harness(source, start, tmp_path / "h.jsonl", item_rows=16)
    harnesses.append(h)
    expected = [json.loads(r["after"])["id"] for r in h.until_rows(300 + 6 * 40)]
    assert any(it.boundaries for it in h.items), "the backlog was not coalesced"
    assert all(it.rows <= 16 for it in h.items if not it.is_ddl)
    rows_at = {offset: rows for rows, offset in txn_ends(h.items)}
    done = 0
    for it in h.items:
        done += 0 if it.is_ddl else it.rows
        if not it.after.at_boundary:
            rows_at[it.after] = done
    inner = [offset for offset in rows_at if not offset.at_boundary]
    assert [offset.skip for offset in inner] == [16, 32] * 6  # as without coalescing
    h.close()

    # a replay of ranges planned by a run that made one item per transaction: each end falls
    # inside one of the coalesced items of this run (timing decides which)
    store = EventStore(max_bytes=64 << 20, max_items=4096)
    reader = LogReader(source, start, store, SchemaHistory(tmp_path / "h.jsonl"), item_rows=16)
    reader.start()
    try:
        queue = DeliveryQueue(store, start)

        def wait_more() -> None:
            assert reader.error is None, reader.error

        got: list[int] = []
        offsets = sorted(rows_at)
        for end in sorted(set(offsets[::7] + inner[::3] + offsets[-1:])):
            taken = queue.take(end, wait_more, deadline_s=30)
            got += [
                json.loads(r["after"])["id"]
                for b in taken.batches
                for r in b.to_pylist()
                if r["op"] != "s"
            ]
            assert got == expected[: rows_at[end]], end
            queue.commit(end)
        assert got == expected
    finally:
        reader.stop()


def settle_checkpoint(server: ThrowawayMariaDB, timeout: float = 10.0) -> None:
    """Wait for the binlog checkpoint event that MariaDB writes into a new binlog file a moment
    after a FLUSH (it moves the end of the log without a transaction)."""
    current = server.query("SHOW MASTER STATUS")[0][0]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        events = server.query(f"SHOW BINLOG EVENTS IN '{current}'")
        if any(e[2] == "Binlog_checkpoint" and e[5] == current for e in events):
            return
        time.sleep(0.05)
    raise AssertionError(f"no binlog checkpoint of {current} appeared")


def test_startup_modes_resolve_where_they_say(
    mariadb: ThrowawayMariaDB, db: str, tmp_path: Path, harnesses: list[Harness]
) -> None:
    mariadb.execute(f"CREATE TABLE `{db}`.t (id INT PRIMARY KEY)")
    source = source_for(mariadb, rf"{db}\.t")
    with catalog_of(mariadb) as cat:
        files = cat.binlog_files()
        assert resolve_startup(cat, source, "earliest") == BinlogOffset(files[0][0], 4)
        assert resolve_startup(cat, source, "latest") == cat.current_offset()

        time.sleep(1.1)  # binlog timestamps have one-second resolution: keep them apart
        first = cat.current_offset()
        mariadb.execute("INSERT INTO t VALUES (1)", database=db)
        time.sleep(1.1)
        mariadb.execute("FLUSH BINARY LOGS")  # the second transaction opens a new file
        settle_checkpoint(mariadb)
        before_second = cat.current_offset()
        assert before_second.file > first.file
        mariadb.execute("INSERT INTO t VALUES (2)", database=db)
        mariadb.execute("INSERT INTO t VALUES (3)", database=db)
        end = cat.current_offset()

        h = Harness(source, first, tmp_path / "h.jsonl")
        harnesses.append(h)
        rows = h.until_rows(3)
        second = rows[1]
        by_gtid = resolve_startup(cat, source, f"gtid:{before_second.gtid}")
        assert by_gtid == before_second and by_gtid.gtid == before_second.gtid
        by_pos = resolve_startup(cat, source, f"position:{before_second.file}:{before_second.pos}")
        assert by_pos == before_second and by_pos.gtid == before_second.gtid
        by_ts = resolve_startup(cat, source, f"timestamp:{second['source']['ts_ms']}")
        assert by_ts == before_second
        assert resolve_startup(cat, source, f"timestamp:{rows[0]['source']['ts_ms']}") == first
        future = resolve_startup(cat, source, f"timestamp:{int(time.time() * 1000) + 60_000}")
        assert future == end and future.gtid == end.gtid

        with pytest.raises(LogPositionGone, match="mysql-bin.999999"):
            resolve_startup(cat, source, "position:mysql-bin.999999:4")
        with pytest.raises(ConfigError, match="not the start of a transaction"):
            resolve_startup(cat, source, f"position:{before_second.file}:{before_second.pos + 1}")
        with pytest.raises(LogPositionGone):
            resolve_startup(cat, source, "gtid:0-1-999999999")
        with pytest.raises(ConfigError) as info:
            resolve_startup(cat, source, "yesterday")
        assert info.value.fields["key"] == "source.startup"

    # a reader started at a GTID offset (file "") streams from the same place
    g = Harness(source, BinlogOffset("", 4, gtid=before_second.gtid), tmp_path / "g.jsonl")
    harnesses.append(g)
    assert [json.loads(r["after"])["id"] for r in g.until_rows(2)] == [2, 3]


def binlog_dumps(server: ThrowawayMariaDB, h: Harness, timeout: float = 20.0) -> list[Any]:
    """The server's binlog dump connections, waiting for one (the reader may be reconnecting,
    which it does only once the consumer makes room in the store)."""
    deadline = time.monotonic() + timeout
    while True:
        dumps = [r for r in server.query("SHOW PROCESSLIST") if r[4] == "Binlog Dump"]
        if dumps or time.monotonic() > deadline:
            assert dumps, "no binlog dump connection found"
            return dumps
        h.settle(0.05)


def test_killed_connection_reconnects_without_gap_or_duplicate(
    mariadb: ThrowawayMariaDB,
    db: str,
    tmp_path: Path,
    harnesses: list[Harness],
    caplog: pytest.LogCaptureFixture,
) -> None:
    mariadb.execute(f"CREATE TABLE `{db}`.t (id INT PRIMARY KEY, v INT, pad TEXT)")
    start = latest(mariadb)
    txns, per_txn = 300, 25

    def write(txn_ids: range) -> None:
        with contextlib.closing(mariadb.connect(db)) as conn, conn.cursor() as cur:
            for i in txn_ids:
                cur.execute("BEGIN")
                cur.execute(
                    "INSERT INTO t VALUES "
                    + ",".join(  # ~40 kB per transaction
                        f"({i * 100 + j}, 0, REPEAT('x', 2000))" for j in range(20)
                    )
                )
                cur.execute(f"UPDATE t SET v = 1 WHERE id BETWEEN {i * 100} AND {i * 100 + 4}")
                cur.execute("COMMIT")

    # most of the log exists before the reader starts, so the server's dump thread is busy
    # (and a kill lands anywhere, often inside a transaction); the rest arrives while streaming
    write(range(200))
    caplog.set_level(logging.INFO, logger="sparkcdc.reader")
    h = Harness(
        source_for(mariadb, rf"{db}\.t"), start, tmp_path / "h.jsonl", item_rows=7, max_items=8
    )  # a small store: the reader often waits inside a transaction
    harnesses.append(h)
    writer = threading.Thread(target=write, args=(range(200, txns),))
    writer.start()
    try:
        for kills in range(3):
            wanted = 1500 * (kills + 1)
            h.until(lambda items, n=wanted: len(change_rows(items)) > n, timeout=60)
            for r in binlog_dumps(mariadb, h):
                with contextlib.suppress(Exception):
                    mariadb.execute(f"KILL {r[0]}")
    finally:
        writer.join()
    h.until_rows(txns * per_txn, timeout=120)
    h.settle(1.0)
    rows = change_rows(h.items)
    identities = [(r["source"]["gtid"], r["transaction"]["total_order"]) for r in rows]
    assert len(identities) == len(set(identities)), "duplicate change events"
    assert len(rows) == txns * per_txn
    assert h.reader.stats().reconnects >= 3
    inserted = sorted(json.loads(r["after"])["id"] for r in rows if r["op"] == "c")
    assert inserted == sorted(i * 100 + j for i in range(txns) for j in range(20))
    assert sum(r["op"] == "u" for r in rows) == txns * 5


def test_server_restart_is_survived_and_a_long_outage_gives_up(tmp_path: Path) -> None:
    with ThrowawayMariaDB.start() as server:  # a server of its own: this test stops it
        server.execute("CREATE DATABASE shop", "CREATE TABLE shop.t (id INT PRIMARY KEY)")
        h = Harness(
            source_for(server, r"shop\.t"),
            latest(server),
            tmp_path / "h.jsonl",
            reconnect_timeout=4.0,
        )
        try:
            server.execute(*(f"INSERT INTO shop.t VALUES ({i})" for i in range(10)))
            h.until_rows(10)
            server.restart()  # a clean shutdown: the binlog moves on to a new file
            server.execute(*(f"INSERT INTO shop.t VALUES ({i})" for i in range(10, 20)))
            rows = h.until_rows(20, timeout=60)
            assert [json.loads(r["after"])["id"] for r in rows] == list(range(20))
            assert rows[-1]["source"]["file"] > rows[0]["source"]["file"]
            assert h.reader.stats().reconnects >= 1

            server.kill()
            h.reader.join(30)
            assert isinstance(h.reader.error, ConnectionFailed)
            assert "could not reconnect" in str(h.reader.error)
            with pytest.raises(ConnectionFailed):
                h.store.get(timeout=1)
        finally:
            h.close()


def test_typed_images_travel_beside_the_envelope_and_match_the_json_ones(
    mariadb: ThrowawayMariaDB, db: str, tmp_path: Path, harnesses: list[Harness]
) -> None:
    """A reader with typed images: the envelope keeps keys and no image text; every change's
    images are found by its position, in split and coalesced items and across a DDL, equal to
    what the sink makes of a JSON reader's images of the same log."""
    mariadb.execute(f"CREATE TABLE `{db}`.t (id INT PRIMARY KEY, v VARCHAR(8), d DATE)")
    start = latest(mariadb)
    pattern = rf"{db}\.t"
    typed = Harness(
        source_for(mariadb, pattern), start, tmp_path / "typed.jsonl", item_rows=10, typed=True
    )
    texts = Harness(source_for(mariadb, pattern), start, tmp_path / "json.jsonl", item_rows=10)
    harnesses += [typed, texts]
    with contextlib.closing(mariadb.connect(db)) as conn, conn.cursor() as cur:
        cur.execute("BEGIN")
        cur.execute("INSERT INTO t VALUES " + ",".join(f"({i},'v{i}',NULL)" for i in range(25)))
        cur.execute("COMMIT")
        for i in range(5):
            cur.execute(f"UPDATE t SET v = 'w{i}', d = '2024-01-0{i + 1}' WHERE id = {i}")
            cur.execute("COMMIT")
        cur.execute("ALTER TABLE t ADD COLUMN n INT")
        cur.execute("DELETE FROM t WHERE id < 3")
        cur.execute("COMMIT")
    rows = typed.until_rows(33)
    expected = texts.until_rows(33)
    assert [r["key"] for r in rows] == [r["key"] for r in expected]
    assert all(r["before"] is None and r["after"] is None for r in rows)
    schemas = {
        r["schema_id"]: TableSchema.from_json(json.loads(r["schema"]))
        for it in ddl_items(typed.items) for r in it.batch.to_pylist() if r["schema"]
    }  # fmt: skip
    images = {id(i): i for it in typed.items for i in it.images}.values()
    assert {i.schema_id for i in images} == {r["schema_id"] for r in rows}
    for sid, schema in schemas.items():
        fields = list(arrow_schema(schema))
        mine = [r for r in rows if r["schema_id"] == sid]
        if not mine:
            continue
        positions = pa.array([r["source"]["position"] for r in mine])
        index, before, after = images_of(
            positions, [i for i in images if i.schema_id == sid], fields
        )
        assert index.null_count == 0
        texts_of = [r for r in expected if r["schema_id"] == sid]
        for side, got in (("before", before), ("after", after)):
            want = decode_images(pa.array([r[side] for r in texts_of], pa.string()), schema)
            assert got.take(index).to_pylist() == want.to_pylist()
