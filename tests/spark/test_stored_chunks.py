"""Snapshot chunks delivered through the split store (``k`` events): the sink writes the same
change log and replica as for the chunk's ``r`` events, appends while only chunks reached the
table, merges afterwards, keeps log order inside mixed batches, and is idempotent on replay."""

from __future__ import annotations

import json
import os
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable

from sparkcdc.core.chunk import Split
from sparkcdc.core.errors import ConfigError, SinkError
from sparkcdc.core.offset_events import snapshot_batch
from sparkcdc.core.schema import TableSchema
from sparkcdc.sinks.delta import SINK_TYPE as DELTA
from sparkcdc.sinks.delta import chunk_files
from sparkcdc.sinks.delta.chunk_rows import disjoint
from sparkcdc.sinks.delta.commits import OPERATION_KEY
from sparkcdc.sinks.delta.sink import DeltaSink
from sparkcdc.snapshot.correct import typed_rows
from sparkcdc.snapshot.split_store import SplitResult, SplitStore
from sparkcdc.sources.mysql.offset import BinlogOffset
from sparkcdc.sources.mysql.schema.column_types import column, key_column
from sparkcdc.spark.incremental.batch_mark import BatchMark
from sparkcdc.spark.offsets import TableMeta
from sparkcdc.spark.snapshot.planner import SplitTask
from sparkcdc.spark.snapshot.split_task import keep_run, kept_chunk_event, read_split_task
from sparkcdc.spark.stream.options import SourceOptions
from tests.cases.envelopes import Changes
from tests.cases.schemas import ACCOUNTS, ALL_TYPES, ROW_JSON, images

HIGH = BinlogOffset("mysql-bin.000001", 4242, "0-1-9")


def stored_chunk(
    store: SplitStore,
    schema: TableSchema,
    index: int,
    rows: list[dict[str, Any]],
    files: bool = False,
) -> pa.RecordBatch:
    """The chunk kept typed in the store (``files``: with its Delta data files, as a split
    task keeps it), and its ``k`` event."""
    keys, texts = images(schema, rows)
    split = Split(f"{schema.db}.{schema.table}", index, None, None)
    result = SplitResult(split, typed_rows(schema)(keys, texts), HIGH, HIGH, 0.0, 1.5)
    written = chunk_files.files_of([result], schema, store, fresh=True) if files else None
    store.put(result)
    return kept_chunk_event(result, schema, store.rows_path(split), written)


def read_events(schema: TableSchema, rows: list[dict[str, Any]]) -> pa.RecordBatch:
    """The same chunk as ``r`` events (what ``snapshot_delivery = rows`` sends)."""
    keys, texts = images(schema, rows)
    return snapshot_batch(
        pa.array(keys), pa.array(texts), schema.db, schema.table, schema.schema_id(), HIGH, 1500
    )


def batch(*parts: pa.Table | pa.RecordBatch) -> pa.Table:
    return pa.concat_tables(
        p if isinstance(p, pa.Table) else pa.Table.from_batches([p]) for p in parts
    )


def table(path: Path, sort: str = "id") -> list[dict[str, Any]]:
    rows = DeltaTable(str(path)).to_pyarrow_table().to_pylist()
    return sorted(rows, key=lambda r: r[sort] if sort in r else r["after"]["id"])


def operations(path: Path) -> list[str]:
    """Each commit's operation, oldest first: a MERGE done as a copy-on-write (the sink's
    ``sparkcdc.operation``) as MERGE."""
    return [h.get(OPERATION_KEY, h["operation"]) for h in reversed(DeltaTable(str(path)).history())]


