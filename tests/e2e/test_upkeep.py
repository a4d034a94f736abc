"""A pipeline's life on MariaDB as a user runs it, for its Delta tables' upkeep and the
change log's rows that are no log change: ``sparkcdc run`` snapshots a table (its ``r`` rows
name the database, no schema), then streams a minute of small transactions, every micro-batch's
MERGE rewriting the replica's files and appending one to the change log: with
``sink.maintenance`` the files and bytes on disk stay bounded while the Delta versions go up
by the hundred, and the replica equals the source. A TRUNCATE is a ``t`` row of the change log.
``sparkcdc compact`` refuses while the pipeline runs and compacts the stopped pipeline's
tables."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from deltalake import DeltaTable

from sparkcdc.sources.mysql.throwaway import ThrowawayMariaDB
from tests.cases.changelog import source_names
from tests.e2e.cli import write_config
from tests.e2e.incremental_runs import (
    Launch,
    caught_up,
    items_of,
    replica,
    stop,
    wait_for,
)
from tests.e2e.snapshot_workload import Churn, load_items

pytestmark = [pytest.mark.mariadb, pytest.mark.spark, pytest.mark.slow]

STREAM_SECONDS = 60
# Data files a table keeps on disk while it streams: up to SMALL_FILES (10) and the batches of
# one ``compact_every`` live before a run compacts them, and those removed in the last
# ``retain`` plus one ``compact_every`` before a run vacuums them; at two batches a second,
# about 40. Without the upkeep they are one per version, and the test runs 64 versions or more.
BOUND_FILES = 48
MIN_VERSIONS = 64


def on_disk(path: Path) -> tuple[int, int]:
    """The data files in a Delta table's folder (committed, removed and not yet vacuumed, or
    never committed) and their bytes."""
    sizes = [p.stat().st_size for p in path.glob("*.parquet")]
    return len(sizes), sum(sizes)


def live(path: Path) -> tuple[int, int]:
    """The data files of the table's current version and their bytes."""
    table = DeltaTable(str(path))
    sizes = [os.path.getsize(u) for u in table.file_uris()]
    return len(sizes), sum(sizes)


def compact(cfg: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sparkcdc.cli.main", "compact", str(cfg), *args],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def test_a_running_pipeline_keeps_its_tables_bounded(
    mariadb: ThrowawayMariaDB, db: str, tmp_path: Path, launch: Launch
) -> None:
    load_items(mariadb, db, 20000)
    cfg = write_config(
        tmp_path, mariadb, rf"{db}\.items", startup="initial", trigger="500ms",
        extra_sink=", maintenance: {compact_every: 5s, retain: 5s}",
    )  # fmt: skip
    lake = tmp_path / "lake" / db
    table, log = lake / "items", lake / "items__changelog"
    proc = launch(cfg)
    wait_for(proc, lambda: len(replica(table)) == 20000, "the snapshot", timeout=180)
    first = DeltaTable(str(table)).version()
    churn = Churn(mariadb, db, top=40000, seed=9, pause=0.1)
    churn.start()
    most = {"replica": (0, 0), "log": (0, 0)}
    try:
        deadline = time.monotonic() + STREAM_SECONDS
        while time.monotonic() < deadline:  # figures taken every second, nothing waited for
            assert proc.poll() is None, "the pipeline stopped"
            for name, path in (("replica", table), ("log", log)):
                files, size = on_disk(path)
                most[name] = (max(most[name][0], files), max(most[name][1], size))
            time.sleep(1)
    finally:
        churn.halt()
    caught_up(proc, mariadb, lake.parent, [f"{db}.items"])
    versions = DeltaTable(str(table)).version() - first
    # each version's MERGE wrote the replica's files anew: kept, they would be one per version
    assert versions >= MIN_VERSIONS, f"only {versions} micro-batches in {STREAM_SECONDS} s"
    assert most["replica"][0] <= BOUND_FILES and most["log"][0] <= BOUND_FILES, most
    assert most["replica"][1] <= 30 * live(table)[1], (most, live(table))
    history = [h["operation"] for h in DeltaTable(str(log)).history()]
    assert "OPTIMIZE" in history and "VACUUM END" in history

    mariadb.execute(f"TRUNCATE TABLE {db}.items", f"INSERT INTO {db}.items VALUES (1, 0, 'x', 1)")
    caught_up(proc, mariadb, lake.parent, [f"{db}.items"])
    refused = compact(cfg)
    assert refused.returncode == 2 and "is running as process" in refused.stderr, refused.stderr
    stop(proc)

    rows = DeltaTable(str(log)).to_pyarrow_table(columns=["op", "before", "after", "source"])
    truncates = [r for r in rows.to_pylist() if r["op"] == "t"]
    assert [(r["before"], r["after"]) for r in truncates] == [(None, None)]
    assert truncates[0]["source"]["db"] == db and truncates[0]["source"]["schema"] is None
    assert source_names(log, "r") == {(db, None, "items", True)}  # the initial snapshot's

    done = compact(cfg, "--retain", "0s")
    assert done.returncode == 0, done.stderr
    assert f"upkeep of {db}.items__changelog: compacted" in done.stdout
    assert on_disk(table) == live(table) and on_disk(log) == live(log) == (1, live(log)[1])
    assert replica(table) == items_of(mariadb, db)
    assert DeltaTable(str(log)).count() == rows.num_rows
