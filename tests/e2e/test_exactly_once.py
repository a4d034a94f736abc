"""Exactly once, tested by crashing: ``kill -9`` of ``sparkcdc run`` (its whole process group:
driver, JVM and Python workers, as a machine crash would) in the middle of a randomized
workload of 100k+ changes, then a restart from the same checkpoint. Afterwards the replica equals
the source row by row and the change log holds every source change exactly once."""

from __future__ import annotations

import os
import random
import time
from collections import Counter
from pathlib import Path

import pytest
from deltalake import DeltaTable

from sparkcdc.embedded.mariadb import EmbeddedMariaDB
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


def source_rows(server: EmbeddedMariaDB, db: str) -> list[tuple[object, ...]]:
    return server.query(
        "SELECT id, version, balance, owner, updated, flags FROM accounts ORDER BY id", db
    )


def replica_rows(path: Path) -> list[tuple[object, ...]]:
    rows = DeltaTable(str(path)).to_pyarrow_table().sort_by("id").to_pylist()
    return [
        (r["id"], r["version"], r["balance"], r["owner"], r["updated"], r["flags"]) for r in rows
    ]


@pytest.mark.parametrize("trial", range(TRIALS))
def test_kill_9_mid_stream_then_restart(
    mariadb: EmbeddedMariaDB, tmp_path: Path, trial: int
) -> None:
    rng = random.Random(1000 + trial)
    db = f"crash{trial}"
    begin = log_end(mariadb)
    mariadb.execute(f"DROP DATABASE IF EXISTS {db}", f"CREATE DATABASE {db}")
    mariadb.execute(*(s.format(db=db) for s in DDL))
    cfg = write_config(tmp_path, mariadb, rf"{db}\..*", startup=begin)

    workload = ChangeWorkload(mariadb, db, CHANGES, seed=trial)
    proc = start(cfg)
    workload.start()
    # crash somewhere while the workload and the stream are both running
    time.sleep(rng.uniform(8.0, 20.0))
    assert proc.poll() is None, proc.stdout.read().decode() if proc.stdout else ""
    crash(proc)
    workload.join()
    assert workload.error is None, workload.error

    # restart from the same checkpoint and catch up with everything written
    available_now(cfg)

    lake = tmp_path / "lake" / db
    assert replica_rows(lake / "accounts") == [
        (i, v, b, o, u, int.from_bytes(f, "big") if isinstance(f, bytes) else f)
        for i, v, b, o, u, f in source_rows(mariadb, db)
    ]
    seen = changelog_identities(lake / "accounts__changelog")
    duplicates = {k: n for k, n in seen.items() if n > 1}
    missing = workload.expected - seen
    unexpected = seen - workload.expected
    assert not duplicates, f"{len(duplicates)} changes delivered twice, e.g. {list(duplicates)[:5]}"
    assert not missing, f"{len(missing)} changes missing, e.g. {list(missing)[:5]}"
    assert not unexpected, f"{len(unexpected)} changes never made, e.g. {list(unexpected)[:5]}"
    assert sum(seen.values()) == sum(workload.expected.values()) >= CHANGES