def test_a_stored_chunk_writes_what_its_read_events_write(tmp_path: Path) -> None:
    rows = [{**ROW_JSON, "id": i, "s": f"row {i}"} for i in range(1, 6)]
    rows[2]["day"] = "2024-02-30"  # an invalid date: null both ways
    store = SplitStore(tmp_path / "store", BinlogOffset)
    by_store, by_rows = DeltaSink(str(tmp_path / "a"), "p"), DeltaSink(str(tmp_path / "b"), "p")
    announce = Changes().schema(ALL_TYPES).table()
    by_store.write(batch(announce, stored_chunk(store, ALL_TYPES, 0, rows)), 0)
    by_rows.write(batch(announce, read_events(ALL_TYPES, rows)), 0)
    assert by_store.last_report is not None and by_store.last_report.changes == 5
    for name in ("types", "types__changelog"):
        a, b = table(tmp_path / "a" / "shop" / name), table(tmp_path / "b" / "shop" / name)
        assert a == b and len(a) == 5
    log = table(tmp_path / "a" / "shop" / "types__changelog")
    assert {r["op"] for r in log} == {"r"} and all(r["before"] is None for r in log)
    sources = [r["source"] for r in log]
    assert {(s["file"], s["pos"], s["gtid"], s["snapshot"]) for s in sources} == {
        (HIGH.file, HIGH.pos, HIGH.gtid, True)
    }
    assert sorted(s["row"] for s in sources) == [0, 1, 2, 3, 4]
    assert {s["position"] for s in sources} == {f"{HIGH.position()}:0000000000"}
    assert operations(tmp_path / "a" / "shop" / "types")[-1] == "WRITE"  # appended


def test_chunks_are_appended_until_the_log_reaches_the_table(tmp_path: Path) -> None:
    a = ACCOUNTS
    store = SplitStore(tmp_path / "store", BinlogOffset)
    sink = DeltaSink(str(tmp_path / "lake"), "p")

    def acct(i: int, owner: str) -> dict[str, Any]:
        return {"id": i, "owner": owner, "balance": f"{i}.00"}

    first = batch(Changes().schema(a).table(), stored_chunk(store, a, 0, [acct(1, "a")]))
    sink.write(first, 0)
    sink.write(batch(stored_chunk(store, a, 1, [acct(2, "b"), acct(3, "c")])), 1)
    # a replay of batch 1 (after a crash) writes nothing again
    again = DeltaSink(str(tmp_path / "lake"), "p")
    again.write(batch(stored_chunk(store, a, 1, [acct(2, "b"), acct(3, "c")])), 1)
    assert again.last_report is not None and again.last_report.skipped == ["shop.accounts"]
    replica = tmp_path / "lake" / "shop" / "accounts"
    assert operations(replica).count("WRITE") == 2 and "MERGE" not in operations(replica)
    # a log event of the table: chunks are merged from now on (an incremental snapshot's
    # chunk may hold keys the replica has), also by a restarted sink
    sink.write(Changes(pos=5000).change("u", a, acct(2, "b"), acct(2, "b2")).table(), 2)
    restarted = DeltaSink(str(tmp_path / "lake"), "p")
    restarted.write(batch(stored_chunk(store, a, 2, [acct(3, "c3"), acct(4, "d")])), 3)
    assert operations(replica)[-1] == "MERGE"
    assert [(r["id"], r["owner"]) for r in table(replica)] == [
        (1, "a"), (2, "b2"), (3, "c3"), (4, "d"),
    ]  # fmt: skip
    assert len(table(tmp_path / "lake" / "shop" / "accounts__changelog")) == 6


@pytest.mark.parametrize("kept", ["in the store", "with its data files"])
def test_a_replica_with_rows_gets_merged_chunks(tmp_path: Path, kept: str) -> None:
    """Also when the task wrote the chunk's data files: they are not used."""
    a = ACCOUNTS
    chunk_of = stored_chunk if kept == "in the store" else task_chunk
    store = SplitStore(tmp_path / "store", BinlogOffset)
    old = DeltaSink(str(tmp_path / "lake"), "old pipeline")
    old.write(
        Changes().schema(a).change("c", a, after={"id": 1, "owner": "x", "balance": "1"}).table(), 0
    )
    new = DeltaSink(str(tmp_path / "lake"), "new pipeline")
    chunk = chunk_of(store, a, 0, [{"id": 1, "owner": "y", "balance": "1.00"}])
    new.write(batch(Changes().schema(a).table(), chunk), 0)
    replica = tmp_path / "lake" / "shop" / "accounts"
    assert [(r["id"], r["owner"]) for r in table(replica)] == [(1, "y")]
    assert operations(replica)[-1] == "MERGE"


