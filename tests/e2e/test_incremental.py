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
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable

from sparkcdc.sinks.delta.notifications import read_notifications
from sparkcdc.snapshot.signals import signal_table_ddl
from sparkcdc.sources.mysql.throwaway import ThrowawayMariaDB
from tests.cases.changelog import source_names
from tests.e2e.cli import crash, log_end, start, write_config
from tests.e2e.snapshot_workload import ITEMS, Churn, load_items

pytestmark = [pytest.mark.mariadb, pytest.mark.spark, pytest.mark.slow]

TRIALS = int(os.environ.get("SPARKCDC_INCREMENTAL_CRASH_TRIALS", "5"))

COLUMNS = ["id", "version", "name", "amount"]


def incremental_source(chunk: int = 500, window: str = "50ms", chunks: int = 2) -> str:
    return (
        f", snapshot: {{chunk_size: {chunk}, incremental_chunks: {chunks}, "
        f"incremental_window: {window}}}"
    )


class CountedChurn(Churn):
    """:class:`Churn` that counts the rows its statements changed: the row events it wrote
    (an ignored insert or key update changes none, and every update bumps ``version``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.changes = 0

    def transaction(self, cur: Any) -> None:
        counting = _Counting(cur)
        super().transaction(counting)
        self.changes += counting.rows


class _Counting:
    def __init__(self, cur: Any) -> None:
        self.cur, self.rows = cur, 0

    def execute(self, sql: str, args: Any = None) -> int:
        self.cur.execute(sql, args)
        n = int(self.cur.rowcount)
        self.rows += n
        return n


Launch = Callable[[Path], "subprocess.Popen[bytes]"]


@pytest.fixture
def launch() -> Iterator[Launch]:
    """``start`` for the test: a pipeline still running when the test ends (it failed) is
    killed with its process group."""
    procs: list[subprocess.Popen[bytes]] = []

    def launch(cfg: Path) -> subprocess.Popen[bytes]:
        procs.append(start(cfg))
        return procs[-1]

    yield launch
    for proc in procs:
        if proc.poll() is None:
            crash(proc)


def recreate(server: ThrowawayMariaDB, *dbs: str) -> None:
    for db in dbs:
        server.execute(f"DROP DATABASE IF EXISTS {db}", f"CREATE DATABASE {db}")


def signal(cfg: Path, action: str, *args: str) -> str:
    """``sparkcdc signal ACTION --config cfg ARGS`` in a subprocess; what it printed."""
    done = subprocess.run(
        [sys.executable, "-m", "sparkcdc.cli.main", "signal", action, "--config", str(cfg), *args],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def output(proc: subprocess.Popen[bytes]) -> str:
    return proc.stdout.read().decode(errors="replace") if proc.stdout else ""


def wait_for(
    proc: subprocess.Popen[bytes], done: Callable[[], bool], what: str, timeout: float = 120
) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        assert proc.poll() is None, f"the pipeline exited while waiting for {what}:\n{output(proc)}"
        assert time.monotonic() < deadline, f"{what}: not within {timeout:.0f} s"
        time.sleep(0.25)


def stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM: the pipeline finishes its batch and exits 0."""
    proc.terminate()
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0, out.decode(errors="replace")


def notes(lake: Path, kind: str | None = None, table: str | None = None) -> list[dict[str, Any]]:
    """The notifications (``details`` parsed), of one type and one ``db.table`` if given."""
    out = []
    for n in read_notifications(str(lake)):
        if kind is not None and n["type"] != kind:
            continue
        if table is not None and f"{n['db']}.{n['table']}" != table:
            continue
        out.append({**n, "details": json.loads(n["details"] or "{}")})
    return out


def replica(path: Path, columns: list[str] = COLUMNS) -> list[tuple[Any, ...]]:
    if not DeltaTable.is_deltatable(str(path)):
        return []
    rows = DeltaTable(str(path)).to_pyarrow_table(columns=columns).to_pylist()
    return sorted(tuple(r[c] for c in columns) for r in rows)


def source(server: ThrowawayMariaDB, db: str, table: str = "items") -> list[tuple[Any, ...]]:
    rows = server.query(f"SELECT {', '.join(COLUMNS)} FROM {table}", db)
    return sorted(tuple(r) for r in rows)


def caught_up(
    proc: subprocess.Popen[bytes], server: ThrowawayMariaDB, lake: Path, tables: list[str]
) -> None:
    """Wait until the replica of every ``db.table`` equals its source (the writers stopped)."""

    def equal() -> bool:
        for name in tables:
            db, table = name.split(".")
            if replica(lake / db / table) != source(server, db, table):
                return False
        return True

    wait_for(proc, equal, "the replica to catch up with the source", timeout=90)


Place = Callable[[dict[str, Any]], Any]


def binlog_event(source: dict[str, Any]) -> tuple[str, int, int]:
    """A change log row's event in the binlog, in log order: (file, pos, row)."""
    return (source["file"], source["pos"], source["row"])


def changelog(path: Path, place: Place = binlog_event) -> list[dict[str, Any]]:
    """The change log in log order (``place`` of each row's ``source``)."""
    rows = DeltaTable(str(path)).to_pyarrow_table(columns=["op", "before", "after", "source"])
    return sorted(rows.to_pylist(), key=lambda r: place(r["source"]))


def check_changelog(path: Path, changes: int, place: Place = binlog_event) -> int:
    """Every one of the ``changes`` log events once (no duplicate, no gap), at most one ``r`` row
    per key, and no ``r`` row after a change of its key unless it is that change's image (so no
    snapshot row overwrites a newer change). Returns the number of ``r`` rows."""
    rows = changelog(path, place)
    events = Counter(place(r["source"]) for r in rows if r["op"] != "r")
    duplicates = {k: n for k, n in events.items() if n > 1}
    assert not duplicates, f"{len(duplicates)} log events delivered twice: {list(duplicates)[:5]}"
    assert sum(events.values()) == changes, f"{sum(events.values())} log events of {changes}"

    latest: dict[Any, dict[str, Any] | None] = {}  # the image of a key after its last change
    reads: Counter[Any] = Counter()
    stale = []
    for r in rows:
        before, after = r["before"], r["after"]
        if r["op"] == "r":
            key = after["id"]
            reads[key] += 1
            if key in latest and latest[key] != after:
                stale.append((key, r["source"], latest[key], after))
            continue
        if before is not None and (after is None or before["id"] != after["id"]):
            latest[before["id"]] = None  # deleted, or moved to another key
        if after is not None:
            latest[after["id"]] = after
    twice = [k for k, n in reads.items() if n > 1]
    assert not twice, f"{len(twice)} keys snapshotted more than once, e.g. {twice[:5]}"
    assert not stale, f"{len(stale)} snapshot rows older than a change of their key: {stale[:3]}"
    return sum(reads.values())


def check_progress(lake: Path, table: str) -> list[int]:
    """One run of ``table``: started and done once, chunk row counts going up; the counts."""
    assert len(notes(lake, "started", table)) == 1
    done = notes(lake, "table-done", table)
    assert len(done) == 1, done
    rows = [n["details"]["rows"] for n in notes(lake, "chunk", table)]
    assert rows and all(a < b for a, b in zip(rows, rows[1:], strict=False)), rows
    assert done[0]["details"]["rows"] == rows[-1]
    return rows


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
