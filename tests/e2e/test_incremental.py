"""Incremental snapshots through ``sparkcdc run`` and ``sparkcdc signal``, as a user runs them.

The pipeline starts at the log's end, so rows written before it reach the replica only through
an incremental snapshot. ``execute-snapshot`` while writers churn the table (inserts inside and
beyond its maximum key, updates, deletes, primary-key updates) and another table: the replica
equals the source row by row, the change log holds every change once and never a snapshot row
older than a change of its key. Signals through the signal table (pause, resume, log, a
``--where`` condition). ``kill -9`` mid-snapshot, five randomized trials: the restart goes on
after the last delivered chunk. A table added to ``source.tables`` between two runs is
snapshotted while the others stream on.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import time
from pathlib import Path
from typing import Any

import pytest

from sparkcdc.sinks.delta.notifications import read_notifications
from sparkcdc.snapshot.signals import signal_table_ddl
from sparkcdc.sources.mysql.throwaway import ThrowawayMariaDB
from tests.cases.changelog import source_names
from tests.e2e.cli import crash, log_end, write_config
from tests.e2e.incremental_runs import (
    CountedChurn,
    Launch,
    caught_up,
    check_changelog,
    check_progress,
    incremental_source,
    notes,
    replica,
    signal,
    source,
    stop,
    wait_for,
)
from tests.e2e.snapshot_workload import ITEMS, load_items

pytestmark = [pytest.mark.mariadb, pytest.mark.spark, pytest.mark.slow]

TRIALS = int(os.environ.get("SPARKCDC_INCREMENTAL_CRASH_TRIALS", "5"))


def recreate(server: ThrowawayMariaDB, *dbs: str) -> None:
    for db in dbs:
        server.execute(f"DROP DATABASE IF EXISTS {db}", f"CREATE DATABASE {db}")


def test_incremental_snapshot_under_a_concurrent_workload(
    mariadb: ThrowawayMariaDB, tmp_path: Path, launch: Launch
) -> None:
    db, other = "inc_load", "inc_other"
    recreate(mariadb, db, other)
    load_items(mariadb, db, 30000)
    mariadb.execute(ITEMS.format(db=other))  # filled by its writer only, through the log
    cfg = write_config(
        tmp_path,
        mariadb,
        rf"({db}|{other})\.items",
        startup=log_end(mariadb),
        extra_source=incremental_source(),
    )
    lake = tmp_path / "lake"
    churn = CountedChurn(mariadb, db, top=60000, seed=11, pause=0.005)
    side = CountedChurn(mariadb, other, top=20000, seed=12, pause=0.01)
    proc = launch(cfg)
    churn.start()
    side.start()
    try:
        wait_for(proc, lambda: bool(replica(lake / other / "items")), "the stream to flow")
        assert "sent to" in signal(cfg, "execute-snapshot", "--tables", f"{db}.items")
        wait_for(proc, lambda: bool(notes(lake, "completed")), "the snapshot to complete")
        time.sleep(1)  # the log flows on past the snapshot
    finally:
        churn.halt()
        side.halt()
    caught_up(proc, mariadb, lake, [f"{db}.items", f"{other}.items"])
    stop(proc)

    assert churn.commits > 100 and side.commits > 50
    assert replica(lake / db / "items") == source(mariadb, db)
    assert replica(lake / other / "items") == source(mariadb, other)
    reads = check_changelog(lake / db / "items__changelog", churn.changes)
    assert source_names(lake / db / "items__changelog", "r") == {(db, None, "items", True)}
    assert check_changelog(lake / other / "items__changelog", side.changes) == 0
    rows = check_progress(lake, f"{db}.items")
    assert len(rows) >= 2, f"the snapshot took {len(rows)} window only"
    assert 20000 < reads <= rows[-1]  # window changes dropped some rows, not many
    assert [n["type"] for n in notes(lake)][:2] == ["queued", "started"]
    assert len(notes(lake, "completed")) == 1


def test_signals_through_the_signal_table(
    mariadb: ThrowawayMariaDB, tmp_path: Path, launch: Launch
) -> None:
    db = "inc_signals"
    recreate(mariadb, db)
    load_items(mariadb, db, 20000)
    mariadb.execute(
        signal_table_ddl(f"{db}.sig"),
        ITEMS.format(db=db).replace(".items", ".dark"),
    )
    with contextlib.closing(mariadb.connect(db)) as conn, conn.cursor() as cur:
        cur.execute("SET sql_log_bin = 0")  # rows the log never saw
        cur.execute("INSERT INTO dark SELECT seq, 1, CONCAT('dark-', seq), 0.5 FROM seq_1_to_3000")
    cfg = write_config(
        tmp_path,
        mariadb,
        rf"{db}\.(items|dark)",
        startup=log_end(mariadb),
        extra_source=f", signal_table: {db}.sig" + incremental_source(),
    )
    lake = tmp_path / "lake"
    proc = launch(cfg)
    # paused first, so no chunk can be read before the resume whatever the timing
    assert f"sent to {db}.sig" in signal(cfg, "pause-snapshot")
    signal(cfg, "execute-snapshot", "--tables", f"{db}.items")
    signal(cfg, "execute-snapshot", "--tables", f"{db}.dark", "--where", "id % 10 = 0")
    signal(cfg, "log", "--message", "backfill queued")
    wait_for(proc, lambda: bool(notes(lake, "log")), "the log signal")
    time.sleep(2)  # batches go by, paused
    assert not notes(lake, "chunk")
    signal(cfg, "resume-snapshot")
    wait_for(proc, lambda: len(notes(lake, "table-done")) == 2, "both tables to be done")
    caught_up(proc, mariadb, lake, [f"{db}.items"])
    stop(proc)

    assert not list((tmp_path / "checkpoint").glob("sparkcdc/signals/*.json"))  # table channel
    assert replica(lake / db / "items") == source(mariadb, db)
    assert replica(lake / db / "dark") == [(i, 1, f"dark-{i}", 0.5) for i in range(10, 3001, 10)]
    seen = [(n["type"], n["table"]) for n in notes(lake)]
    assert seen[:5] == [
        ("paused", ""),
        ("queued", "items"),
        ("queued", "dark"),
        ("log", ""),
        ("resumed", ""),
    ], seen
    assert notes(lake, "log")[0]["details"]["message"] == "backfill queued"
    assert [d for d in notes(lake, "queued", f"{db}.dark")][0]["details"]["where"] == "id % 10 = 0"
    check_progress(lake, f"{db}.items")
    check_progress(lake, f"{db}.dark")
    assert notes(lake, "table-done", f"{db}.dark")[0]["details"]["rows"] == 300
    assert check_changelog(lake / db / "items__changelog", 0) == 20000
    assert check_changelog(lake / db / "dark__changelog", 0) == 300
    assert seen[-1] == ("completed", "")


def test_kill_9_mid_incremental_snapshot_resumes(
    mariadb: ThrowawayMariaDB, tmp_path: Path, launch: Launch
) -> None:
    """TRIALS crashes in one incremental snapshot, each at a random moment after a new chunk
    (the later ones while the snapshot is resuming from the one before)."""
    rng = random.Random(700)
    db = "inc_crash"
    table = f"{db}.items"
    recreate(mariadb, db)
    load_items(mariadb, db, 30000)
    cfg = write_config(
        tmp_path,
        mariadb,
        rf"{db}\.items",
        startup=log_end(mariadb),
        extra_source=incremental_source(window="0s"),  # one round of 2 chunks per window
    )
    lake = tmp_path / "lake"
    churn = CountedChurn(mariadb, db, top=60000, seed=7, pause=0.02)
    churn.start()
    crashes: list[list[dict[str, Any]]] = []  # the notifications seen at each crash
    try:
        proc = launch(cfg)
        signal(cfg, "execute-snapshot", "--tables", table)
        for _ in range(TRIALS):
            seen = len(notes(lake, "chunk", table))
            wait_for(proc, lambda n=seen: len(notes(lake, "chunk", table)) > n, "a new chunk")
            time.sleep(rng.uniform(0.0, 1.0))
            crash(proc)
            crashes.append(read_notifications(str(lake)))
            proc = launch(cfg)
        wait_for(proc, lambda: bool(notes(lake, "completed")), "the snapshot to complete")
    finally:
        churn.halt()
    caught_up(proc, mariadb, lake, [table])
    stop(proc)

    assert replica(lake / db / "items") == source(mariadb, db)
    reads = check_changelog(lake / db / "items__changelog", churn.changes)
    rows = check_progress(lake, table)
    assert 20000 < reads <= rows[-1]
    everything = read_notifications(str(lake))
    resumed = 0
    for before in crashes:  # each restart went on after the last chunk delivered before it
        assert everything[: len(before)] == before
        if any(n["type"] == "table-done" for n in before):
            continue
        earlier = [json.loads(n["details"]) for n in before if n["type"] == "chunk"]
        later = [
            json.loads(n["details"]) for n in everything[len(before) :] if n["type"] == "chunk"
        ]
        assert earlier and later, "no chunk before or after a crash"
        assert later[0]["rows"] > earlier[-1]["rows"], (earlier[-1], later[0])
        assert later[0]["chunks"] > earlier[-1]["chunks"], (earlier[-1], later[0])
        resumed += 1
    assert resumed >= TRIALS - 1, f"only {resumed} crashes landed mid-snapshot"


def test_tables_added_to_a_running_pipeline_are_snapshotted(
    mariadb: ThrowawayMariaDB, tmp_path: Path, launch: Launch
) -> None:
    db = "inc_added"
    recreate(mariadb, db)
    mariadb.execute(
        ITEMS.format(db=db),  # the streamed table, filled by its writer through the log
        ITEMS.format(db=db).replace(".items", ".extra"),
        f"INSERT INTO {db}.extra SELECT seq * 3, 2, CONCAT('extra-', seq), seq / 4 "
        f"FROM {db}.seq_1_to_10000",
    )
    begin = log_end(mariadb)
    cfg = write_config(
        tmp_path, mariadb, rf"{db}\.items", startup=begin, extra_source=incremental_source()
    )
    lake = tmp_path / "lake"
    churn = CountedChurn(mariadb, db, top=20000, seed=21, pause=0.01)
    churn.start()
    try:
        proc = launch(cfg)
        wait_for(proc, lambda: len(replica(lake / db / "items")) > 100, "the stream to flow")
        stop(proc)
        assert not (lake / db / "extra").exists()
        # the same checkpoint and lake, one more table
        cfg = write_config(
            tmp_path,
            mariadb,
            rf"{db}\.(items|extra)",
            startup=begin,
            extra_source=incremental_source(),
        )
        proc = launch(cfg)
        wait_for(proc, lambda: bool(notes(lake, "table-done", f"{db}.extra")), "extra's snapshot")
        mariadb.execute(
            f"INSERT INTO {db}.items VALUES (1000000000, 7, 'marker', 1)",
            f"INSERT INTO {db}.extra VALUES (1000000000, 7, 'added', 1)",  # its log is read too
        )
        wait_for(
            proc,
            lambda: (
                (1000000000, 7, "marker", 1) in replica(lake / db / "items")
                and (1000000000, 7, "added", 1) in replica(lake / db / "extra")
            ),
            "the stream of both tables after the restart",
        )
    finally:
        churn.halt()
    caught_up(proc, mariadb, lake, [f"{db}.items", f"{db}.extra"])
    stop(proc)

    assert replica(lake / db / "extra") == source(mariadb, db, "extra")
    assert replica(lake / db / "items") == source(mariadb, db)
    queued = notes(lake, "queued")
    assert [(n["table"], n["details"]["signal"]) for n in queued] == [("extra", "added")]
    assert not notes(lake, "started", f"{db}.items")  # the streamed table is not read again
    check_progress(lake, f"{db}.extra")
    assert check_changelog(lake / db / "extra__changelog", 1) == 10000
    assert check_changelog(lake / db / "items__changelog", churn.changes + 1) == 0