def test_a_mixed_batch_keeps_log_order_around_a_chunk(tmp_path: Path) -> None:
    a = ACCOUNTS
    store = SplitStore(tmp_path / "store", BinlogOffset)
    sink = DeltaSink(str(tmp_path / "lake"), "p")
    before = (
        Changes(pos=100).schema(a).change("c", a, after={"id": 9, "owner": "i", "balance": "9"})
    )
    chunk = stored_chunk(store, a, 0, [{"id": 5, "owner": "chunk", "balance": "5.00"}])
    old, new = {"id": 5, "owner": "chunk", "balance": "5.00"}, {"id": 5, "owner": "log"}
    after = Changes(pos=90_000).change("u", a, old, {**new, "balance": "5.50"})
    sink.write(batch(before.table(), chunk, after.table()), 0)
    replica = tmp_path / "lake" / "shop" / "accounts"
    assert [(r["id"], r["owner"], r["balance"]) for r in table(replica)] == [
        (5, "log", Decimal("5.50")), (9, "i", Decimal("9.00")),
    ]  # fmt: skip
    log = DeltaTable(str(tmp_path / "lake" / "shop" / "accounts__changelog")).to_pyarrow_table()
    assert log.column("op").to_pylist() == ["c", "r", "u"]


def test_a_missing_chunk_file_stops_the_batch_with_a_sentence(tmp_path: Path) -> None:
    store = SplitStore(tmp_path / "store", BinlogOffset)
    chunk = stored_chunk(store, ACCOUNTS, 0, [{"id": 1, "owner": "o", "balance": "1"}])
    store.release(Split("shop.accounts", 0, None, None))
    sink = DeltaSink(str(tmp_path / "lake"), "p")
    with pytest.raises(SinkError, match="snapshot chunk file .* is gone"):
        sink.write(batch(Changes().schema(ACCOUNTS).table(), chunk), 0)


@pytest.mark.parametrize("stored_as, read_as", [("store", "rows"), ("rows", "store")])
def test_a_split_stored_for_the_other_delivery_is_refused_by_name(
    tmp_path: Path, stored_as: str, read_as: str
) -> None:
    """A replayed split returns what is stored; stored for the other delivery, it cannot be
    sent as asked (typed rows have no row images, row images are not typed): one sentence."""
    a = ACCOUNTS
    store = SplitStore(tmp_path / "snapshot", BinlogOffset)
    rows = [{"id": 1, "owner": "o", "balance": "1.00"}]
    keys, texts = images(a, rows)
    split = Split("shop.accounts", 0, None, None)
    kept = (
        typed_rows(a)(keys, texts)
        if stored_as == "store"
        else pa.table({"key": keys, "after": texts})
    )
    store.put(SplitResult(split, kept, HIGH, HIGH))
    options = SourceOptions.parse(
        {"host": "127.0.0.1", "user": "root", "tables": r"shop\.accounts",
         "schema_history": str(tmp_path / "history.jsonl"), "snapshot_dir": str(store.root),
         "snapshot_delivery": read_as}
    )  # fmt: skip
    meta = {"shop.accounts": TableMeta(a, (key_column("id", "bigint"),))}
    task = SplitTask(0, [split], meta, 0)
    with pytest.raises(ConfigError, match=f"read for snapshot_delivery={stored_as}; keep"):
        list(read_split_task(options, task))


def incremental(event: pa.RecordBatch) -> pa.Table:
    """A ``k`` event made a chunk of an incremental snapshot."""
    ref = {**json.loads(event.column("after")[0].as_py()), "incremental": True}
    events = pa.Table.from_batches([event])
    where = events.schema.get_field_index("after")
    return events.set_column(where, "after", pa.array([json.dumps(ref)], pa.string()))


def acct(i: int, owner: str) -> dict[str, Any]:
    return {"id": i, "owner": owner, "balance": f"{i}.00"}


def test_an_incremental_chunk_updates_the_rows_the_log_wrote(tmp_path: Path) -> None:
    a = ACCOUNTS
    store = SplitStore(tmp_path / "store", BinlogOffset)
    sink = DeltaSink(str(tmp_path / "lake"), "p")
    logged = Changes().schema(a).change("c", a, after=acct(1, "a"))
    sink.write(logged.change("c", a, after=acct(2, "b")).table(), 0)
    sink.write(batch(incremental(stored_chunk(store, a, 0, [acct(1, "A"), acct(2, "B")]))), 1)
    replica = tmp_path / "lake" / "shop" / "accounts"
    assert [(r["id"], r["owner"]) for r in table(replica)] == [(1, "A"), (2, "B")]
    assert operations(replica)[-1] == "MERGE"
    log = DeltaTable(str(tmp_path / "lake" / "shop" / "accounts__changelog")).to_pyarrow_table()
    assert sorted(log.column("op").to_pylist()) == ["c", "c", "r", "r"]


