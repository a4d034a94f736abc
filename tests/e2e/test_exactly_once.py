"""Exactly once, tested by crashing: ``kill -9`` of ``sparkcdc run`` (its whole process group:
driver, JVM and Python workers, as a machine crash would) five times in the middle of a
randomized workload of 100k+ changes, each time restarting from the same checkpoint. Afterwards
the replica equals the source row by row and the change log holds every source change exactly
once."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from sparkcdc.sources.mysql.throwaway import ThrowawayMariaDB
from tests.e2e.cli import available_now, log_end, write_config
from tests.e2e.crashes import changelog_identities, crash_trials, replica_rows, source_rows
from tests.e2e.workload import DDL, ChangeWorkload

pytestmark = [pytest.mark.mariadb, pytest.mark.spark, pytest.mark.slow]

TRIALS = int(os.environ.get("SPARKCDC_CRASH_TRIALS", "5"))
CHANGES = int(os.environ.get("SPARKCDC_CRASH_CHANGES", "100000"))


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
    changelog = str(tmp_path / "lake" / db / "accounts__changelog")

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
