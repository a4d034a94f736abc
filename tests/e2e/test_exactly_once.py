"""Exactly once, tested by crashing: ``kill -9`` of ``sparkcdc run`` (its whole process group:
driver, JVM and Python workers, as a machine crash would) five times in the middle of a
randomized workload of 100k+ changes, each time restarting from the same checkpoint. Afterwards
the replica equals the source row by row and the change log holds every source change exactly
once."""

from __future__ import annotations

import os
import random
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from deltalake import DeltaTable

from sparkcdc.sources.mysql.throwaway import ThrowawayMariaDB
from tests.e2e.cli import available_now, crash, log_end, start, write_config
from tests.e2e.workload import DDL, ChangeWorkload

pytestmark = [pytest.mark.mariadb, pytest.mark.spark, pytest.mark.slow]

TRIALS = int(os.environ.get("SPARKCDC_CRASH_TRIALS", "5"))
CHANGES = int(os.environ.get("SPARKCDC_CRASH_CHANGES", "100000"))


def changelog_identities(path: Path) -> Counter[tuple[str, int, int]]:
    table = DeltaTable(str(path)).to_pyarrow_table(columns=["op", "before", "after"]).to_pylist()
    seen: Counter[tuple[str, int, int]] = Counter()
    for row in table:
        image = row["before"] if row["op"] == "d" else row["after"]
        seen[(row["op"], int(image["id"]), int(image["version"]))] += 1
    return seen


def source_rows(server: ThrowawayMariaDB, db: str) -> list[tuple[object, ...]]:
    return server.query(
        "SELECT id, version, balance, owner, updated, flags FROM accounts ORDER BY id", db
    )


def replica_rows(path: Path) -> list[tuple[object, ...]]:
    rows = DeltaTable(str(path)).to_pyarrow_table().sort_by("id").to_pylist()
    return [
        (r["id"], r["version"], r["balance"], r["owner"], r["updated"], r["flags"]) for r in rows
    ]


def version(path: Path) -> int:
    """The Delta table's latest version (-1 while there is none)."""
    return DeltaTable(str(path)).version() if DeltaTable.is_deltatable(str(path)) else -1


def crash_trials(
    cfg: Path, changelog: Path, workload_of: Callable[[int], ChangeWorkload], trials: int,
    rng: random.Random,
) -> Counter[tuple[str, int, int]]:  # fmt: skip
    """``trials`` runs of the pipeline, each with a part of the workload written meanwhile and
    ``kill -9`` once the run has written and a random moment more; the changes written."""
    expected: Counter[tuple[str, int, int]] = Counter()
    for trial in range(trials):
        workload = workload_of(trial)
        workload.next_id = trial * 10_000_000 + 1  # each part inserts keys of its own
        written = version(changelog)
        proc = start(cfg)
        workload.start()
        deadline = time.monotonic() + 300
        while version(changelog) <= written:  # crash only once this run has written
            assert proc.poll() is None, proc.stdout.read().decode() if proc.stdout else ""
            assert time.monotonic() < deadline, "the restarted pipeline wrote nothing in 300 s"
            time.sleep(0.1)
        time.sleep(rng.uniform(0.5, 3.0))
        assert proc.poll() is None, proc.stdout.read().decode() if proc.stdout else ""
        crash(proc)
        workload.join()
        assert workload.error is None, workload.error
        expected += workload.expected
    return expected


def test_kill_9_mid_stream_then_restart(mariadb: ThrowawayMariaDB, tmp_path: Path) -> None:
    """TRIALS crashes of one pipeline, each while a part of the workload runs and at a random
    moment after the restarted pipeline wrote again (the later ones while it catches up with
    what it missed); a last restart catches up with everything."""
    rng = random.Random(1000)
    db = "crash"
    begin = log_end(mariadb)
    mariadb.execute(f"DROP DATABASE IF EXISTS {db}", f"CREATE DATABASE {db}")
    mariadb.execute(*(s.format(db=db) for s in DDL))
    cfg = write_config(tmp_path, mariadb, rf"{db}\..*", startup=begin)
    changelog = tmp_path / "lake" / db / "accounts__changelog"

    expected = crash_trials(
        cfg, changelog, lambda trial: ChangeWorkload(mariadb, db, -(-CHANGES // TRIALS), trial),
        TRIALS, rng,
    )  # fmt: skip

    # restart from the same checkpoint and catch up with everything written
    available_now(cfg)

    lake = tmp_path / "lake" / db
    assert replica_rows(lake / "accounts") == [
        (i, v, b, o, u, int.from_bytes(f, "big") if isinstance(f, bytes) else f)
        for i, v, b, o, u, f in source_rows(mariadb, db)
    ]
    seen = changelog_identities(lake / "accounts__changelog")
    duplicates = {k: n for k, n in seen.items() if n > 1}
    missing = expected - seen
    unexpected = seen - expected
    assert not duplicates, f"{len(duplicates)} changes delivered twice, e.g. {list(duplicates)[:5]}"
    assert not missing, f"{len(missing)} changes missing, e.g. {list(missing)[:5]}"
    assert not unexpected, f"{len(unexpected)} changes never made, e.g. {list(unexpected)[:5]}"
    assert sum(seen.values()) == sum(expected.values()) >= CHANGES
