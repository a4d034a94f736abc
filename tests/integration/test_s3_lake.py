"""The lake on object storage, against an S3-compatible server on loopback (moto's): the sink's
micro-batches, its own files, a replay, the upkeep, snapshot chunk files uploaded and committed,
two writers racing for a table's versions, and the lake check's refusals."""

from __future__ import annotations

import threading
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable

from sparkcdc.core.errors import ConfigError
from sparkcdc.sinks.changes import run_files
from sparkcdc.sinks.changes.latest import OP_COLUMN, ORDER_COLUMN
from sparkcdc.sinks.delta import chunk_files, commits
from sparkcdc.sinks.delta.lake_check import check_lake
from sparkcdc.sinks.delta.sink import DeltaSink
from sparkcdc.sinks.delta.upkeep import delta_tables, schedule, upkeep_table
from sparkcdc.sinks.storage import LakeStorage
from tests.cases.envelopes import Changes
from tests.cases.s3 import MotoS3, free_port
from tests.cases.schemas import ACCOUNTS

pytestmark = [pytest.mark.s3]

A = ACCOUNTS
APP = "pipeline-1"


def account(key: int, balance: int) -> dict[str, Any]:
    return {"id": key, "owner": f"o{key}", "balance": f"{balance}.00"}


def batch(b: int) -> pa.Table:
    """Micro-batch ``b``: account 1 created (b = 0) or updated, one more account created."""
    changes = Changes(pos=1000 + 100 * b)
    if b == 0:
        changes.schema(A).change("c", A, after=account(1, 0))
    else:
        changes.change("u", A, account(1, b - 1), account(1, b))
    return changes.change("c", A, after=account(b + 2, b)).table()


def lake_on(s3: MotoS3) -> LakeStorage:
    return LakeStorage(f"s3://{s3.bucket()}/lake", s3.options())


def test_the_sink_writes_its_tables_and_files_to_s3(s3: MotoS3) -> None:
    """Five micro-batches to ``s3://bucket/lake``: the replica and the change log read back with
    the storage options, the schema and upkeep files beside them; a replay writes nothing."""
    lake = lake_on(s3)
    sink = DeltaSink(lake, APP, upkeep=schedule(lake, every=1, retain=0))
    for b in range(5):
        sink.write(batch(b), b)
    replica = DeltaTable(lake.join("shop", "accounts"), storage_options=s3.options())
    got = sorted(replica.to_pyarrow_table().to_pylist(), key=lambda r: r["id"])
    assert [(r["id"], str(r["balance"])) for r in got] == [(1, "4.00")] + [
        (b + 2, f"{b}.00") for b in range(5)
    ]
    log = DeltaTable(lake.join("shop", "accounts__changelog"), storage_options=s3.options())
    assert log.to_pyarrow_table().num_rows == 10 and log.transaction_version(APP) == 4
    assert lake.names(lake.join("_sparkcdc", "schemas")) == [f"shop.accounts.{A.schema_id()}.json"]

    report = DeltaSink(lake, APP).write(batch(4), 4)  # a restarted run writes its last batch again
    assert (report.tables, report.skipped) == ([], ["shop.accounts"])
    assert DeltaTable(log.table_uri, storage_options=s3.options()).to_pyarrow_table().num_rows == 10

    tables = dict(delta_tables(lake))
    assert tables == {
        "shop.accounts": lake.join("shop", "accounts"),
        "shop.accounts__changelog": lake.join("shop", "accounts__changelog"),
    }
    name = "shop.accounts__changelog"
    done = upkeep_table(name, tables[name], retain=0, small_files=2)  # one file per batch
    assert (done.compacted, done.files, done.vacuumed) == (5, 1, 5)
    assert sink.upkeep is not None and sink.upkeep.run() and lake.exists(sink.upkeep.state)


def test_snapshot_chunk_files_are_uploaded_and_committed_once(s3: MotoS3, tmp_path: Any) -> None:
    """A snapshot task's local Parquet file becomes a data file of the replica on S3 (copied, not
    linked) in one commit of its batch; the batch again commits nothing."""
    lake = lake_on(s3)
    path = lake.join("shop", "accounts")
    columns = [pa.field("id", pa.int64()), pa.field("owner", pa.string())]
    commits.ensure_replica(path, columns)
    task_file = tmp_path / "1.x1.replica.parquet"
    pq.write_table(pa.table({"id": [1, 2], "owner": ["a", "b"]}, pa.schema(columns)), task_file)
    found = {"path": str(task_file), "size": task_file.stat().st_size, "stats": {"numRecords": 2}}
    refs = [{"files": {"replica": found, "columns": run_files.columns_key(columns)}}]
    assert chunk_files.commit(path, "replica", refs, APP, 0, "tag")
    assert not chunk_files.commit(path, "replica", refs, APP, 0, "tag")
    table = DeltaTable(path, storage_options=s3.options())
    assert sorted(table.to_pyarrow_table().column("id").to_pylist()) == [1, 2]
    assert table.transaction_version(APP) == 0 and table.version() == 1


