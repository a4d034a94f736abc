"""The upkeep of the sink's Delta tables (compaction, vacuum) on tables the sink wrote: every
version within ``retain`` stays readable, a snapshot chunk's file linked in for its commit is
kept, files no version holds are deleted once older than ``retain`` (a crashed write's, removals
a checkpoint no longer lists), compaction keeps every row and the batches' transaction
identifiers (through a checkpoint too), the schedule, the ``sink.maintenance`` keys and
``sparkcdc compact`` on a stopped pipeline and its refusals."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable

from sparkcdc.cli.main import EXIT_ERROR, EXIT_OK, EXIT_USAGE, run
from sparkcdc.config.load import load_config_text
from sparkcdc.config.model import MaintenanceConfig
from sparkcdc.core.errors import ConfigError
from sparkcdc.sinks.changes import run_files
from sparkcdc.sinks.delta import commits
from sparkcdc.sinks.delta.sink import DeltaSink
from sparkcdc.sinks.delta.upkeep import RETENTION_KEYS, delta_tables, upkeep_table
from sparkcdc.sinks.delta.upkeep import schedule as delta_schedule
from sparkcdc.spark.pipeline.exposition import render
from sparkcdc.spark.pipeline.metrics import families
from sparkcdc.spark.pipeline.run_lock import hold_run_lock
from tests.cases.envelopes import Changes
from tests.cases.exposition import parse, values
from tests.cases.schemas import ACCOUNTS

A = ACCOUNTS
APP = "pipeline-1"


def account(key: int, balance: int) -> dict[str, Any]:
    return {"id": key, "owner": f"o{key}", "balance": f"{balance}.00"}


def batches(sink: DeltaSink, count: int, first: int = 0) -> None:
    """``count`` micro-batches: each updates account 1 (a MERGE rewrites the replica's file)
    and inserts one more account."""
    for b in range(first, first + count):
        changes = Changes(pos=1000 + 100 * b)
        if b == 0:
            changes.schema(A).change("c", A, after=account(1, 0))
        else:
            changes.change("u", A, account(1, b - 1), account(1, b))
        changes.change("c", A, after=account(b + 2, b))
        sink.write(changes.table(), b)


def rows(path: Path, version: int | None = None) -> list[dict[str, Any]]:
    table = DeltaTable(str(path), version=version).to_pyarrow_table()
    return sorted(table.to_pylist(), key=lambda r: (r.get("id") or 0, str(r)))


def on_disk(path: Path) -> set[str]:
    return {p.name for p in path.iterdir() if p.name.endswith(".parquet")}


def parquet_file(path: Path, age: float) -> Path:
    """A data file at ``path`` written ``age`` seconds ago."""
    pq.write_table(pa.table({"id": [7]}), path)
    then = time.time() - age
    os.utime(path, (then, then))
    return path


def test_vacuum_keeps_the_versions_within_retain_and_files_about_to_be_committed(
    tmp_path: Path,
) -> None:
    """A snapshot task's data file, written two days ago and linked into the table's folder for
    its commit as the sink links it, is kept; a file a crashed write left two days ago is not."""
    sink = DeltaSink(str(tmp_path), APP)
    batches(sink, 8)
    replica = tmp_path / "shop" / "accounts"
    versions = range(DeltaTable(str(replica)).version() + 1)
    before = {v: rows(replica, v) for v in versions}
    ever = {Path(u).name for v in versions for u in DeltaTable(str(replica), version=v).file_uris()}
    task_file = parquet_file(tmp_path / "split.replica.parquet", age=2 * 86400)
    staged = replica / "part-5d2c0f0e-5c1a-5000-8000-000000000000.snappy.parquet"
    run_files.link_file(task_file, staged)
    left = parquet_file(replica / "part-00000-crashed-c000.snappy.parquet", age=2 * 86400)

    kept = upkeep_table("shop.accounts", str(replica), retain=3600, small_files=10)
    assert (kept.vacuumed, staged.exists(), left.exists()) == (1, True, False)
    changes = list((replica / "_change_data").glob("*.parquet"))
    assert changes  # the replica's change data feed (sinks/delta/change_data.py)
    assert {v: rows(replica, v) for v in versions} == before  # removed less than an hour ago

    done = upkeep_table("shop.accounts", str(replica), retain=0, small_files=10)
    live = {Path(u).name for u in DeltaTable(str(replica)).file_uris()}
    # + the change data files (named by removed versions alone) + staged: 0s old
    assert done.vacuumed == len(ever - live) + len(changes) + 1 and done.vacuumed_bytes > 0
    assert not list((replica / "_change_data").glob("*.parquet"))
    assert rows(replica) == before[versions[-1]] and on_disk(replica) == live
    with pytest.raises(Exception, match="(?i)not found|no such file|no files in log segment"):
        rows(replica, versions[-2])  # older than retain: its files are gone


def test_a_removed_file_a_checkpoint_no_longer_lists_is_deleted(tmp_path: Path) -> None:
    """delta-rs's checkpoints list only the removals within the retention: the files of older
    ones are found in the folder, written before ``retain``, and deleted too."""
    batches(DeltaSink(str(tmp_path), APP), 6)
    replica = tmp_path / "shop" / "accounts"
    upkeep_table("shop.accounts", str(replica), retain=3600, small_files=10)
    table = DeltaTable(str(replica))
    table.alter.set_table_properties(dict.fromkeys(RETENTION_KEYS, "interval 0 seconds"))
    table.create_checkpoint()  # lists no removal: every one is older than 0 s
    assert len(on_disk(replica)) > len(DeltaTable(str(replica)).file_uris())
    upkeep_table("shop.accounts", str(replica), retain=0, small_files=10)
    assert on_disk(replica) == {Path(u).name for u in DeltaTable(str(replica)).file_uris()}


def test_compaction_keeps_the_rows_and_the_batches_already_applied(tmp_path: Path) -> None:
    sink = DeltaSink(str(tmp_path), APP)
    batches(sink, 30)
    log = tmp_path / "shop" / "accounts__changelog"
    replica = tmp_path / "shop" / "accounts"
    logged, live = rows(log), rows(replica)
    assert len(on_disk(log)) == 30

    done = {n: upkeep_table(n, p, retain=0, small_files=10) for n, p in delta_tables(str(tmp_path))}
    assert (done["shop.accounts__changelog"].compacted, done["shop.accounts__changelog"].written) \
        == (30, 1)  # fmt: skip
    assert len(on_disk(log)) == 1 and len(on_disk(replica)) == 1
    assert rows(log) == logged and rows(replica) == live
    # a checkpoint, and the log files before it removed (retain 0): the identifiers stay
    for path in (log, replica):
        table = DeltaTable(str(path))
        table.create_checkpoint()
        table.cleanup_metadata()
        assert not (path / "_delta_log" / "00000000000000000000.json").exists()
        assert commits.already_applied(str(path), APP, 29)
    replay = DeltaSink(str(tmp_path), APP)  # a restarted run writes its last batch again
    batches(replay, 1, first=29)
    assert replay.last_report is not None and replay.last_report.skipped == ["shop.accounts"]
    assert rows(log) == logged and rows(replica) == live


def test_the_schedule_runs_between_batches_every_interval(tmp_path: Path) -> None:
    """Never before a run's first batch (it may be the replay of the batch the last run stopped
    in); the clock starts at a new lake's first batches; then once ``every`` has passed, the
    time kept across runs."""
    now = [1000.0]
    schedule = delta_schedule(str(tmp_path), every=60, retain=0, clock=lambda: now[0])
    sink = DeltaSink(str(tmp_path), APP, upkeep=schedule)
    frame = _Frame(Changes().schema(A).change("c", A, after=account(1, 0)).table())
    sink(frame, 0)
    sink(_Frame(Changes(pos=2000).change("c", A, after=account(2, 0)).table()), 1)
    assert schedule.runs == 0  # a new lake: the clock started at 1000
    assert not delta_schedule(str(tmp_path), every=60, retain=0, clock=lambda: 1059.0).due()
    now[0] += 60
    sink(_Frame(Changes(pos=3000).change("c", A, after=account(3, 0)).table()), 2)
    assert schedule.runs == 1 and schedule.last_s == 1060.0
    now[0] += 59
    sink(_Frame(Changes(pos=4000).change("c", A, after=account(4, 0)).table()), 3)
    assert schedule.runs == 1
    now[0] += 1
    assert schedule.due()
    restarted = delta_schedule(str(tmp_path), every=60, retain=0, clock=lambda: now[0] - 30)
    assert not restarted.due()  # the last run's time is kept in the sink folder
    assert not delta_schedule(str(tmp_path), every=0, retain=0).due()


class _Frame:
    def __init__(self, table: pa.Table) -> None:
        self.table = table

    def toArrow(self) -> pa.Table:  # noqa: N802 - Spark's name
        return self.table


BASE = "source: {host: db, user: u, tables: [a.b]}\npipeline: {checkpoint: /cp}\n"


def test_sink_maintenance_keys() -> None:
    cfg = load_config_text(BASE + "sink: {path: /lake}\n")
    assert cfg.sink.maintenance == MaintenanceConfig(600.0, 3600.0)
    cfg = load_config_text(BASE + "sink: {path: /l, maintenance: {compact_every: 5m, retain: 7d}}")
    assert cfg.sink.maintenance == MaintenanceConfig(300.0, 7 * 86400.0)
    cfg = load_config_text(BASE + "sink: {path: /l, maintenance: {compact_every: off}}")
    assert not cfg.sink.maintenance.enabled
    for bad, key in (
        ("{compact_every: soon}", "sink.maintenance.compact_every"),
        ("{retain: -1h}", "sink.maintenance.retain"),
        ("{retain: 20000d}", "sink.maintenance.retain"),
        ("{every: 1m}", "sink.maintenance.every"),
        ("7d", "sink.maintenance"),
    ):
        with pytest.raises(ConfigError) as refused:
            load_config_text(BASE + f"sink: {{path: /l, maintenance: {bad}}}")
        assert refused.value.fields["key"] == key and str(refused.value).startswith(key)


def pipeline(tmp_path: Path) -> Path:
    cfg = tmp_path / "pipeline.yaml"
    cfg.write_text(
        f"source: {{host: db, user: u, tables: [shop.accounts]}}\n"
        f"sink: {{path: {tmp_path}, maintenance: {{retain: 0s}}}}\n"
        f"pipeline: {{checkpoint: {tmp_path / 'cp'}}}\n"
    )
    return cfg


def test_compact_on_a_stopped_pipeline_and_its_refusals(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    batches(DeltaSink(str(tmp_path), APP), 12)
    cfg = pipeline(tmp_path)
    log, replica = tmp_path / "shop" / "accounts__changelog", tmp_path / "shop" / "accounts"
    logged = rows(log)
    spark = tmp_path / "cp" / "spark"
    for folder in ("offsets", "commits"):
        (spark / folder).mkdir(parents=True)
        (spark / folder / "11").write_text("v1\n")
    (spark / "offsets" / "12").write_text("v1\n")  # the last run stopped inside batch 12
    assert run(["compact", str(cfg)]) == EXIT_ERROR
    assert "stopped inside micro-batch 12" in capsys.readouterr().err
    shutil.copy(spark / "offsets" / "12", spark / "commits" / "12")
    with hold_run_lock(tmp_path / "cp" / "sparkcdc"):
        assert run(["compact", str(cfg)]) == EXIT_ERROR
    assert f"is running as process {os.getpid()}" in capsys.readouterr().err
    assert run(["compact", str(cfg), "--tables", "shop\\.nothing"]) == EXIT_USAGE
    assert run(["compact", str(cfg), "--retain", "soon"]) == EXIT_USAGE
    capsys.readouterr()

    assert run(["compact", str(cfg), "--tables", "shop\\..*"]) == EXIT_OK
    printed = capsys.readouterr().out
    assert "upkeep of shop.accounts__changelog: compacted 12 files into 1" in printed
    assert len(on_disk(log)) == 1 and len(on_disk(replica)) == 1  # retain 0s: all vacuumed
    assert rows(log) == logged


def test_the_upkeep_figures_as_metrics(tmp_path: Path) -> None:
    """A run with a schedule shows its upkeep's work; a run without one shows no family."""
    now = [1_700_000_000.0]
    schedule = delta_schedule(str(tmp_path), every=60, retain=0, clock=lambda: now[0])
    sink = DeltaSink(str(tmp_path), APP, upkeep=schedule)
    batches(sink, 12)
    schedule.run()
    found = parse(render(families(sink.figures(), None, now[0])))
    assert values(found, "sparkcdc_upkeep_runs_total") == {(): 1}
    assert values(found, "sparkcdc_upkeep_files_compacted_total") == {(): 12}  # the change log's
    assert values(found, "sparkcdc_upkeep_files_vacuumed_total") == {(): schedule.vacuumed}
    assert schedule.vacuumed >= 12 + 11  # the compacted files and the replica's rewritten ones
    assert values(found, "sparkcdc_upkeep_bytes_vacuumed_total") == {(): schedule.vacuumed_bytes}
    assert values(found, "sparkcdc_upkeep_last_timestamp_seconds") == {(): now[0]}
    plain = parse(render(families(DeltaSink(str(tmp_path), APP).figures(), None, now[0])))
    assert not any(name.startswith("sparkcdc_upkeep_") for name in plain)