def test_an_incremental_chunk_after_log_events_in_one_batch(tmp_path: Path) -> None:
    a = ACCOUNTS
    store = SplitStore(tmp_path / "store", BinlogOffset)
    sink = DeltaSink(str(tmp_path / "lake"), "p")
    sink.write(Changes().schema(a).change("c", a, after=acct(1, "a")).table(), 0)
    log_events = Changes(pos=2000).change("u", a, acct(1, "a"), acct(1, "a2")).table()
    chunk = incremental(stored_chunk(store, a, 0, [acct(2, "b"), acct(3, "c")]))
    sink.write(batch(log_events, chunk), 1)
    replica = tmp_path / "lake" / "shop" / "accounts"
    assert [(r["id"], r["owner"]) for r in table(replica)] == [(1, "a2"), (2, "b"), (3, "c")]
    log = table(tmp_path / "lake" / "shop" / "accounts__changelog")
    in_order = sorted(log, key=lambda r: (r["source"]["pos"], r["source"]["row"]))
    ops = [(r["op"], r["after"]["id"]) for r in in_order]
    assert ops == [("c", 1), ("u", 1), ("r", 2), ("r", 3)]


def test_incremental_chunks_are_appended_only_where_the_replica_holds_none_of_their_keys(
    tmp_path: Path,
) -> None:
    """Incremental snapshots of a table that starts empty: a chunk is appended when no data
    file's key range reaches its own, else merged (an append could duplicate keys)."""
    a = ACCOUNTS
    store = SplitStore(tmp_path / "store", BinlogOffset)
    sink = DeltaSink(str(tmp_path / "lake"), "p")
    sink.write(Changes().schema(a).table(), 0)
    sink.write(batch(incremental(stored_chunk(store, a, 0, [acct(1, "a"), acct(6, "f")]))), 1)
    sink.write(batch(incremental(stored_chunk(store, a, 1, [acct(7, "g"), acct(8, "h")]))), 2)
    replica = tmp_path / "lake" / "shop" / "accounts"
    assert operations(replica)[-2:] == ["WRITE", "WRITE"]
    # 3 and 4 hold no row, but a data file spans 1..6: merged
    sink.write(batch(incremental(stored_chunk(store, a, 2, [acct(3, "c"), acct(4, "d")]))), 3)
    assert operations(replica)[-1] == "MERGE"
    # a second snapshot's chunk holds the first one's keys: merged
    sink.write(batch(incremental(stored_chunk(store, a, 3, [acct(1, "x"), acct(8, "y")]))), 4)
    assert operations(replica)[-1] == "MERGE"
    assert [(r["id"], r["owner"]) for r in table(replica)] == [
        (1, "x"), (3, "c"), (4, "d"), (6, "f"), (7, "g"), (8, "y"),
    ]  # fmt: skip
    assert len(table(tmp_path / "lake" / "shop" / "accounts__changelog")) == 8
    # a later chunk of the initial kind is merged too
    sink.write(batch(stored_chunk(store, a, 4, [acct(1, "z"), acct(9, "i")])), 5)
    assert [(r["id"], r["owner"]) for r in table(replica)][:1] == [(1, "z")]
    assert operations(replica)[-1] == "MERGE"
    assert len(table(replica)) == 7


def test_an_incremental_chunk_beside_log_events_of_its_table_is_merged(tmp_path: Path) -> None:
    a = ACCOUNTS
    store = SplitStore(tmp_path / "store", BinlogOffset)
    sink = DeltaSink(str(tmp_path / "lake"), "p")
    sink.write(Changes().schema(a).table(), 0)
    mixed = batch(
        Changes(pos=2000).change("c", a, after=acct(9, "i")).table(),
        incremental(stored_chunk(store, a, 0, [acct(1, "a"), acct(2, "b")])),
    )
    sink.write(mixed, 1)
    replica = tmp_path / "lake" / "shop" / "accounts"
    assert operations(replica)[-1] == "MERGE"
    assert [r["id"] for r in table(replica)] == [1, 2, 9]


