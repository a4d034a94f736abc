"""Exactly once on PostgreSQL, tested by crashing: ``kill -9`` of ``sparkcdc run`` (its whole
process group) five times in the middle of a randomized workload, each time restarting from the
same checkpoint. Afterwards the replica equals the source row by row, the change log holds every
source change exactly once, and the slot's confirmed position never passed what the last run
committed."""

from __future__ import annotations

import os
import random
from collections import Counter
from pathlib import Path

import pytest
from deltalake import DeltaTable

from sparkcdc.sources.postgres.throwaway import ThrowawayPostgres
from tests.e2e.cli import available_now, write_config
from tests.e2e.crashes import crash_trials, replica_rows
from tests.e2e.workload import PG_DDL, POSTGRES, ChangeWorkload

pytestmark = [pytest.mark.postgres, pytest.mark.spark, pytest.mark.slow]

TRIALS = int(os.environ.get("SPARKCDC_CRASH_TRIALS", "5"))
CHANGES = int(os.environ.get("SPARKCDC_PG_CRASH_CHANGES", "50000"))
SLOT = "sparkcdc_checkpoint"  # named after the checkpoint folder


def identities(path: Path) -> Counter[tuple[str, int, int]]:
    """(op, id, version) of each change in the change log; a delete's version is -1: under
    REPLICA IDENTITY DEFAULT its before image holds the key only (each key is deleted once)."""
    table = DeltaTable(str(path)).to_pyarrow_table(columns=["op", "before", "after"]).to_pylist()
    seen: Counter[tuple[str, int, int]] = Counter()
    for row in table:
        if row["op"] == "d":
            seen[("d", int(row["before"]["id"]), -1)] += 1
        else:
            seen[(row["op"], int(row["after"]["id"]), int(row["after"]["version"]))] += 1
    return seen


def source_rows(server: ThrowawayPostgres, db: str) -> list[tuple[object, ...]]:
    return server.query(
        "SELECT id, version, balance, owner, updated, flags FROM accounts ORDER BY id", db
    )


def test_kill_9_mid_stream_then_restart(
    postgres: ThrowawayPostgres, pgdb: str, tmp_path: Path
) -> None:
    rng = random.Random(2000)
    postgres.execute(
        *PG_DDL,
        f"CREATE PUBLICATION {SLOT} FOR TABLE accounts",
        f"SELECT pg_create_logical_replication_slot('{SLOT}', 'pgoutput')",
        database=pgdb,
    )
    cfg = write_config(
        tmp_path, postgres, r"public\.accounts", user=postgres.user, password=postgres.password,
        startup="earliest", kind="postgres", extra_source=f", database: {pgdb}",
    )  # fmt: skip
    changelog = tmp_path / "lake" / "public" / "accounts__changelog"
    written = crash_trials(
        cfg, str(changelog),
        lambda trial: ChangeWorkload(postgres, pgdb, -(-CHANGES // TRIALS), trial, POSTGRES),
        TRIALS, rng,
    )  # fmt: skip
    expected = Counter(
        {(op, key, -1 if op == "d" else v): n for (op, key, v), n in written.items()}
    )

    available_now(cfg)  # restart from the same checkpoint and catch up with everything

    lake = tmp_path / "lake" / "public"
    assert replica_rows(lake / "accounts") == source_rows(postgres, pgdb)
    seen = identities(changelog)
    duplicates = {k: n for k, n in seen.items() if n > 1}
    missing = expected - seen
    unexpected = seen - expected
    assert not duplicates, f"{len(duplicates)} changes delivered twice, e.g. {list(duplicates)[:5]}"
    assert not missing, f"{len(missing)} changes missing, e.g. {list(missing)[:5]}"
    assert not unexpected, f"{len(unexpected)} changes never made, e.g. {list(unexpected)[:5]}"
    assert sum(seen.values()) == sum(expected.values()) >= CHANGES
    assert DeltaTable(str(changelog)).version() >= TRIALS