def test_two_writers_racing_for_a_table_write_each_batch_once(
    s3: MotoS3, caplog: pytest.LogCaptureFixture
) -> None:
    """Two writers (a restarted run beside one still finishing) append every batch at the same
    moment: the one losing the race for the version reads the table's transaction version
    again and writes nothing, so each batch is in the table once."""
    lake = lake_on(s3)
    path = lake.join("shop", "events")
    commits.ensure_replica(path, [pa.field("batch", pa.int64()), pa.field("writer", pa.int64())])
    batches = 12
    start = threading.Barrier(2)
    wrote: list[list[bool]] = [[], []]
    errors: list[BaseException] = []

    def writer(me: int) -> None:
        try:
            for b in range(batches):
                start.wait(timeout=30)
                rows = pa.table({"batch": [b, b], "writer": [me, me]}).cast(
                    pa.schema([("batch", pa.int64()), ("writer", pa.int64())])
                )
                wrote[me].append(commits.append_once(path, rows, APP, b))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(me,)) for me in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not errors, errors
    table = DeltaTable(path, storage_options=s3.options()).to_pyarrow_table()
    assert sorted(table.column("batch").to_pylist()) == sorted(2 * list(range(batches)))
    assert [a + b for a, b in zip(wrote[0], wrote[1], strict=True)] == [1] * batches
    assert caplog.text.count("another writer committed") >= 1  # the race did happen


@pytest.mark.parametrize("feed", [False, True], ids=["copy-on-write", "change-data-feed"])
def test_the_replica_is_merged_on_s3_by_copying_the_touched_files(s3: MotoS3, feed: bool) -> None:
    """The replica's copy-on-write (sinks/delta/rewrite.py) reads and writes its data files on
    object storage: an update and a delete leave the rows a MERGE would, in one commit each.
    With the change data feed (the default), which that commit cannot carry on object storage,
    delta-rs's MERGE writes the replica and its feed."""
    path = lake_on(s3).join("shop", "kv")  # a remote lake made is known by its paths
    fields = [pa.field("id", pa.int64()), pa.field("v", pa.string())]
    commits.ensure_replica(path, fields, change_data_feed=feed)

    def changes(ids: list[int], values: list[str | None]) -> pa.Table:
        ops = ["d" if v is None else "u" for v in values]
        order = list(range(len(ids)))
        return pa.table({"id": pa.array(ids, pa.int64()), "v": pa.array(values, pa.string()),
                         OP_COLUMN: ops, ORDER_COLUMN: order})  # fmt: skip

    assert commits.merge_replica(path, changes([1, 2, 3], ["a", "b", "c"]), ("id",), APP, 0)
    assert commits.merge_replica(path, changes([2, 3], ["B", None]), ("id",), APP, 1)
    assert not commits.merge_replica(path, changes([2, 3], ["B", None]), ("id",), APP, 1)
    table = DeltaTable(path, storage_options=s3.options())
    assert sorted(table.to_pyarrow_table().to_pylist(), key=lambda r: r["id"]) == [
        {"id": 1, "v": "a"}, {"id": 2, "v": "B"}]  # fmt: skip
    info = table.history(1)[0]
    if not feed:
        assert info.get(commits.OPERATION_KEY) == "MERGE" and len(table.file_uris()) == 1
        return
    assert info["operation"] == "MERGE"  # delta-rs's own
    feed_rows = pa.table(table.load_cdf(starting_version=2, ending_version=2)).to_pylist()
    assert sorted((r["id"], r["v"], r["_change_type"]) for r in feed_rows) == [
        (2, "B", "update_postimage"), (2, "b", "update_preimage"), (3, "c", "delete")]  # fmt: skip


def test_the_lake_check_names_the_setting_to_fix(s3: MotoS3) -> None:
    """A writable bucket passes; a missing bucket names sink.path; an endpoint nothing listens
    on names sink.storage_options, quickly."""
    check_lake(lake_on(s3))
    with pytest.raises(ConfigError, match=r"^sink\.path: the bucket of s3://no-such-bucket") as e:
        check_lake(LakeStorage("s3://no-such-bucket/lake", s3.options()))
    assert e.value.fields["key"] == "sink.path"
    closed = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(ConfigError, match=r"^sink\.storage_options: .* cannot be reached") as e:
        check_lake(LakeStorage("s3://lake/x", s3.options(AWS_ENDPOINT_URL=closed)))
    assert "AWS_ENDPOINT_URL" in str(e.value) and s3.options()["AWS_SECRET_ACCESS_KEY"] not in str(
        e.value
    )