def test_a_replayed_incremental_chunk_writes_nothing_twice(tmp_path: Path) -> None:
    a = ACCOUNTS
    store = SplitStore(tmp_path / "store", BinlogOffset)
    lake = tmp_path / "lake"
    sink = DeltaSink(str(lake), "p")
    sink.write(Changes().schema(a).change("c", a, after=acct(1, "a")).table(), 0)
    mixed = batch(
        Changes(pos=2000).change("u", a, acct(1, "a"), acct(1, "a2")).table(),
        incremental(stored_chunk(store, a, 0, [acct(2, "b"), acct(3, "c")])),
    )
    only_chunk = batch(incremental(stored_chunk(store, a, 1, [acct(3, "c3"), acct(4, "d")])))
    sink.write(mixed, 1)
    sink.write(only_chunk, 2)
    names = ("accounts", "accounts__changelog")
    versions = {name: DeltaTable(str(lake / "shop" / name)).version() for name in names}
    for batch_id, events in ((1, mixed), (2, only_chunk)):
        again = DeltaSink(str(lake), "p")
        again.write(events, batch_id)
        assert again.last_report is not None and again.last_report.skipped == ["shop.accounts"]
    for name, version in versions.items():
        assert DeltaTable(str(lake / "shop" / name)).version() == version
    replica = lake / "shop" / "accounts"
    assert [(r["id"], r["owner"]) for r in table(replica)] == [
        (1, "a2"), (2, "b"), (3, "c3"), (4, "d"),
    ]  # fmt: skip
    assert len(table(lake / "shop" / "accounts__changelog")) == 6


def test_disjoint_needs_one_integer_key_and_statistics(tmp_path: Path) -> None:
    ids = pa.StructArray.from_arrays([pa.array([5, 6], pa.int64())], names=["id"])
    assert disjoint(str(tmp_path / "none"), ("id",), ids)  # no replica yet
    names = pa.StructArray.from_arrays([pa.array(["a", "b"])], names=["name"])
    assert not disjoint(str(tmp_path / "none"), ("name",), names)  # strings: collations
    both = pa.StructArray.from_arrays(
        [pa.array([5, 6], pa.int64()), pa.array([1, 1], pa.int64())], names=["id", "n"]
    )
    assert not disjoint(str(tmp_path / "none"), ("id", "n"), both)  # a composite key


ORDERS = TableSchema(
    "shop", "orders", (column("id", "bigint"), column("n", "int")), primary_key=("id",)
)
ORDER_ROW = {"id": 1, "n": 3}


class RecordingMark(BatchMark):
    """The batch mark, noting which replicas held the batch when the sink touched it."""

    def __init__(self, path: Path, lake: Path) -> None:
        super().__init__(path)
        self.lake = lake
        self.seen: list[dict[str, int]] = []

    def touch(self) -> None:
        super().touch()
        self.seen.append(
            {
                name: len(table(self.lake / "shop" / name))
                for name in ("accounts", "orders")
                if (self.lake / "shop" / name / "_delta_log").exists()
            }
        )


def test_the_batch_mark_falls_between_the_stream_and_the_chunks(tmp_path: Path) -> None:
    """The sink writes a batch's log changes, touches the mark, then writes the chunks of an
    incremental snapshot, whatever their order in the batch."""
    a, o = ACCOUNTS, ORDERS
    lake = tmp_path / "lake"
    store = SplitStore(tmp_path / "store", BinlogOffset)
    mark = RecordingMark(tmp_path / "batch.mark", lake)
    sink = DeltaSink(str(lake), "p", mark=mark)
    sink.write(Changes().schema(a).schema(o).table(), 0)
    assert len(mark.seen) == 1  # every batch touches it once
    chunk = incremental(stored_chunk(store, a, 0, [acct(1, "a"), acct(2, "b")]))
    streamed = Changes(pos=3000).change("c", o, after=ORDER_ROW).table()
    sink.write(batch(chunk, streamed), 1)
    assert mark.seen[-1] == {"accounts": 0, "orders": 1}
    assert len(table(lake / "shop" / "accounts")) == 2 and len(mark.seen) == 2


def task_chunk(
    store: SplitStore, schema: TableSchema, index: int, rows: list[dict[str, Any]]
) -> pa.RecordBatch:
    """The chunk as a split task keeps it: typed in the store with its Delta data files."""
    return stored_chunk(store, schema, index, rows, files=True)


