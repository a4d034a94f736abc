"""The Iceberg sink's upkeep in a running pipeline on MariaDB: ``sparkcdc run`` snapshots a table,
then streams small transactions for half a minute, every micro-batch committing snapshots of the
replica (copy-on-write) and the change log; with ``sink.maintenance`` the data files on disk
stay bounded while the snapshots go up by the dozen, the replica equals the source, and
``sparkcdc compact`` on the stopped pipeline leaves one snapshot and one data file per table."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from sparkcdc.sources.mysql.throwaway import ThrowawayMariaDB
from tests.e2e.cli import write_config
from tests.e2e.iceberg_lake import IcebergLake, as_iceberg
from tests.e2e.incremental_runs import COLUMNS, Launch, items_of, stop, wait_for
from tests.e2e.snapshot_workload import Churn, load_items

pytestmark = [pytest.mark.mariadb, pytest.mark.spark, pytest.mark.slow]

STREAM_SECONDS = 30
# Data files on disk per table: up to SMALL_FILES (10) and one ``compact_every`` of batches
# before a run compacts them, and those of the last ``retain`` plus one ``compact_every`` before
# a run deletes them; at two batches a second, about 40. Without the upkeep: one or more per
# snapshot, and the test commits 20 snapshots of each table or more.
BOUND_FILES = 48
MIN_BATCHES = 20


def on_disk(lake: IcebergLake, db: str, table: str) -> int:
    """The data files in the table's data folder (live, of older snapshots, or of none)."""
    location = lake.catalog.load_table((db, table)).location()
    return len(list((Path(urlsplit(location).path) / "data").glob("*.parquet")))


def live(lake: IcebergLake, db: str, table: str) -> int:
    return len(list(lake.catalog.load_table((db, table)).scan().plan_files()))


def rows(lake: IcebergLake, db: str) -> list[tuple[Any, ...]]:
    if lake.snapshots(db, "items") < 0:
        return []
    held = lake.arrow(db, "items").select(COLUMNS).to_pylist()
    return sorted(tuple(r[c] for c in COLUMNS) for r in held)


@pytest.mark.extended
def test_a_running_pipeline_keeps_its_iceberg_tables_bounded(
    mariadb: ThrowawayMariaDB, db: str, tmp_path: Path, launch: Launch
) -> None:
    load_items(mariadb, db, 5000)
    cfg = as_iceberg(write_config(
        tmp_path, mariadb, rf"{db}\.items", startup="initial", trigger="500ms",
        extra_sink=", maintenance: {compact_every: 5s, retain: 5s}",
    ))  # fmt: skip
    lake = IcebergLake(tmp_path / "lake")
    proc = launch(cfg)
    wait_for(proc, lambda: len(rows(lake, db)) == 5000, "the snapshot", timeout=180)
    churn = Churn(mariadb, db, top=10000, seed=9, pause=0.1)
    churn.start()
    started_ms = time.time() * 1000
    most = {"items": 0, "items__changelog": 0}
    try:
        deadline = time.monotonic() + STREAM_SECONDS
        while time.monotonic() < deadline:  # figures taken every second, nothing waited for
            assert proc.poll() is None, "the pipeline stopped"
            for table in most:
                most[table] = max(most[table], on_disk(lake, db, table))
            time.sleep(1)
    finally:
        churn.halt()
    wait_for(proc, lambda: rows(lake, db) == items_of(mariadb, db), "the replica", timeout=90)
    stop(proc)
    log = lake.catalog.load_table((db, "items__changelog"))
    marks = [v for k, v in log.properties.items() if k.startswith("sparkcdc.batch.")]
    assert len(marks) == 1 and int(marks[0]) >= MIN_BATCHES, marks
    oldest_ms = min(s.timestamp_ms for s in log.snapshots())  # the initial snapshot's expired
    assert oldest_ms > started_ms, (oldest_ms, started_ms)
    assert live(lake, db, "items__changelog") < int(marks[0]) / 2  # one per batch, compacted
    assert max(most.values()) <= BOUND_FILES, most

    count = log.scan().to_arrow().num_rows
    done = subprocess.run(
        [sys.executable, "-m", "sparkcdc.cli.main", "compact", str(cfg), "--retain", "0s"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert f"upkeep of {db}.items__changelog: compacted" in done.stdout, done.stdout
    for table in most:
        assert lake.snapshots(db, table) == 1
        assert on_disk(lake, db, table) == live(lake, db, table) == 1
    assert rows(lake, db) == items_of(mariadb, db)
    assert lake.catalog.load_table((db, "items__changelog")).scan().to_arrow().num_rows == count
