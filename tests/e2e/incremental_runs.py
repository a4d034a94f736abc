"""Driving incremental snapshots through ``sparkcdc run`` and ``sparkcdc signal``: a counted
churn, launching and stopping runs, the signal command, and what the lake's change log, progress
and notifications hold afterwards."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from deltalake import DeltaTable

from sparkcdc.sinks.delta.notifications import read_notifications
from sparkcdc.sources.mysql.throwaway import ThrowawayMariaDB
from tests.e2e.snapshot_workload import Churn

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
    """The notifications of the Delta lake ``lake`` (:func:`picked_notes`)."""
    return picked_notes(read_notifications(str(lake)), kind, table)


def picked_notes(
    kept: list[dict[str, Any]], kind: str | None = None, table: str | None = None
) -> list[dict[str, Any]]:
    """The notifications among ``kept`` (``details`` parsed), of one type and one ``db.table``
    if given."""
    out = []
    for n in kept:
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


def items_of(server: ThrowawayMariaDB, db: str, table: str = "items") -> list[tuple[Any, ...]]:
    rows = server.query(f"SELECT {', '.join(COLUMNS)} FROM {table}", db)
    return sorted(tuple(r) for r in rows)


Rows = list[tuple[Any, ...]]


def caught_up(
    proc: subprocess.Popen[bytes], server: ThrowawayMariaDB, lake: Path, tables: list[str]
) -> None:
    """Wait until the replica of every ``db.table`` equals its source (the writers stopped)."""
    caught_up_with(proc, lambda name: items_of(server, *name.split(".")), lake, tables)


def caught_up_with(
    proc: subprocess.Popen[bytes], rows_of: Callable[[str], Rows], lake: Path, tables: list[str]
) -> None:
    """Wait until the replica of every ``schema.table`` (``lake/schema/table``) equals
    ``rows_of`` it (the writers stopped)."""

    def equal() -> bool:
        return all(replica(lake.joinpath(*name.split("."))) == rows_of(name) for name in tables)

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
    """:func:`check_changelog_rows` of the Delta change log at ``path``."""
    return check_changelog_rows(changelog(path, place), changes, place)


def check_changelog_rows(rows: list[dict[str, Any]], changes: int, place: Place) -> int:
    """Every one of the ``changes`` log events once in the change log's ``rows`` (no duplicate,
    no gap), at most one ``r`` row per key, and no ``r`` row after a change of its key unless it
    is that change's image (so no snapshot row overwrites a newer change). Returns the number of
    ``r`` rows."""
    rows = sorted(rows, key=lambda r: place(r["source"]))
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
    """:func:`check_progress_of` the Delta lake's notifications."""
    return check_progress_of(read_notifications(str(lake)), table)


def check_progress_of(kept: list[dict[str, Any]], table: str) -> list[int]:
    """One run of ``table`` in the notifications ``kept``: started and done once, chunk row
    counts going up; the counts."""
    assert len(picked_notes(kept, "started", table)) == 1
    done = picked_notes(kept, "table-done", table)
    assert len(done) == 1, done
    rows = [n["details"]["rows"] for n in picked_notes(kept, "chunk", table)]
    assert rows and all(a < b for a, b in zip(rows, rows[1:], strict=False)), rows
    assert done[0]["details"]["rows"] == rows[-1]
    return rows
