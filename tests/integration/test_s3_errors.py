"""Regression tests of the fault campaign's ``s3-errors`` and ``s3-slow``: the lake's object
storage answering 500/503 or slowly, through the campaign's HTTP proxy before moto's server.

The sink rides out a spell of errors (delta-rs and its own files retried for a while,
sinks/store_retry.py); a longer one ends the batch with one sentence naming the store and the
way out, never the store's raw answer, and the batch written again commits each change once."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from sparkcdc.core.errors import StoreUnavailable
from sparkcdc.core.offset_events import notice_batch
from sparkcdc.sinks import store_retry
from sparkcdc.sinks.delta.lake_check import check_lake
from sparkcdc.sinks.delta.sink import DeltaSink
from sparkcdc.sinks.storage import LakeStorage
from sparkcdc.sources.mysql.offset import BinlogOffset
from tests.cases.envelopes import FILE, Changes
from tests.cases.s3 import SECRET_KEY, MotoS3
from tests.cases.schemas import ACCOUNTS
from tests.faults.http_proxy import Errors, Pass, Slow
from tests.faults.store_proxy import StoreProxy

pytestmark = [pytest.mark.s3]

A = ACCOUNTS
APP = "pipeline-1"


class Frame:
    """What ``foreachBatch`` hands the sink, as far as it reads it."""

    def __init__(self, rows: pa.Table) -> None:
        self.rows = rows

    def toArrow(self) -> pa.Table:  # noqa: N802 (pyspark's name)
        return self.rows


def batch(b: int) -> Frame:
    """Micro-batch ``b``: account 1 created (b = 0) or updated, one more account created."""
    changes = Changes(pos=1000 + 100 * b)
    if b == 0:
        changes.schema(A).change("c", A, after=account(1, 0))
    else:
        changes.change("u", A, account(1, b - 1), account(1, b))
    return Frame(changes.change("c", A, after=account(b + 2, b)).table())


def account(key: int, balance: int) -> dict[str, Any]:
    return {"id": key, "owner": f"o{key}", "balance": f"{balance}.00"}


def through(s3: MotoS3, proxy: StoreProxy) -> LakeStorage:
    """A new lake on moto's server, reached through the proxy."""
    return LakeStorage(f"s3://{s3.bucket()}/lake", s3.options(AWS_ENDPOINT_URL=proxy.endpoint))


def held(s3: MotoS3, lake: LakeStorage) -> tuple[list[tuple[int, str]], list[tuple[str, int]]]:
    """The replica's (id, balance) and the change log's (op, id), read from moto directly."""
    options = s3.options()
    replica = DeltaTable(lake.join("shop", "accounts"), storage_options=options)
    log = DeltaTable(lake.join("shop", "accounts__changelog"), storage_options=options)
    rows = sorted((r["id"], str(r["balance"])) for r in replica.to_pyarrow_table().to_pylist())
    changes = sorted((r["op"], r["after"]["id"]) for r in log.to_pyarrow_table().to_pylist())
    return rows, changes


def test_s3_errors_for_seconds_are_ridden_out(s3: MotoS3, proxy: StoreProxy) -> None:
    """503 for 4 s while a batch is written (delta-rs's commits), then 500 with the connection
    closed while the sink writes its own files: every call waits the spell out."""
    lake = through(s3, proxy)
    sink = DeltaSink(lake, APP)
    sink.write_batch(batch(0), 0)
    proxy.set(Errors(503, retry_after=1), heal_after=4.0)
    sink.write_batch(batch(1), 1)
    failed = proxy.counts["failed"]
    assert failed > 0
    proxy.set(Errors(500, close=True), heal_after=3.0)
    lake.write_text(lake.join("_sparkcdc", "note"), "kept")
    assert lake.read_text(lake.join("_sparkcdc", "note")) == "kept"
    assert proxy.counts["failed"] > failed
    assert held(s3, lake) == ([(1, "1.00"), (2, "0.00"), (3, "1.00")],
                              [("c", 1), ("c", 2), ("c", 3), ("u", 1)])  # fmt: skip


