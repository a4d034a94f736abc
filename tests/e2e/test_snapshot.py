"""The parallel snapshot through ``sparkcdc run``, as a user runs it.

``startup: initial`` while a writer churns every part of the key space: afterwards the replica
equals the source row by row, the change log holds one ``r`` row per snapshotted key and never a
change older than that key's snapshot row, and the splits of the table ran in two Spark tasks at
the same time. ``kill -9`` mid-snapshot, five randomized crashes in one snapshot: each restart
resumes without reading finished splits again, and the end equals the source. ``startup:
snapshot`` copies tables of every key shape (composite, case-insensitive strings, empty, growing,
no primary key) and exits; a transfer workload proves the copy is one consistent cut of the log.
"""

from __future__ import annotations

import contextlib
import random
import time
from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable

from sparkcdc.sources.mysql.throwaway import ThrowawayMariaDB
from tests.e2e.cli import run, write_config
from tests.e2e.snapshot_runs import (
    ITEM_COLUMNS,
    check_changelog,
    crash_mid_snapshot,
    ran_in_parallel,
    replica,
    snapshot_source,
    snapshot_then_log,
    source_items,
    split_metas,
)
from tests.e2e.snapshot_workload import Churn, Transfers, load_items

pytestmark = [pytest.mark.mariadb, pytest.mark.spark, pytest.mark.slow]


def test_initial_snapshot_under_concurrent_writes_then_the_log(
    mariadb: ThrowawayMariaDB, tmp_path: Path
) -> None:
    db = "snap_initial"
    mariadb.execute(f"DROP DATABASE IF EXISTS {db}", f"CREATE DATABASE {db}")
    load_items(mariadb, db, 30000)
    churn = Churn(mariadb, db, top=60000, seed=7)
    cfg = write_config(
        tmp_path, mariadb, rf"{db}\.items", startup="initial", extra_source=snapshot_source()
    )
    snapshot_then_log(cfg, tmp_path, churn)

    lake = tmp_path / "lake" / db
    assert churn.commits > 100
    assert replica(lake / "items", ITEM_COLUMNS) == source_items(mariadb, db)
    check_changelog(lake / "items__changelog")

    metas = split_metas(tmp_path, f"{db}.items")
    assert len(metas) >= 30
    assert sum(m["window_changes"] for m in metas) > 0  # windows did see writes
    assert ran_in_parallel(metas), "no two splits ran in different Spark tasks at the same time"


def test_kill_9_mid_snapshot_resumes_without_rereading_finished_splits(
    mariadb: ThrowawayMariaDB, tmp_path: Path
) -> None:
    """TRIALS crashes in one snapshot, each at a random moment after new splits finished (the
    later ones while the snapshot resumes from the crash before): no restart reads a split
    finished before it again, and the end equals the source."""
    rng = random.Random(500)
    db, splits = "snap_crash", 60
    table = f"{db}.items"
    mariadb.execute(f"DROP DATABASE IF EXISTS {db}", f"CREATE DATABASE {db}")
    load_items(mariadb, db, splits * 1000)
    cfg = write_config(
        tmp_path,
        mariadb,
        rf"{db}\.items",
        startup="initial",
        extra_source=snapshot_source(chunk=1000, batch_rows=2000),
    )
    churn = Churn(mariadb, db, top=splits * 2000, seed=5, pause=0.01)
    after = crash_mid_snapshot(cfg, tmp_path, table, splits, churn, rng)
    assert len(after) >= splits
    lake = tmp_path / "lake" / db
    assert replica(lake / "items", ITEM_COLUMNS) == source_items(mariadb, db)
    check_changelog(lake / "items__changelog")


def test_snapshot_mode_copies_every_key_shape_consistently_and_exits(
    mariadb: ThrowawayMariaDB, tmp_path: Path
) -> None:
    db = "snap_shapes"
    mariadb.execute(
        f"DROP DATABASE IF EXISTS {db}",
        f"CREATE DATABASE {db}",
        f"CREATE TABLE {db}.pairs (a INT, b VARCHAR(10), v INT, PRIMARY KEY (a, b))",
        f"INSERT INTO {db}.pairs SELECT seq % 7, CONCAT('k', seq), seq FROM {db}.seq_1_to_3000",
        f"CREATE TABLE {db}.names (name VARCHAR(20) COLLATE utf8mb4_general_ci PRIMARY KEY, v INT)",
        f"INSERT INTO {db}.names SELECT CONCAT(IF(seq % 2, 'a', 'B'), LPAD(seq, 5, '0')), seq "
        f"FROM {db}.seq_1_to_2500",
        f"CREATE TABLE {db}.empty (id INT PRIMARY KEY)",
        f"CREATE TABLE {db}.nokey (code INT NOT NULL, v VARCHAR(10))",
        f"INSERT INTO {db}.nokey SELECT seq, 'x' FROM {db}.seq_1_to_1500",
        f"CREATE TABLE {db}.growing (id INT PRIMARY KEY AUTO_INCREMENT, v INT)",
        f"INSERT INTO {db}.growing (v) SELECT seq FROM {db}.seq_1_to_2000",
    )
    Transfers.create(mariadb, db, 500)
    transfers = Transfers(mariadb, db, 500, seed=3)
    cfg = write_config(
        tmp_path,
        mariadb,
        rf"{db}\..*",
        startup="snapshot",
        extra_source=snapshot_source(chunk=400, batch_rows=800)
        + f", key_columns: {{{db}.nokey: code}}",
    )
    transfers.start()
    stop_growing = _grow(mariadb, db)
    try:
        code, out = run(cfg)
    finally:
        transfers.halt()
        grown = stop_growing()
    assert code == 0, out
    lake = tmp_path / "lake" / db

    def src(sql: str) -> list[tuple[Any, ...]]:
        return sorted(tuple(r) for r in mariadb.query(sql, db))

    assert replica(lake / "pairs", ["a", "b", "v"]) == src("SELECT a, b, v FROM pairs")
    assert replica(lake / "names", ["name", "v"]) == src("SELECT name, v FROM names")
    assert replica(lake / "nokey", ["code", "v"]) == src("SELECT code, v FROM nokey")
    assert DeltaTable(str(lake / "empty")).to_pyarrow_table().num_rows == 0
    # the growing table: a prefix of its inserts, at least what was there at the start
    ids = [r[0] for r in replica(lake / "growing", ["id"])]
    assert ids == list(range(1, len(ids) + 1)) and 2000 <= len(ids) <= grown
    sizes = [m["rows"] for m in split_metas(tmp_path, f"{db}.growing")]
    assert max(sizes) <= 3 * 400, f"a chunk of the growing table held {max(sizes)} rows"
    # one consistent cut of the log: the transfers' total is what it is at every commit
    balances = replica(lake / "accounts", ["id", "balance"])
    assert len(balances) == 500 and transfers.commits > 50
    assert sum(b for _, b in balances) == 500 * Transfers.TOTAL_PER_ACCOUNT


def _grow(server: ThrowawayMariaDB, db: str) -> Any:
    """Inserts into ``growing`` until the returned function is called (it returns the count)."""
    import threading

    stop = threading.Event()
    count = [2000]

    def loop() -> None:
        with contextlib.closing(server.connect(db)) as conn, conn.cursor() as cur:
            while not stop.is_set():
                cur.execute("INSERT INTO growing VALUES (%s, 1)", (count[0] + 1,))
                conn.commit()
                count[0] += 1
                time.sleep(0.005)

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()

    def halt() -> int:
        stop.set()
        thread.join()
        return count[0]

    return halt
