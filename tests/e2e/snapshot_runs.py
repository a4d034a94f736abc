"""Driving the parallel snapshot through ``sparkcdc run``: a run through the snapshot and past
its hand-off, kill -9 crashes in the middle of one, and what the splits' records and the change
log hold afterwards."""

from __future__ import annotations

import contextlib
import json
import os
import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from deltalake import DeltaTable

from tests.e2e.cli import available_now, crash, start
from tests.e2e.snapshot_workload import Churn

TRIALS = int(os.environ.get("SPARKCDC_SNAPSHOT_CRASH_TRIALS", "1"))


def replica(path: Path, columns: list[str]) -> list[tuple[Any, ...]]:
    return replica_of(DeltaTable(str(path)).to_pyarrow_table(columns=columns).to_pylist(), columns)


def replica_of(rows: list[dict[str, Any]], columns: list[str]) -> list[tuple[Any, ...]]:
    """A replica's ``rows``, the values of ``columns`` of each, sorted."""
    return sorted(tuple(r[c] for c in columns) for r in rows)


ITEM_COLUMNS = ["id", "version", "name", "amount"]


def split_metas(tmp: Path, table: str) -> list[dict[str, Any]]:
    folder = tmp / "checkpoint" / "sparkcdc" / "snapshot" / "splits" / table
    metas = []
    for path in folder.glob("*.json"):
        with contextlib.suppress(OSError, ValueError):  # being replaced right now
            metas.append(json.loads(path.read_text()))
    return metas


def check_changelog(path: Path, place: Callable[[dict[str, Any]], Any]) -> None:
    """:func:`check_changelog_rows` of the Delta change log at ``path``."""
    log = DeltaTable(str(path)).to_pyarrow_table(columns=["op", "before", "after", "source"])
    check_changelog_rows(log.to_pylist(), place)


def check_changelog_rows(
    rows: list[dict[str, Any]], place: Callable[[dict[str, Any]], Any]
) -> None:
    """One ``r`` row per key, and no change of a key older than its ``r`` row (by ``place`` of
    the rows' ``source``)."""
    reads: dict[int, Any] = {}
    changes: list[tuple[int, Any]] = []
    for row in rows:
        at = place(row["source"])
        if row["op"] == "r":
            key = row["after"]["id"]
            assert key not in reads, f"key {key} was snapshotted twice"
            reads[key] = at
            continue
        for image in (row["before"], row["after"]):
            if image is not None:
                changes.append((image["id"], at))
    stale = [(k, at, reads[k]) for k, at in changes if k in reads and at < reads[k]]
    assert not stale, f"{len(stale)} changes older than their key's snapshot row: {stale[:5]}"


def ran_in_parallel(metas: list[dict[str, Any]]) -> bool:
    """Whether two splits were read by different Spark task workers at the same time."""
    return any(
        a["task"].split(" pid ")[1] != b["task"].split(" pid ")[1]
        and a["started"] < b["ended"]
        and b["started"] < a["ended"]
        for a in metas
        for b in metas
    )


def snapshot_then_log(cfg: Path, tmp: Path, churn: Churn) -> None:
    """``sparkcdc run`` while ``churn`` writes: through the snapshot and a few seconds of the
    log past its hand-off, stopped (exit 0), then run to the log's end once the writes stop."""
    churn.start()
    try:
        proc = start(cfg)
        handoff = tmp / "checkpoint" / "sparkcdc" / "snapshot" / "handoff.json"
        deadline = time.monotonic() + 300
        while not handoff.exists():
            assert proc.poll() is None, proc.stdout.read().decode() if proc.stdout else ""
            assert time.monotonic() < deadline, "the snapshot did not finish in 300 s"
            time.sleep(0.5)
        time.sleep(3)  # the log flows for a while past the hand-off
    finally:
        churn.halt()
    proc.terminate()
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0, out.decode(errors="replace")
    available_now(cfg)  # catch up with the last changes


def crash_mid_snapshot(
    cfg: Path, tmp: Path, table: str, splits: int, churn: Churn, rng: random.Random,
    trials: int = TRIALS,
) -> dict[int, float]:  # fmt: skip
    """``trials`` ``kill -9`` crashes of ``sparkcdc run`` while ``churn`` writes, each at a random
    moment after new splits of ``table`` finished, then a last run to the log's end: asserts no
    restart read a split finished before it again; each split's read start after the end."""
    churn.start()
    finished: list[dict[int, float]] = []  # split index -> its read's start, at each crash
    try:
        for _ in range(trials):
            target = len(split_metas(tmp, table)) + rng.randrange(1, 4)
            proc = start(cfg)
            deadline = time.monotonic() + 300
            while len(split_metas(tmp, table)) < target:
                assert proc.poll() is None, proc.stdout.read().decode() if proc.stdout else ""
                assert time.monotonic() < deadline, "no new split finished in 300 s"
                time.sleep(0.05)
            time.sleep(rng.uniform(0.0, 0.5))
            crash(proc)
            finished.append({m["split"]["index"]: m["started"] for m in split_metas(tmp, table)})
    finally:
        churn.halt()
    assert len(finished[-1]) < splits, "the snapshot finished before the last crash"
    available_now(cfg)  # the last restart: resumes the snapshot, then the log up to its end
    after = {m["split"]["index"]: m["started"] for m in split_metas(tmp, table)}
    for crashed, before in enumerate(finished):
        reread = [i for i, started in before.items() if after.get(i) != started]
        assert not reread, f"splits {reread} finished before crash {crashed} were read again"
    return after