def test_s3_errors_past_the_retries_end_in_one_sentence_and_the_batch_again_writes_once(
    s3: MotoS3, proxy: StoreProxy, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store_retry, "RETRY_S", 2.0)
    lake = through(s3, proxy)
    DeltaSink(lake, APP).write_batch(batch(0), 0)
    proxy.set(Errors(500))
    sink = DeltaSink(lake, APP)
    with pytest.raises(StoreUnavailable) as failed:
        sink.write_batch(batch(1), 1)
    sentence = str(failed.value)
    assert sentence.startswith(f"the object storage of {lake.uri} at {proxy.endpoint} kept")
    assert "(HTTP 500" in sentence and "run the pipeline again" in sentence
    assert "\n" not in sentence and "<" not in sentence and SECRET_KEY not in sentence
    assert sink.figures().error is failed.value  # what `sparkcdc run` prints
    with pytest.raises(StoreUnavailable, match="HTTP 500 InternalError"):
        lake.write_text(lake.join("_sparkcdc", "note"), "lost")  # the sink's own files too
    proxy.set(Pass())
    again = DeltaSink(lake, APP)  # the pipeline run again: the batch written anew
    again.write_batch(batch(1), 1)
    again.write_batch(batch(2), 2)
    replica, log = held(s3, lake)
    assert replica == [(1, "2.00"), (2, "0.00"), (3, "1.00"), (4, "2.00")]
    assert log == [("c", 1), ("c", 2), ("c", 3), ("c", 4), ("u", 1), ("u", 1)]  # each once


def test_s3_errors_before_a_run_are_named_as_such_not_as_a_setting(
    s3: MotoS3, proxy: StoreProxy, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lake check before Spark starts: a store answering 503 is no wrong setting."""
    monkeypatch.setattr(store_retry, "RETRY_S", 1.0)
    lake = through(s3, proxy)
    proxy.set(Errors(503, retry_after=1))
    with pytest.raises(StoreUnavailable, match=r"kept failing for \d s \(HTTP 503 SlowDown\)"):
        check_lake(lake)
    proxy.set(Pass())
    check_lake(lake)


def test_s3_slow_answers_are_waited_for(s3: MotoS3, proxy: StoreProxy) -> None:
    lake = through(s3, proxy)
    sink = DeltaSink(lake, APP)
    sink.write_batch(batch(0), 0)
    proxy.set(Slow(delay=0.3, rate=1 << 20))
    sink.write_batch(batch(1), 1)
    proxy.set(Pass())
    assert proxy.counts["slowed"] > 0
    assert held(s3, lake)[0] == [(1, "1.00"), (2, "0.00"), (3, "1.00")]


def test_s3_errors_while_a_snapshot_chunk_uploads_never_leave_its_file_missing(
    s3: MotoS3, proxy: StoreProxy, tmp_path: Path
) -> None:
    """Found by the campaign (s3-errors in the initial snapshot, PostgreSQL → Delta on S3): a
    chunk's data file uploaded while the store failed was committed but never stored, as
    ``pyarrow.fs.copy_files`` only printed its upload's last error. Every upload that returns
    has stored the whole file."""
    lake = through(s3, proxy)
    direct = LakeStorage(lake.uri, s3.options())
    chunk = tmp_path / "chunk.parquet"
    chunk.write_bytes(os.urandom(300_000))
    for n in range(3):  # the upload begins (POST), its part fails (PUT)
        proxy.set(Errors(500 if n % 2 else 503, methods=("PUT",)), heal_after=2.0 + n)
        target = lake.join("shop", "accounts", f"part-{n}.snappy.parquet")
        lake.copy_in(str(chunk), target)
        stored = direct.filesystem.get_file_info(direct._where(target))
        assert stored.size == chunk.stat().st_size, (n, stored)
    assert proxy.counts["failed"] > 0


def test_s3_slow_incremental_snapshot_ends_beside_changes_in_one_batch(
    s3: MotoS3, proxy: StoreProxy
) -> None:
    """Found by the campaign (s3-slow during an incremental snapshot, PostgreSQL → Delta on
    S3): the slow store put the snapshot's last notice, ``completed``, which names no table,
    into the batch of a table's changes. The sink opened a table of that empty name, which a
    folder shrugs off and object storage refuses ("empty path segment"), every run again."""
    lake = through(s3, proxy)
    sink = DeltaSink(lake, APP)
    sink.write_batch(batch(0), 0)
    changes = batch(1).rows
    done = notice_batch([("", "", {"type": "completed"})], BinlogOffset(FILE, 9000), 0)
    sink.write_batch(Frame(pa.concat_tables([changes, pa.Table.from_batches([done])])), 1)
    assert held(s3, lake)[0] == [(1, "1.00"), (2, "0.00"), (3, "1.00")]
