"""Incremental snapshots through ``sparkcdc run`` and ``sparkcdc signal``, as a user runs them.

The pipeline starts at the log's end, so rows written before it reach the replica only through
an incremental snapshot. ``execute-snapshot`` while writers churn the table (inserts inside and
beyond its maximum key, updates, deletes, primary-key updates) and another table: the replica
equals the source row by row, the change log holds every change once and never a snapshot row
older than a change of its key. Signals through the signal table (pause, resume, log, a
``--where`` condition). ``kill -9`` mid-snapshot, randomized trials (one here,
five in ``scripts/crash_trials.sh``): the restart goes on after the last
delivered chunk, and the history table equals the change log's rebuild. A table added to
``source.tables`` between two runs is snapshotted while the others stream on.
"""

from __future__ import annotations

import json
import os
import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sparkcdc.sinks.delta.notifications import read_notifications
from sparkcdc.sources.mysql.throwaway import ThrowawayMariaDB
from tests.cases.changelog import source_names
from tests.cases.e2e_sources import E2ESource
from tests.e2e.cli import crash, log_end, write_config
from tests.e2e.history_check import assert_history_matches
from tests.e2e.incremental_runs import (
    COLUMNS,
    CountedChurn,
    Launch,
    Rows,
    caught_up,
    caught_up_with,
    check_changelog,
    check_progress,
    incremental_source,
    items_of,
    notes,
    replica,
    signal,
    stop,
    wait_for,
)
from tests.e2e.snapshot_workload import ITEMS, load_items

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def recreate(server: ThrowawayMariaDB, *dbs: str) -> None:
    for db in dbs:
        server.execute(f"DROP DATABASE IF EXISTS {db}", f"CREATE DATABASE {db}")


def rows_of(source: E2ESource) -> Callable[[str], Rows]:
    """The rows of a ``schema.table`` of ``source``, as :func:`replica` gives them."""
    return lambda name: sorted(
        source.query(f"SELECT {', '.join(COLUMNS)} FROM {name.split('.')[1]}")
    )


@pytest.mark.extended("mysql")
def test_incremental_snapshot_under_a_concurrent_workload(
    source: E2ESource, tmp_path: Path, launch: Launch
) -> None:
    """``items`` is snapshotted while its writer churns it; ``other`` is filled by its writer
    only, through the log."""
    schema, server, database = source.schema, source.server, source.database
    load_items(server, database, 30000)
    source.create_items("other")
    startup = source.start_capturing(["items", "other"])
    cfg = source.config(tmp_path, "(items|other)", startup, extra_source=incremental_source())
    lake, tables = tmp_path / "lake", [f"{schema}.items", f"{schema}.other"]
    churn = CountedChurn(server, database, top=60000, seed=11, pause=0.005)
    side = CountedChurn(server, database, top=20000, seed=12, pause=0.01, table="other")
    proc = launch(cfg)
    churn.start()
    side.start()
    try:
        wait_for(proc, lambda: bool(replica(lake / schema / "other")), "the stream to flow")
        assert "sent to" in signal(cfg, "execute-snapshot", "--tables", f"{schema}.items")
        wait_for(proc, lambda: bool(notes(lake, "completed")), "the snapshot to complete")
        time.sleep(1)  # the log flows on past the snapshot
    finally:
        churn.halt()
        side.halt()
    caught_up_with(proc, rows_of(source), lake, tables)
    stop(proc)

    assert churn.commits > 100 and side.commits > 50
    for name in tables:
        assert replica(lake.joinpath(*name.split("."))) == rows_of(source)(name)
    items_log, other_log = lake / schema / "items__changelog", lake / schema / "other__changelog"
    reads = check_changelog(items_log, churn.changes, source.log_event)
    assert source_names(items_log, "r") == {(*source.origin("items"), True)}
    assert check_changelog(other_log, side.changes, source.log_event) == 0
    rows = check_progress(lake, f"{schema}.items")
    assert len(rows) >= 2, f"the snapshot took {len(rows)} window only"
    assert 20000 < reads <= rows[-1]  # window changes dropped some rows, not many
    assert [n["type"] for n in notes(lake)][:2] == ["queued", "started"]
    assert len(notes(lake, "completed")) == 1