def test_the_data_files_a_task_wrote_are_committed_as_the_sink_writes_the_chunk(
    tmp_path: Path,
) -> None:
    rows = [{**ROW_JSON, "id": i, "s": f"row {i}"} for i in range(1, 6)]
    rows[2]["day"] = "2024-02-30"  # an invalid date: null both ways
    more = [{**ROW_JSON, "id": i, "s": None} for i in range(6, 9)]
    store = SplitStore(tmp_path / "store", BinlogOffset)
    by_files, by_rows = DeltaSink(str(tmp_path / "a"), "p"), DeltaSink(str(tmp_path / "b"), "p")
    announce = Changes().schema(ALL_TYPES).table()
    first = batch(announce, task_chunk(store, ALL_TYPES, 0, rows))
    by_files.write(first, 0)
    by_files.write(batch(task_chunk(store, ALL_TYPES, 1, more)), 1)
    by_rows.write(batch(announce, read_events(ALL_TYPES, rows)), 0)
    by_rows.write(batch(read_events(ALL_TYPES, more)), 1)
    assert by_files.last_report is not None and by_files.last_report.changes == 3
    replica = tmp_path / "a" / "shop" / "types"
    for name in ("types", "types__changelog"):
        a, b = table(tmp_path / "a" / "shop" / name), table(tmp_path / "b" / "shop" / name)
        assert a == b and len(a) == 8
        # the tasks' files themselves, linked: the sink encoded nothing
        stored = {store.data_path(Split("shop.types", i, None, None), ".x1") for i in (0, 1)}
        kind = "changelog" if name.endswith("changelog") else "replica"
        files = DeltaTable(str(tmp_path / "a" / "shop" / name)).file_uris()
        assert len(files) == 2
        assert all(any(os.path.samefile(f, f"{s}.{kind}.parquet") for s in stored) for f in files)
    # the replica's statistics are the rows': files are skipped by key, not by guess
    ids = pa.StructArray.from_arrays([pa.array([5, 6], pa.int64())], names=["id"])
    assert not disjoint(str(replica), ["id"], ids)
    assert disjoint(str(replica), ["id"], pa.StructArray.from_arrays([pa.array([9])], ["id"]))
    assert DeltaTable(str(replica)).to_pyarrow_table(filters=[("id", ">", 5)]).num_rows == 3
    # a replayed batch commits nothing again; released chunks leave the tables whole
    again = DeltaSink(str(tmp_path / "a"), "p")
    again.write(batch(task_chunk(store, ALL_TYPES, 1, more)), 1)
    assert again.last_report is not None and again.last_report.skipped == ["shop.types"]
    for i in (0, 1):
        store.release(Split("shop.types", i, None, None))
    assert not list(store.root.rglob("*.parquet"))
    assert len(table(replica)) == 8 and operations(replica).count("WRITE") == 2


def test_a_run_read_again_after_a_crash_replaces_the_files_its_first_attempt_left(
    tmp_path: Path,
) -> None:
    """kill -9 after a run's files, before one of its splits was kept: that split is read
    again (maybe at a later high watermark, with other rows) and the run's files must hold the
    new rows; a run of finished splits replayed keeps the files it has."""
    a = ACCOUNTS
    store = SplitStore(tmp_path / "store", BinlogOffset)
    splits = [Split("shop.accounts", i, None, None) for i in (0, 1)]

    def result(i: int, owner: str, high: BinlogOffset) -> SplitResult:
        keys, texts = images(a, [{"id": i + 1, "owner": owner, "balance": "1.00"}])
        return SplitResult(splits[i], typed_rows(a)(keys, texts), high, high, 0.0, 1.5)

    kept = result(1, "kept", HIGH)
    store.put(kept)
    chunk_files.files_of([result(0, "first", HIGH), kept], a, store, fresh=True)  # the crash
    later = BinlogOffset(HIGH.file, HIGH.pos + 100, HIGH.gtid)
    again = result(0, "again", later)
    store.put(again)
    keep_run(store, [again, kept], a, True, True, write_files=DELTA.chunk_writer)
    replica = store.data_path(splits[0], ".x2.replica.parquet")
    changelog = store.data_path(splits[0], ".x2.changelog.parquet")
    assert pq.read_table(replica).column("owner").to_pylist() == ["again", "kept"]
    positions = [s["pos"] for s in pq.read_table(changelog).column("source").to_pylist()]
    assert positions == [later.pos, HIGH.pos]
    inode = replica.stat().st_ino
    replayed = [store.get(s) for s in splits]
    assert all(r is not None for r in replayed)
    keep_run(store, replayed, a, True, False, write_files=DELTA.chunk_writer)  # type: ignore[arg-type]
    assert replica.stat().st_ino == inode  # the finished run's own files, kept
