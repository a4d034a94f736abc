"""A snapshot task's splits in runs: one pair of Delta data files per run of consecutive splits
of one table, named by every chunk of the run and committed once; the tables' announcements
travel with the batch's first split task instead of a task of their own."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from sparkcdc.core.chunk import Split
from sparkcdc.core.event import OP_CHUNK, OP_SCHEMA
from sparkcdc.sinks.delta.sink import DeltaSink
from sparkcdc.snapshot.correct import typed_rows
from sparkcdc.snapshot.split_store import SplitResult, SplitStore
from sparkcdc.sources.mysql.chunks.dialect import MySQLChunks
from sparkcdc.sources.mysql.offset import BinlogOffset
from sparkcdc.sources.mysql.schema.column_types import key_column
from sparkcdc.sources.mysql.throwaway import ThrowawayMariaDB
from sparkcdc.spark.offsets import SnapshotOffset, TableMeta
from sparkcdc.spark.snapshot.phase import SnapshotPhase
from sparkcdc.spark.snapshot.planner import SplitTask
from sparkcdc.spark.snapshot.split_task import RUN_ROWS, read_split_task, runs
from sparkcdc.spark.stream.options import SourceOptions
from sparkcdc.spark.stream.reader import ChangeStreamReader
from tests.cases.envelopes import Changes
from tests.cases.schemas import ACCOUNTS, images

A = ACCOUNTS
META = {"shop.accounts": TableMeta(A, (key_column("id", "bigint"),))}


def options(tmp_path: Path, store: SplitStore, **extra: str) -> SourceOptions:
    return SourceOptions.parse(
        {"host": "127.0.0.1", "user": "root", "tables": r"shop\.accounts",
         "schema_history": str(tmp_path / "history.jsonl"), "snapshot_dir": str(store.root),
         "snapshot_delivery": "store", **extra}
    )  # fmt: skip


def kept_splits(store: SplitStore, count: int) -> list[Split]:
    """``count`` finished splits of two rows each, each at a high watermark of its own."""
    splits = []
    for i in range(count):
        split = Split("shop.accounts", i, None, None)
        rows = [{"id": 2 * i + k, "owner": f"o{i}", "balance": f"{i}.0{k}"} for k in (1, 2)]
        keys, texts = images(A, rows)
        high = BinlogOffset("mysql-bin.000001", 1000 + i, f"0-1-{i}")
        store.put(SplitResult(split, typed_rows(A)(keys, texts), high, high, 0.0, 1.5))
        splits.append(split)
    return splits


def refs(events: list[pa.RecordBatch]) -> list[dict[str, Any]]:
    return [json.loads(e.column("after")[0].as_py()) for e in events]


def test_a_task_s_splits_go_in_runs_of_one_table_up_to_the_run_s_rows() -> None:
    splits = [Split("a.x", i, None, None) for i in range(3)]
    splits += [Split("a.y", i, None, None) for i in range(3)]
    # the task's last run is halved: its files are what the task's end waits for
    assert runs(splits, RUN_ROWS // 2) == [splits[0:2], splits[2:3], splits[3:5], splits[5:6]]
    assert runs(splits, RUN_ROWS * 4) == [[s] for s in splits]  # chunks larger than a run
    assert runs([], 100) == []
    many = [Split("a.x", i, None, None) for i in range(20)]
    sizes = [len(r) for r in runs(many, RUN_ROWS // 8)]
    assert sizes == [8, 8, 2, 1, 1]
    sizes = [len(r) for r in runs(many[:16], RUN_ROWS // 16)]
    assert sizes == [8, 4, 2, 1, 1]


def test_each_chunk_names_its_run_s_files_and_the_sink_commits_each_run_once(
    tmp_path: Path,
) -> None:
    """Five finished splits replayed in one task with runs of two: three pairs of files, each
    chunk's ``k`` event naming its run's, each change-log row at its own split's high
    watermark; the tables hold every row once, in three files each."""
    store = SplitStore(tmp_path / "snapshot", BinlogOffset)
    splits = kept_splits(store, 5)
    opts = options(tmp_path, store, chunk_size=str(RUN_ROWS // 2))
    task = SplitTask(0, splits, META, 0)
    events = list(read_split_task(opts, task))
    assert [e.column("op")[0].as_py() for e in events] == [OP_CHUNK] * 5
    found = refs(events)
    assert [r["rows"] for r in found] == [2] * 5
    paths = [r["files"]["replica"]["path"] for r in found]
    assert paths[0] == paths[1] != paths[2] == paths[3] != paths[4]
    assert [Path(p).name for p in dict.fromkeys(paths)] == [
        "0.x2.replica.parquet", "2.x2.replica.parquet", "4.x1.replica.parquet"
    ]  # fmt: skip
    assert found[0]["files"]["replica"]["stats"]["numRecords"] == 4
    sink = DeltaSink(str(tmp_path / "lake"), "p")
    sink.write(pa.concat_tables([Changes().schema(A).table(), pa.Table.from_batches(events)]), 0)
    assert sink.last_report is not None and sink.last_report.changes == 10
    replica = DeltaTable(str(tmp_path / "lake" / "shop" / "accounts"))
    log = DeltaTable(str(tmp_path / "lake" / "shop" / "accounts__changelog"))
    assert len(replica.file_uris()) == 3 and len(log.file_uris()) == 3
    assert sorted(r["id"] for r in replica.to_pyarrow_table().to_pylist()) == list(range(1, 11))
    rows = log.to_pyarrow_table().to_pylist()
    assert {r["op"] for r in rows} == {"r"}
    assert sorted((r["after"]["id"], r["source"]["pos"], r["source"]["row"]) for r in rows) == [
        (2 * i + k, 1000 + i, k - 1) for i in range(5) for k in (1, 2)
    ]
    got = sorted((r["after"]["id"], r["source"]["position"]) for r in rows)
    place = [BinlogOffset("mysql-bin.000001", 1000 + i).position() for i in range(5)]
    assert got == [(2 * i + k, f"{place[i]}:0000000000") for i in range(5) for k in (1, 2)]


@pytest.mark.parametrize("tasks", [2, 1])
def test_the_announcement_goes_with_the_first_split_task(tmp_path: Path, tasks: int) -> None:
    """A table's first batch: its schema row comes first out of the first split task, and no
    task is spent on it alone (it would hold a slot while the split tasks wait)."""
    store = SplitStore(tmp_path / "snapshot", BinlogOffset)
    splits = tuple(kept_splits(store, 2))
    groups = (splits[:1], splits[1:]) if tasks == 2 else (splits,)
    end = SnapshotOffset(
        ("shop.accounts",), current=1, batch=1, groups=groups, meta=META,
        announce=("shop.accounts",),
    )  # fmt: skip
    opts = options(tmp_path, store, parallelism=str(tasks))
    parts = SnapshotPhase(opts).partitions(end)
    assert [type(p) for p in parts] == [SplitTask] * tasks
    reader = ChangeStreamReader(opts)
    sent = [list(reader.read(p)) for p in parts]
    ops = [[e.column("op").to_pylist() for e in task] for task in sent]
    assert ops[0][0] == [OP_SCHEMA] and ops[0][1:] == [[OP_CHUNK]] * (3 - tasks)
    assert all(o == [[OP_CHUNK]] for o in ops[1:])
    # a later batch of the table announces nothing
    later = replace(end, announce=())
    assert all(not p.head for p in SnapshotPhase(opts).partitions(later))


@pytest.mark.mariadb
def test_a_task_reads_each_run_of_an_integer_key_in_one_query(
    tmp_path: Path, mariadb: ThrowawayMariaDB, db: str
) -> None:
    """Ten fresh splits of an integer key go in runs of 5, 3, 1 and 1 splits: four queries,
    each run in one window; every chunk holds its own key range. With a split kept in the
    middle of a run (an earlier attempt's), the rest of that run is read a split at a time."""
    mariadb.execute(
        "CREATE TABLE t (id BIGINT PRIMARY KEY, v VARCHAR(20))",
        "INSERT INTO t SELECT seq, CONCAT('v', seq) FROM seq_1_to_1000",
        database=db,
    )
    store = SplitStore(tmp_path / "snapshot", BinlogOffset)
    opts = SourceOptions.parse(
        {"host": "127.0.0.1", "port": str(mariadb.port), "user": "root", "tables": rf"{db}\.t",
         "schema_history": str(tmp_path / "history.jsonl"), "snapshot_dir": str(store.root),
         "snapshot_delivery": "store", "chunk_size": str(RUN_ROWS // 5)}
    )  # fmt: skip
    with MySQLChunks(opts.source) as dialect:
        schema = dialect.catalog.load_schema(db, "t")
        keys = dialect.key_columns(db, "t", ["id"])
    meta = {schema.name: TableMeta(schema, tuple(keys))}
    bounds = [None, *((100 * i + 1,) for i in range(1, 10)), None]
    splits = [Split(schema.name, i, bounds[i], bounds[i + 1]) for i in range(10)]
    assert [len(r) for r in runs(splits, RUN_ROWS // 5)] == [5, 3, 1, 1]

    def prepared() -> int:  # connectorx prepares each query it runs
        return int(mariadb.query("SHOW GLOBAL STATUS LIKE 'Com_stmt_prepare'")[0][1])

    def read(task_splits: list[Split]) -> tuple[int, list[dict[str, Any]]]:
        before = prepared()
        task = SplitTask(0, task_splits, meta, 0)
        events = list(read_split_task(opts, task))
        return prepared() - before, refs(events)

    queries, found = read(splits)
    assert queries == 4 and [r["rows"] for r in found] == [100] * 10
    for split in splits:
        ids = store.get(split).rows.column("id").to_pylist()  # type: ignore[union-attr]
        assert ids == list(range(100 * split.index + 1, 100 * split.index + 101))
    highs = [store.get(s).high for s in splits[:5]]  # type: ignore[union-attr]
    assert len(set(highs)) == 1  # one window for the first run
    for split in splits[:2] + splits[3:5]:
        store.release(split)
    queries, found = read(splits[:5])  # split 2 kept: 0, 1, 3 and 4 read one by one
    assert queries == 4 and [r["rows"] for r in found] == [100] * 5
