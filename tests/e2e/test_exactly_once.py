"""Exactly once, tested by crashing: ``kill -9`` of ``sparkcdc run`` (its whole process group:
driver, JVM and Python workers, as a machine crash would) in the middle of a randomized
workload (100k+ changes on MariaDB, 50k+ on PostgreSQL), once here
(``SPARKCDC_CRASH_TRIALS``; five in ``scripts/crash_trials.sh``), each time restarting from the
same checkpoint. Afterwards the replica equals the source row by row, the change log
holds every source change exactly once (on PostgreSQL: the slot's confirmed position never
passed what the last run committed, or changes would be missing) and the history table equals
the rebuild of the change log (``tests/e2e/history_check.py``)."""

from __future__ import annotations

import os
import random
from collections import Counter
from pathlib import Path

import pytest
from deltalake import DeltaTable

from tests.cases.e2e_sources import E2ESource
from tests.e2e.cli import available_now
from tests.e2e.crashes import (
    assert_exactly_once,
    changelog_identities,
    crash_trials,
    replica_rows,
    version,
)
from tests.e2e.history_check import assert_history_matches, keep_history
from tests.e2e.workload import ChangeWorkload

pytestmark = [pytest.mark.spark, pytest.mark.slow]

TRIALS = int(os.environ.get("SPARKCDC_CRASH_TRIALS", "1"))
CHANGES = {
    "mysql": int(os.environ.get("SPARKCDC_CRASH_CHANGES", "100000")),
    "postgres": int(os.environ.get("SPARKCDC_PG_CRASH_CHANGES", "50000")),
}
SEEDS = {"mysql": 1000, "postgres": 2000}


def test_kill_9_mid_stream_then_restart(source: E2ESource, tmp_path: Path) -> None:
    """TRIALS crashes of one pipeline, each while a part of the workload runs and at a random
    moment after the restarted pipeline wrote again (the later ones while it catches up with
    what it missed); a last restart catches up with everything."""
    rng = random.Random(SEEDS[source.name])
    changes = CHANGES[source.name]
    source.create_accounts()
    startup = source.start_capturing(["accounts"])
    cfg = keep_history(source.config(tmp_path, "accounts", startup))
    lake = source.lake(tmp_path)
    changelog = lake / "accounts__changelog"

    def workload(trial: int) -> ChangeWorkload:
        part = -(-changes // TRIALS)
        return ChangeWorkload(source.server, source.database, part, trial, source.dialect)

    written = crash_trials(cfg, lambda: version(str(changelog)), workload, TRIALS, rng)
    expected = written
    if not source.full_before_image:  # a delete's before image holds its key only
        expected = Counter(
            {(op, key, -1 if op == "d" else v): n for (op, key, v), n in written.items()}
        )

    available_now(cfg)  # restart from the same checkpoint and catch up with everything

    assert replica_rows(lake / "accounts") == source.accounts_rows()
    seen = changelog_identities(changelog)
    assert_exactly_once(seen, expected, changes)
    assert DeltaTable(str(changelog)).version() >= TRIALS
    assert_history_matches(lake.parent, source.schema, "accounts")