@pytest.mark.extended("postgres")
def test_signals_through_the_signal_table(
    source: E2ESource, tmp_path: Path, launch: Launch
) -> None:
    """Snapshots queued while paused (one of ``dark``, rows the log never saw, with a
    ``--where`` condition) run after the resume; a log signal is noted in order."""
    schema, server, database = source.schema, source.server, source.database
    load_items(server, database, 20000)
    sig = source.create_signal_table("sig")
    source.create_items("dark")
    source.write_before_capture(
        f"INSERT INTO dark SELECT seq, 1, CONCAT('dark-', seq), 0.5 FROM {source.numbers(3000)}"
    )
    captured = ["items", "dark"] + (["sig"] if source.capture_signal_table else [])
    startup = source.start_capturing(captured)
    cfg = source.config(
        tmp_path, f"({'|'.join(captured)})", startup,
        extra_source=f", signal_table: {sig}" + incremental_source(),
    )  # fmt: skip
    lake = tmp_path / "lake"
    proc = launch(cfg)
    # paused first, so no chunk can be read before the resume whatever the timing
    assert f"sent to {sig}" in signal(cfg, "pause-snapshot")
    signal(cfg, "execute-snapshot", "--tables", f"{schema}.items")
    signal(cfg, "execute-snapshot", "--tables", f"{schema}.dark", "--where", "id % 10 = 0")
    signal(cfg, "log", "--message", "backfill queued")
    wait_for(proc, lambda: bool(notes(lake, "log")), "the log signal")
    time.sleep(2)  # batches go by, paused
    assert not notes(lake, "chunk")
    signal(cfg, "resume-snapshot")
    wait_for(proc, lambda: len(notes(lake, "table-done")) == 2, "both tables to be done")
    caught_up_with(proc, rows_of(source), lake, [f"{schema}.items"])
    stop(proc)

    assert not list((tmp_path / "checkpoint").glob("sparkcdc/signals/*.json"))  # table channel
    assert replica(lake / schema / "items") == rows_of(source)(f"{schema}.items")
    dark = rows_of(source)(f"{schema}.dark")
    assert replica(lake / schema / "dark") == [r for r in dark if r[0] % 10 == 0]
    assert replica(lake / schema / "dark") == [
        (i, 1, f"dark-{i}", 0.5) for i in range(10, 3001, 10)
    ]
    seen = [(n["type"], n["table"]) for n in notes(lake)]
    assert seen[:5] == [
        ("paused", ""),
        ("queued", "items"),
        ("queued", "dark"),
        ("log", ""),
        ("resumed", ""),
    ], seen
    assert [n["details"].get("message") for n in notes(lake, "log")] == ["backfill queued"]
    queued_dark = notes(lake, "queued", f"{schema}.dark")
    assert queued_dark[0]["details"]["where"] == "id % 10 = 0"
    check_progress(lake, f"{schema}.items")
    check_progress(lake, f"{schema}.dark")
    assert notes(lake, "table-done", f"{schema}.dark")[0]["details"]["rows"] == 300
    assert check_changelog(lake / schema / "items__changelog", 0, source.log_event) == 20000
    assert check_changelog(lake / schema / "dark__changelog", 0, source.log_event) == 300
    assert seen[-1] == ("completed", "")


def crash_trials(source: E2ESource) -> int:
    """The crashes of :func:`test_kill_9_mid_incremental_snapshot_resumes`: one in the default
    run (its time), five in ``scripts/crash_trials.sh``."""
    return int(os.environ.get("SPARKCDC_INCREMENTAL_CRASH_TRIALS", "1"))


