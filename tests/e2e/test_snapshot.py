"""The parallel snapshot through ``sparkcdc run``, as a user runs it, on every source.

``startup: initial`` while a writer churns every part of the key space (updates, deletes,
inserts inside, below and past the key range, primary-key updates): afterwards the replica
equals the source row by row, the change log holds one ``r`` row per snapshotted key and never a
change older than that key's snapshot row, and the splits of the table ran in two Spark tasks at
the same time. MariaDB corrects chunks in watermark windows (which saw writes); PostgreSQL reads
every chunk in one exported snapshot (no window to correct) and leaves only the checkpoint's slot.
``kill -9`` mid-snapshot, randomized crashes in one snapshot (one here, five in
``scripts/crash_trials.sh``): each restart resumes without
reading finished splits again (on PostgreSQL in a new pin), and the end equals the source.
``startup: snapshot`` copies a table that transfers keep at a constant total: the copy is one
consistent cut; on MariaDB with tables of every key shape (composite, case-insensitive strings,
empty, growing, no primary key); on PostgreSQL it leaves no replication slot behind.
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
from sparkcdc.sources.postgres.throwaway import ThrowawayPostgres
from tests.cases.e2e_sources import SLOT, E2ESource, MariaDBSource, PostgresSource
from tests.e2e.cli import available_now, run, write_config
from tests.e2e.history_check import assert_history_matches, keep_history
from tests.e2e.snapshot_runs import (
    ITEM_COLUMNS,
    check_changelog,
    crash_mid_snapshot,
    ran_in_parallel,
    replica,
    snapshot_then_log,
    split_metas,
)
from tests.e2e.snapshot_workload import Churn, Transfers, load_items

pytestmark = [pytest.mark.spark, pytest.mark.slow]

CRASH_SEEDS = {"mysql": 500, "postgres": 600}


def items(source: E2ESource) -> list[tuple[Any, ...]]:
    return sorted(source.query("SELECT id, version, name, amount FROM items"))


@pytest.mark.extended("mysql")
def test_initial_snapshot_under_concurrent_writes_then_the_log(
    source: E2ESource, tmp_path: Path
) -> None:
    load_items(source.server, source.database, 30000)
    churn = Churn(source.server, source.database, top=60000, seed=7)
    settings = source.snapshot_settings()
    cfg = source.config(tmp_path, "items", "initial", extra_source=settings)
    snapshot_then_log(cfg, tmp_path, churn)

    lake = source.lake(tmp_path)
    assert churn.commits > 100
    assert replica(lake / "items", ITEM_COLUMNS) == items(source)
    check_changelog(lake / "items__changelog", source.place)

    metas = split_metas(tmp_path, f"{source.schema}.items")
    assert len(metas) >= 30
    if source.pins_one_snapshot:
        assert len({source.pin(m) for m in metas}) == 1  # one pinned snapshot for every chunk
        assert sum(m["window_changes"] for m in metas) == 0  # so no chunk had a window
    else:
        assert sum(m["window_changes"] for m in metas) > 0  # windows did see writes
    assert ran_in_parallel(metas), "no two splits ran in different Spark tasks at the same time"
    if isinstance(source, PostgresSource):
        assert source.slots() == [(SLOT,)]  # the pin's temporary slot is gone


def test_kill_9_mid_snapshot_resumes_without_rereading_finished_splits(
    source: E2ESource, tmp_path: Path
) -> None:
    """TRIALS crashes in one snapshot, each at a random moment after new splits finished (the
    later ones while the snapshot resumes from the crash before): no restart reads a split
    finished before it again (on PostgreSQL the splits read after a crash carry a later pin's
    point), and the end equals the source, with a change log of no gap or duplicate and a
    history table equal to the change log's rebuild."""
    rng = random.Random(CRASH_SEEDS[source.name])
    splits, table = 60, f"{source.schema}.items"
    load_items(source.server, source.database, splits * 1000)
    settings = source.snapshot_settings(chunk=1000, batch_rows=2000)
    cfg = keep_history(source.config(tmp_path, "items", "initial", extra_source=settings))
    churn = Churn(source.server, source.database, top=splits * 2000, seed=5, pause=0.01)
    after = crash_mid_snapshot(cfg, tmp_path, table, splits, churn, rng)
    assert len(after) >= splits
    if source.pins_one_snapshot:
        assert len({source.pin(m) for m in split_metas(tmp_path, table)}) > 1  # pinned anew
    lake = source.lake(tmp_path)
    assert replica(lake / "items", ITEM_COLUMNS) == items(source)
    check_changelog(lake / "items__changelog", source.place)
    assert_history_matches(lake.parent, source.schema, "items")


@pytest.mark.postgres
def test_snapshot_mode_is_one_consistent_cut_and_leaves_no_slot(
    postgres: ThrowawayPostgres, pgdb: str, tmp_path: Path
) -> None:
    accounts, source = 3000, PostgresSource(postgres, pgdb)
    Transfers.create(postgres, pgdb, accounts)
    transfers = Transfers(postgres, pgdb, accounts, seed=3)
    settings = source.snapshot_settings(chunk=200)
    cfg = source.config(tmp_path, "accounts", "snapshot", extra_source=settings)
    transfers.start()
    try:
        available_now(cfg)
    finally:
        transfers.halt()
    assert transfers.commits > 50
    rows = DeltaTable(str(source.lake(tmp_path) / "accounts")).to_pyarrow_table()
    assert rows.num_rows == accounts
    assert sum(rows.column("balance").to_pylist()) == accounts * Transfers.TOTAL_PER_ACCOUNT
    metas = split_metas(tmp_path, "public.accounts")
    assert len(metas) > 1 and sum(m["rows"] for m in metas) == accounts
    assert len({source.pin(m) for m in metas}) == 1  # every chunk in the one pinned snapshot
    # the copy is whole and no more log is read: no slot is left to hold the server's WAL
    assert source.slots() == []


@pytest.mark.mariadb
def test_snapshot_mode_copies_every_key_shape_consistently_and_exits(
    mariadb: ThrowawayMariaDB, db: str, tmp_path: Path
) -> None:
    mariadb.execute(
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
        extra_source=MariaDBSource(mariadb, db).snapshot_settings(chunk=400, batch_rows=800)
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
