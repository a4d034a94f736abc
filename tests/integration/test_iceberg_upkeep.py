"""The upkeep of the Iceberg sink's tables against the embedded SQL catalog (no Spark): small files
compacted into one ``replace`` snapshot with every row and the batch marker kept (a column added
on the way reads null in the older files), snapshots older than ``retain`` expired with exactly
the files only they read deleted, the schedule between micro-batches, and ``sparkcdc compact``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pyarrow as pa
import pytest
from pyiceberg.table import Table

from sparkcdc.cli.main import EXIT_OK, run
from sparkcdc.config.model import SinkConfig
from sparkcdc.core.schema import TableSchema
from sparkcdc.sinks.iceberg.catalog import open_catalog
from sparkcdc.sinks.iceberg.sink import IcebergSink
from sparkcdc.sinks.iceberg.tables import IcebergTables, holds
from sparkcdc.sinks.iceberg.upkeep import IcebergKeeper
from sparkcdc.sinks.storage import LakeStorage
from sparkcdc.sinks.upkeep import Schedule
from sparkcdc.sources.mysql.schema.column_types import column
from tests.cases.envelopes import Changes
from tests.cases.schemas import ACCOUNTS
from tests.integration.test_iceberg_sink import Frame, lake

A = ACCOUNTS
NOTED = TableSchema("shop", "accounts", (*A.columns, column("note", "varchar")), primary_key=A.key)
APP = "pipeline-1"
ADDED_AT = 15  # the batch that adds the column ``note``


def account(key: int, balance: int, note: str | None = None) -> dict[str, Any]:
    found = {"id": key, "owner": f"o{key}", "balance": f"{balance}.00"}
    return found if note is None else {**found, "note": note}


def batches(sink: IcebergSink, count: int, first: int = 0) -> None:
    """``count`` micro-batches: each updates account 1 (the replica's file rewritten) and
    inserts one more account; from batch ADDED_AT on the table has the column ``note``."""
    for b in range(first, first + count):
        schema = NOTED if b >= ADDED_AT else A
        note = f"n{b}" if b >= ADDED_AT else None
        changes = Changes(pos=1000 + 100 * b)
        if b == 0:
            changes.schema(A).change("c", A, after=account(1, 0))
        else:
            if b == ADDED_AT:
                changes.alter(A, NOTED, "ALTER TABLE accounts ADD COLUMN note VARCHAR(20)")
            changes.change("u", schema, account(1, b - 1), account(1, b, note))
        changes.change("c", schema, after=account(b + 2, b, note))
        sink(Frame(changes.table()), b)


def table(config: SinkConfig, name: str) -> Table:
    return open_catalog(config).load_table(("shop", name))


def rows(found: Table, snapshot_id: int | None = None) -> list[dict[str, Any]]:
    scanned = found.scan(snapshot_id=snapshot_id).to_arrow().to_pylist()
    return sorted(scanned, key=lambda r: (r.get("id") or 0, str(r)))


def live_files(found: Table) -> set[str]:
    return {urlsplit(t.file.file_path).path for t in found.scan().plan_files()}


def data_on_disk(found: Table) -> set[str]:
    folder = Path(urlsplit(found.location()).path) / "data"
    return {str(p) for p in folder.glob("*.parquet")}


def test_compaction_keeps_every_row_and_the_batches_already_applied(tmp_path: Path) -> None:
    config = lake(tmp_path)
    sink = IcebergSink(config, lambda: APP)
    batches(sink, 30)
    log, replica = table(config, "accounts__changelog"), table(config, "accounts")
    logged, held = rows(log), rows(replica)
    assert len(live_files(log)) == 30
    keeper = IcebergKeeper(IcebergTables(open_catalog(config)))
    assert keeper.tables() == ["shop.accounts", "shop.accounts__changelog"]
    assert keeper.tables([r"shop\.nothing"]) == []
    theirs = pa.schema([("id", pa.int64())])
    other = open_catalog(config).create_table(("shop", "theirs"), theirs)
    other.append(pa.table({"id": pa.array([1], pa.int64())}))  # another writer's table: left
    assert keeper.tables() == ["shop.accounts", "shop.accounts__changelog"]

    done = keeper.keep("shop.accounts__changelog", retain=3600, small_files=10)
    assert (done.compacted, done.written, done.files) == (30, 1, 1)
    log = table(config, "accounts__changelog")
    current = log.current_snapshot()
    assert current is not None and current.summary is not None
    assert current.summary.operation.value == "replace"
    assert rows(log) == logged  # the rows of batches before ADDED_AT read a null note
    assert [r["after"]["note"] for r in logged[:2]] == [None, None]
    assert holds(log, APP, 29) and not holds(log, APP, 30)

    replay = IcebergSink(config, lambda: APP)  # a restarted run writes its last batch again
    batches(replay, 1, first=29)
    assert rows(table(config, "accounts__changelog")) == logged
    assert rows(table(config, "accounts")) == held
    batches(replay, 1, first=30)  # and the next batch goes on from the compacted table
    assert len(rows(table(config, "accounts__changelog"))) == len(logged) + 2


def test_expiry_keeps_the_snapshots_of_retain_and_deletes_only_what_no_other_reads(
    tmp_path: Path,
) -> None:
    config = lake(tmp_path)
    sink = IcebergSink(config, lambda: APP)
    batches(sink, 12)
    keeper = IcebergKeeper(IcebergTables(open_catalog(config)))
    replica = table(config, "accounts")
    history = [s.snapshot_id for s in replica.snapshots()]
    held = rows(replica)
    middle = history[len(history) // 2]
    then = rows(replica, middle)

    kept = keeper.keep("shop.accounts", retain=3600, small_files=100)
    assert (kept.expired, kept.vacuumed) == (0, 0)
    replica = table(config, "accounts")
    assert [s.snapshot_id for s in replica.snapshots()] == history and rows(replica, middle) == then
    assert replica.properties["history.expire.max-snapshot-age-ms"] == "3600000"
    assert replica.properties["write.metadata.delete-after-commit.enabled"] == "true"
    assert len(data_on_disk(replica)) > len(live_files(replica))  # each batch rewrote the file

    done = keeper.keep("shop.accounts", retain=0, small_files=100)
    replica = table(config, "accounts")
    assert done.expired == len(history) - 1 and done.vacuumed > 0 and done.vacuumed_bytes > 0
    assert [s.snapshot_id for s in replica.snapshots()] == history[-1:]
    assert data_on_disk(replica) == live_files(replica) and rows(replica) == held
    manifests = Path(urlsplit(replica.location()).path) / "metadata"
    lists = {p.name for p in manifests.glob("snap-*.avro")}
    current = replica.current_snapshot()
    assert current is not None and lists == {Path(urlsplit(current.manifest_list).path).name}
    assert holds(replica, APP, 11)


def test_a_data_file_no_snapshot_reads_goes_once_older_than_retain(tmp_path: Path) -> None:
    """A crashed write's data file (no commit names it) is deleted once it is older than
    ``retain``; one written within ``retain`` stays, as a commit on the way may name it."""
    config = lake(tmp_path)
    sink = IcebergSink(config, lambda: APP)
    batches(sink, 2)
    keeper = IcebergKeeper(IcebergTables(open_catalog(config)))
    replica = table(config, "accounts")
    live = live_files(replica)
    some = Path(next(iter(live)))
    old = some.with_name("00000-0-crashed.parquet")
    fresh = some.with_name("00000-0-on-the-way.parquet")
    for orphan in (old, fresh):
        orphan.write_bytes(some.read_bytes())
    os.utime(old, (0, os.stat(old).st_mtime - 7200))

    kept = keeper.keep("shop.accounts", retain=3600, small_files=100)
    assert not old.exists() and fresh.exists()
    assert kept.vacuumed == 1 and kept.vacuumed_bytes == some.stat().st_size
    replica = table(config, "accounts")
    assert live_files(replica) == live and rows(replica)


def test_the_schedule_runs_between_batches_and_compact_keeps_a_stopped_pipeline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = lake(tmp_path)
    now = [1000.0]
    tables = IcebergTables(open_catalog(config))
    storage = LakeStorage(config.path)
    schedule = Schedule(storage, IcebergKeeper(tables), every=60, retain=0, clock=lambda: now[0])
    sink = IcebergSink(config, lambda: APP, upkeep=schedule, tables=tables)
    batches(sink, 12)
    assert schedule.runs == 0  # a new lake: the clock started with its first batch
    now[0] += 60
    batches(sink, 1, first=12)  # the upkeep runs first (12 files of each table), then batch 12
    assert schedule.runs == 1 and schedule.compacted == 12 + 12 and schedule.vacuumed > 0
    figures = sink.figures().upkeep
    assert figures is not None and figures.runs == 1 and figures.compacted == 24
    assert len(live_files(table(config, "accounts__changelog"))) == 2  # compacted, then batch 12

    cfg = tmp_path / "pipeline.yaml"
    cfg.write_text(
        f"source: {{host: db, user: u, tables: [shop.accounts]}}\n"
        f"sink: {{type: iceberg, path: {config.path}}}\n"
        f"pipeline: {{checkpoint: {tmp_path / 'cp'}}}\n"
    )
    assert run(["compact", str(cfg), "--retain", "0s"]) == EXIT_OK
    printed = capsys.readouterr().out
    assert "upkeep of shop.accounts__changelog: compacted 2 files into 1; expired " in printed
    log = table(config, "accounts__changelog")
    assert len(log.snapshots()) == 1 and data_on_disk(log) == live_files(log)
    assert os.path.exists(storage.join("_sparkcdc", "upkeep.json"))
