"""The change stream source under a local SparkSession, fed by the fake source: every
change once (also across split transactions), restarts resume from the checkpoint, and a
micro-batch replayed after a crash is rebuilt exactly even when the new reader cuts items
differently."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from sparkcdc.core.schema import TableSchema
from sparkcdc.sources.mysql.schema.column_types import column
from sparkcdc.spark.offsets import source_position
from tests.cases.fake_streams import drain
from tests.fakes.database import FakeLog
from tests.fakes.offset import FakeOffset

pytestmark = pytest.mark.spark

ITEMS = TableSchema("shop", "items", (column("id", "int"), column("v", "varchar")), ("id",))


def insert(ids: range) -> list[list[Any]]:
    return [
        ["c", "shop", "items", json.dumps([i]), None, json.dumps({"id": i, "v": f"v{i}"})]
        for i in ids
    ]


def make_log(tmp: Path, sizes: list[int]) -> tuple[FakeLog, list[int]]:
    log = FakeLog(tmp / "log.jsonl", [ITEMS])
    ids: list[int] = []
    for size in sizes:
        batch = range(len(ids), len(ids) + size)
        log.commit(insert(batch))
        ids.extend(batch)
    return log, ids


def stream(spark: Any, tmp: Path, on_batch: Any, item_rows: int = 3, **extra: str) -> None:
    drain(spark, tmp, on_batch, startup="earliest", item_rows=str(item_rows), max_bytes="16384",
          status_file=str(tmp / "metrics.json"), **extra)  # fmt: skip


class Collect:
    """foreachBatch that records the inserted ids of every batch (and may crash once)."""

    def __init__(self, crash_when: Any = None) -> None:
        self.batches: dict[int, list[int]] = {}
        self.crash_when = crash_when

    def __call__(self, df: Any, batch_id: int) -> None:
        table = df.toArrow()
        ids = [json.loads(k)[0] for op, k in zip(table["op"].to_pylist(), table["key"].to_pylist(),
                                                 strict=True) if op == "c"]  # fmt: skip
        self.batches[batch_id] = ids
        if self.crash_when is not None and self.crash_when(batch_id):
            self.crash_when = None
            raise RuntimeError(f"crash in batch {batch_id}")

    def ids(self) -> list[int]:
        return [i for b in sorted(self.batches) for i in self.batches[b]]


def batch_end(tmp: Path, batch_id: int) -> FakeOffset:
    lines = (tmp / "checkpoint" / "offsets" / str(batch_id)).read_text().splitlines()
    position = source_position(json.loads(lines[-1]))
    assert position is not None
    return FakeOffset.from_json(position)


def test_every_change_once_in_log_order_with_split_transactions(spark: Any, tmp_path: Path) -> None:
    _, ids = make_log(tmp_path, [1, 5, 400, 2, 300, 1])
    seen = Collect()
    stream(spark, tmp_path, seen)
    assert seen.ids() == ids
    ends = [batch_end(tmp_path, b) for b in sorted(seen.batches)]
    assert any(not end.at_boundary for end in ends), "the big transactions were never split"
    status = json.loads((tmp_path / "metrics.json").read_text())
    assert status["rows"] == len(ids) and "store_peak_bytes" in status


def test_a_restart_resumes_from_the_checkpoint(spark: Any, tmp_path: Path) -> None:
    log, ids = make_log(tmp_path, [3, 4])
    first = Collect()
    stream(spark, tmp_path, first)
    assert first.ids() == ids
    log.commit(insert(range(100, 110)))
    second = Collect()
    stream(spark, tmp_path, second)
    assert second.ids() == list(range(100, 110))
    assert min(second.batches) > max(first.batches)


def test_a_replayed_batch_is_rebuilt_exactly(spark: Any, tmp_path: Path) -> None:
    _, ids = make_log(tmp_path, [2, 500, 3, 700, 1])

    def split_end(batch_id: int) -> bool:  # crash in the first batch ending inside a transaction
        return not batch_end(tmp_path, batch_id).at_boundary

    first = Collect(crash_when=split_end)
    with pytest.raises(Exception, match="crash in batch"):
        stream(spark, tmp_path, first, item_rows=3)
    crashed = max(first.batches)
    assert batch_end(tmp_path, crashed).skip > 0
    # the restarted reader cuts items of 7 rows: the replay must slice them at end.skip
    second = Collect()
    stream(spark, tmp_path, second, item_rows=7)
    assert min(second.batches) == crashed
    assert second.batches[crashed] == first.batches[crashed]
    delivered = [i for b in sorted(first.batches) if b < crashed for i in first.batches[b]]
    assert delivered + second.ids() == ids
    assert not [i for i, n in Counter(delivered + second.ids()).items() if n > 1]


def test_a_missing_schema_history_option_is_named(spark: Any, tmp_path: Path) -> None:
    make_log(tmp_path, [1])
    with pytest.raises(Exception, match="schema_history"):
        stream(spark, tmp_path, Collect(), schema_history="")


@pytest.mark.mariadb
def test_the_real_binlog_resumes_exactly_after_a_restart(
    spark: Any, mariadb: Any, db: str, tmp_path: Path
) -> None:
    file, pos = mariadb.query("SHOW MASTER STATUS")[0][:2]
    mariadb.execute(f"CREATE TABLE `{db}`.t (id INT PRIMARY KEY, v VARCHAR(10))")
    mariadb.execute(*(f"INSERT INTO `{db}`.t VALUES ({i}, 'a{i}')" for i in range(20)))

    def run() -> list[tuple[str, str]]:
        seen: list[tuple[str, str]] = []

        def collect(df: Any, batch_id: int) -> None:
            t = df.toArrow()
            seen.extend(
                (op, key)
                for op, key, table in zip(
                    t["op"].to_pylist(), t["key"].to_pylist(), t["table"].to_pylist(), strict=True
                )  # fmt: skip
                if op != "s" and table == "t"
            )

        query = (
            spark.readStream.format("mysql-cdc")
            .option("host", mariadb.host)
            .option("port", str(mariadb.port))
            .option("user", "root")
            .option("tables", rf"{db}\.t")
            .option("startup", f"position:{file}:{pos}")
            .option("server_id", "6123")
            .option("schema_history", str(tmp_path / "schema_history.jsonl"))
            .load()
            .writeStream.foreachBatch(collect)
            .option("checkpointLocation", str(tmp_path / "checkpoint"))
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination()
        return seen

    assert run() == [("c", f"[{i}]") for i in range(20)]
    mariadb.execute(
        f"UPDATE `{db}`.t SET v = 'b' WHERE id < 3", f"DELETE FROM `{db}`.t WHERE id = 19"
    )
    assert run() == [("u", "[0]"), ("u", "[1]"), ("u", "[2]"), ("d", "[19]")]


def acks(tmp: Path) -> list[FakeOffset]:
    """The offsets the stream acknowledged to the fake source, in order."""
    path = tmp / "log.jsonl.acks"
    if not path.exists():
        return []
    return [FakeOffset.from_json(json.loads(line)) for line in path.read_text().splitlines()]


class WatchAcks(Collect):
    """Collect, also recording what was acknowledged when each batch started to be written."""

    def __init__(self, tmp: Path, crash_when: Any = None) -> None:
        super().__init__(crash_when)
        self.tmp = tmp
        self.acked_before: dict[int, list[FakeOffset]] = {}

    def __call__(self, df: Any, batch_id: int) -> None:
        self.acked_before[batch_id] = acks(self.tmp)
        super().__call__(df, batch_id)


def test_the_source_is_acknowledged_only_after_the_batch_commits(
    spark: Any, tmp_path: Path
) -> None:
    """``ack(end)`` reaches the source only once Spark committed the batch ending at ``end``:
    never while the batch is written, never for a batch that failed; after a restart the
    replayed batch's end is acknowledged once it commits."""
    _, ids = make_log(tmp_path, [1, 5, 400, 2, 300, 1])
    first = WatchAcks(tmp_path, crash_when=lambda batch_id: batch_id == 2)
    with pytest.raises(Exception, match="crash in batch"):
        stream(spark, tmp_path, first)
    assert sorted(first.batches) == [0, 1, 2]
    for batch_id, acked in first.acked_before.items():
        assert all(a < batch_end(tmp_path, batch_id) for a in acked), batch_id
    failed = batch_end(tmp_path, 2)
    assert all(a < failed for a in acks(tmp_path)), "a failed batch was acknowledged"
    assert batch_end(tmp_path, 1) in acks(tmp_path)  # committed before batch 2 was planned

    second = WatchAcks(tmp_path)
    stream(spark, tmp_path, second)
    assert first.ids()[: -len(first.batches[2])] + second.ids() == ids
    for batch_id, acked in second.acked_before.items():
        assert all(a < batch_end(tmp_path, batch_id) for a in acked), batch_id
    done = acks(tmp_path)
    assert done == sorted(done)
    ends = {batch_end(tmp_path, b) for b in [*first.batches, *second.batches]}
    assert set(done) <= ends
    assert len(second.batches) > 1
    assert failed in done, "the replayed batch committed but was never acknowledged"
