"""Incremental snapshots (DBLog windows) against a real server and real Delta tables.

The stream reader is driven the way Spark drives it (``latestOffset`` → ``partitions`` → ``read``
→ the sink → ``commit``), in this process, so a hook can change the table at an exact moment of
a window: between the chunk reads and the high watermark. After every scenario the replica
equals the source row by row, and no snapshot row in the change log comes after a newer change
of its key.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable
from pyspark.sql.streaming.datasource import ReadAllAvailable

from sparkcdc.config.model import SnapshotConfig, SourceConfig
from sparkcdc.sinks.delta.notifications import read_notifications
from sparkcdc.sinks.delta.sink import DeltaSink
from sparkcdc.snapshot.signals import Signal, new_signal_id, signal_data, write_file_signal
from sparkcdc.sources.mysql.throwaway import ThrowawayMariaDB
from sparkcdc.spark.stream.options import SourceOptions, source_options
from sparkcdc.spark.stream.reader import ChangeStreamReader

pytestmark = [pytest.mark.mariadb]


class Stream:
    """A stream reader and a Delta sink, stepped one micro-batch at a time."""

    def __init__(self, server: ThrowawayMariaDB, db: str, tmp: Path, chunk: int = 100) -> None:
        file, pos = server.query("SHOW MASTER STATUS")[0][:2]
        source = SourceConfig(
            host=server.host,
            port=server.port,
            user=server.user,
            password=server.password,
            tables=(rf"{db}\..*",),
            startup=f"position:{file}:{pos}",
            snapshot=SnapshotConfig(chunk_size=chunk, incremental_chunks=2),
        )
        self.tmp = tmp
        self.signals = tmp / "signals"
        opts = source_options(
            source,
            str(tmp / "cp" / "schema_history.jsonl"),
            max_bytes=8 << 20,
            max_items=4096,
            batch_mode="MEMSIZE",
            item_rows=2048,
            snapshot_dir=str(tmp / "cp" / "snapshot"),
            snapshot_delivery="store",
            signal_dir=str(self.signals),
        )
        self.options = SourceOptions.parse(opts)
        self.sink = DeltaSink(str(tmp / "lake"), app_id="sparkcdc-test")
        self.reader = ChangeStreamReader(self.options)
        self.offset: dict = self.reader.initialOffset()
        self.batch = 0

    def step(self) -> bool:
        """One micro-batch; False when there was nothing to do."""
        end = self.reader.latestOffset(self.offset, ReadAllAvailable())
        if end == self.offset:
            return False
        parts = self.reader.partitions(self.offset, end)
        batches = [b for p in parts for b in self.reader.read(p)]
        if batches:
            self.sink.write(pa.Table.from_batches(batches), self.batch)
        self.reader.commit(end)
        self.offset, self.batch = end, self.batch + 1
        return True

    def signal(self, action: str, tables: list[str] = (), where: str | None = None) -> None:  # type: ignore[assignment]
        data = signal_data(action, list(tables), where, None)
        write_file_signal(self.signals, Signal(new_signal_id(), action, data))

    def until(self, done: Callable[[], bool], timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while not done():
            assert time.monotonic() < deadline, "the incremental snapshot did not finish"
            if not self.step():
                time.sleep(0.05)

    def notices(self, kind: str) -> list[dict[str, Any]]:
        return [n for n in read_notifications(str(self.tmp / "lake")) if n["type"] == kind]

    def completed(self) -> bool:
        return bool(self.notices("completed"))

    def settle(self) -> None:
        """Step until the stream has nothing more to deliver."""
        idle = 0
        while idle < 5:
            idle = 0 if self.step() else idle + 1
            time.sleep(0.05)

    @property
    def hook(self) -> Callable[[], None] | None:
        return self.reader.incremental.windows.hook

    @hook.setter
    def hook(self, fn: Callable[[], None] | None) -> None:
        self.reader.incremental.windows.hook = fn

    def close(self) -> None:
        self.reader.stop()


def replica(tmp: Path, db: str, table: str) -> list[tuple[Any, ...]]:
    rows = DeltaTable(str(tmp / "lake" / db / table)).to_pyarrow_table().to_pylist()
    return sorted((r["id"], r["v"]) for r in rows)


def source_rows(server: ThrowawayMariaDB, db: str, table: str) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in server.query(f"SELECT id, v FROM {table}", db))


def changelog(tmp: Path, db: str, table: str) -> list[dict[str, Any]]:
    path = tmp / "lake" / db / f"{table}__changelog"
    rows = DeltaTable(str(path)).to_pyarrow_table().to_pylist()
    return sorted(rows, key=lambda r: (r["source"]["file"], r["source"]["pos"], r["source"]["row"]))


def assert_no_stale_reads(tmp: Path, db: str, table: str) -> None:
    """No ``r`` row follows a change of its key whose image differs from the ``r`` row."""
    latest: dict[Any, Any] = {}
    for row in changelog(tmp, db, table):
        image = row["after"] or row["before"]
        key = image["id"]
        if row["op"] == "r":
            assert row["after"] == latest.get(key, row["after"]), (key, row, latest.get(key))
        latest[key] = row["after"]


@pytest.fixture
def stream(mariadb: ThrowawayMariaDB, db: str, tmp_path: Path):  # type: ignore[no-untyped-def]
    mariadb.execute("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(20))", database=db)
    values = ", ".join(f"({i}, 'v{i}')" for i in range(1, 1001))
    mariadb.execute(f"INSERT INTO t VALUES {values}", database=db)
    s = Stream(mariadb, db, tmp_path)
    s.settle()
    yield s
    s.close()


def test_a_signal_snapshots_a_table_while_the_log_flows(
    mariadb: ThrowawayMariaDB, db: str, tmp_path: Path, stream: Stream
) -> None:
    mariadb.execute("INSERT INTO t VALUES (5000, 'after-start')", database=db)
    stream.signal("execute-snapshot", [f"{db}.t"])
    stream.until(stream.completed)
    stream.settle()
    assert replica(tmp_path, db, "t") == source_rows(mariadb, db, "t")
    chunks = stream.notices("chunk")
    last = json.loads(chunks[-1]["details"])
    assert (last["last_key"], last["max_key"]) == ([5000], [5000])
    done = stream.notices("table-done")
    assert json.loads(done[0]["details"])["rows"] == 1001  # 5000 was there when it started
    assert_no_stale_reads(tmp_path, db, "t")


CHANGES = {
    "update": "UPDATE t SET v = 'new' WHERE id = {k}",  # a key in the chunk being read
    "delete": "DELETE FROM t WHERE id = {k}",
    "beyond_max": "INSERT INTO t VALUES (1000000, 'beyond the max key')",
    "key_update": "UPDATE t SET id = 2000000 WHERE id = {k}",  # a primary key update
    "delete_insert": "DELETE FROM t WHERE id = {k}; INSERT INTO t VALUES ({k}, 'again')",
}


@pytest.mark.parametrize("change", list(CHANGES))
@pytest.mark.parametrize(
    "window",
    [1, 3],  # the first window reads in the foreground, later ones were read ahead
)
def test_window_changes_win(
    mariadb: ThrowawayMariaDB, db: str, tmp_path: Path, stream: Stream, change: str, window: int
) -> None:
    # two chunks of 100 keys per window: window w reads keys 200 * (w - 1) + 1 ..
    stream.reader.incremental.windows.seconds = 0.0
    key = 200 * (window - 1) + 50
    calls = []

    def hook() -> None:
        calls.append(True)
        if len(calls) == window:
            mariadb.execute(*CHANGES[change].format(k=key).split("; "), database=db)

    stream.hook = hook
    stream.signal("execute-snapshot", [f"{db}.t"])
    stream.until(stream.completed)
    stream.settle()
    assert len(calls) >= window
    assert replica(tmp_path, db, "t") == source_rows(mariadb, db, "t")
    assert_no_stale_reads(tmp_path, db, "t")


def test_where_snapshots_only_the_matching_rows(
    mariadb: ThrowawayMariaDB, db: str, tmp_path: Path, stream: Stream
) -> None:
    # the replica is wiped of its rows first, so only what the snapshot writes is there
    mariadb.execute("CREATE TABLE u (id INT PRIMARY KEY, v VARCHAR(20))", database=db)
    stream.settle()
    with mariadb.connect(db) as conn, conn.cursor() as cur:
        cur.execute("SET sql_log_bin = 0")
        cur.execute("INSERT INTO u SELECT id, v FROM t")
        conn.commit()
    stream.signal("execute-snapshot", [f"{db}.u"], where="id % 10 = 0")
    stream.until(stream.completed)
    assert replica(tmp_path, db, "u") == [(i, f"v{i}") for i in range(10, 1001, 10)]


def test_pause_resume_and_stop(
    mariadb: ThrowawayMariaDB, db: str, tmp_path: Path, stream: Stream
) -> None:
    stream.reader.incremental.windows.seconds = 0.0  # one round of chunks per window
    stream.signal("execute-snapshot", [f"{db}.t"])
    stream.until(lambda: bool(stream.notices("chunk")))
    stream.signal("pause-snapshot")
    stream.until(lambda: bool(stream.notices("paused")))
    seen = len(stream.notices("chunk"))
    for _ in range(10):  # paused: no chunk is read
        stream.step()
        time.sleep(0.05)
    assert len(stream.notices("chunk")) == seen
    stream.signal("resume-snapshot")
    stream.until(stream.completed)
    assert replica(tmp_path, db, "t") == source_rows(mariadb, db, "t")
    # stop drops the rest of a run
    stream.signal("execute-snapshot", [f"{db}.t"])
    stream.until(lambda: len(stream.notices("started")) == 2)
    stream.signal("stop-snapshot", [f"{db}.t"])
    stream.until(lambda: bool(stream.notices("stopped")))
    assert len(stream.notices("table-done")) == 1


def test_a_second_execute_of_a_running_table_is_skipped(
    mariadb: ThrowawayMariaDB, db: str, tmp_path: Path, stream: Stream
) -> None:
    stream.reader.incremental.windows.seconds = 0.0
    stream.signal("execute-snapshot", [f"{db}.t"])
    stream.until(lambda: bool(stream.notices("chunk")))
    stream.signal("execute-snapshot", [f"{db}.t"])
    stream.until(stream.completed)
    skipped = [json.loads(n["details"]) for n in stream.notices("skipped")]
    assert [s["reason"] for s in skipped] == ["already in progress"]
    assert len(stream.notices("table-done")) == 1


def test_a_table_dropped_mid_snapshot_stops_its_run_not_the_stream(
    mariadb: ThrowawayMariaDB, db: str, tmp_path: Path, stream: Stream
) -> None:
    stream.reader.incremental.windows.seconds = 0.0
    stream.signal("execute-snapshot", [f"{db}.t"])
    stream.until(lambda: bool(stream.notices("chunk")))
    mariadb.execute(
        "DROP TABLE t", "CREATE TABLE z (id INT PRIMARY KEY, v VARCHAR(20))", database=db
    )
    stream.until(lambda: bool(stream.notices("stopped")))
    stopped = json.loads(stream.notices("stopped")[0]["details"])
    assert "t" in stopped["reason"]
    mariadb.execute("INSERT INTO z VALUES (1, 'still streaming')", database=db)
    stream.until(
        lambda: (
            (tmp_path / "lake" / db / "z").exists()
            and replica(tmp_path, db, "z") == [(1, "still streaming")]
        )
    )