@pytest.mark.extended("postgres")
def test_kill_9_mid_incremental_snapshot_resumes(
    source: E2ESource, tmp_path: Path, launch: Launch
) -> None:
    """:func:`crash_trials` crashes in one incremental snapshot, each at a random moment after a
    new chunk (the later ones while the snapshot is resuming from the one before); afterwards
    the history table equals the rebuild of the change log."""
    rng, trials = random.Random(700), crash_trials(source)
    schema, server, database = source.schema, source.server, source.database
    table = f"{schema}.items"
    load_items(server, database, 30000)
    cfg = source.config(
        tmp_path, "items", source.start_capturing(["items"]),
        extra_source=incremental_source(window="0s"),  # one round of 2 chunks per window
        extra_sink=", history: true",
    )  # fmt: skip
    lake = tmp_path / "lake"
    churn = CountedChurn(server, database, top=60000, seed=7, pause=0.02)
    churn.start()
    crashes: list[list[dict[str, Any]]] = []  # the notifications seen at each crash
    try:
        proc = launch(cfg)
        signal(cfg, "execute-snapshot", "--tables", table)
        for _ in range(trials):
            seen = len(notes(lake, "chunk", table))
            wait_for(proc, lambda n=seen: len(notes(lake, "chunk", table)) > n, "a new chunk")
            time.sleep(rng.uniform(0.0, 1.0))
            crash(proc)
            crashes.append(read_notifications(str(lake)))
            proc = launch(cfg)
        wait_for(proc, lambda: bool(notes(lake, "completed")), "the snapshot to complete")
    finally:
        churn.halt()
    caught_up_with(proc, rows_of(source), lake, [table])
    stop(proc)

    assert replica(lake / schema / "items") == rows_of(source)(table)
    reads = check_changelog(lake / schema / "items__changelog", churn.changes, source.log_event)
    rows = check_progress(lake, table)
    assert 20000 < reads <= rows[-1]
    assert resumed_after_crashes(read_notifications(str(lake)), crashes) >= max(trials - 1, 1)
    assert_history_matches(lake, schema, "items")


def resumed_after_crashes(everything: list[dict[str, Any]], crashes: list[list[Any]]) -> int:
    """How many crashes landed mid-snapshot, each restart going on after the last chunk
    delivered before it (asserted); the notifications seen at each crash are a prefix of
    ``everything``."""
    resumed = 0
    for before in crashes:
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
    return resumed


@pytest.mark.mariadb
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

    assert replica(lake / db / "extra") == items_of(mariadb, db, "extra")
    assert replica(lake / db / "items") == items_of(mariadb, db)
    queued = notes(lake, "queued")
    assert [(n["table"], n["details"]["signal"]) for n in queued] == [("extra", "added")]
    assert not notes(lake, "started", f"{db}.items")  # the streamed table is not read again
    check_progress(lake, f"{db}.extra")
    assert check_changelog(lake / db / "extra__changelog", 1) == 10000
    assert check_changelog(lake / db / "items__changelog", churn.changes + 1) == 0


@pytest.mark.extended("mysql")
def test_a_column_added_while_the_windows_are_read(
    source: E2ESource, tmp_path: Path, launch: Launch
) -> None:
    """Debezium's ``incremental.snapshot.allow.schema.changes``: a column added (and set on some
    rows) while an incremental snapshot reads the table; the windows read before the DDL and
    after it, and the DDL's fill, leave the replica equal to the source."""
    schema, server, database = source.schema, source.server, source.database
    load_items(server, database, 20000)
    startup = source.start_capturing(["items"])
    cfg = source.config(tmp_path, "items", startup,
                        extra_source=incremental_source(chunk=500, window="0s"))  # fmt: skip
    lake, columns = tmp_path / "lake", [*COLUMNS, "grade"]
    proc = launch(cfg)
    signal(cfg, "execute-snapshot", "--tables", f"{schema}.items")
    wait_for(proc, lambda: len(notes(lake, "chunk")) >= 2, "the first windows")
    source.execute(
        "ALTER TABLE items ADD COLUMN grade INT DEFAULT 5",
        "UPDATE items SET grade = 7, version = version + 1 WHERE id % 400 = 0",
    )
    chunks_before = len(notes(lake, "chunk"))
    assert not notes(lake, "completed"), "the snapshot ended before the DDL"

    def source_rows() -> Rows:
        return sorted(source.query(f"SELECT {', '.join(columns)} FROM items"))

    wait_for(proc, lambda: bool(notes(lake, "completed")), "the snapshot to complete", 240)
    wait_for(proc, lambda: replica(lake / schema / "items", columns) == source_rows(),
             "the replica to equal the source", 90)  # fmt: skip
    stop(proc)
    assert len(notes(lake, "chunk")) > chunks_before  # windows were read after the DDL
    assert {r[4] for r in source_rows()} == {5, 7}
