"""The fault campaign's ``torn-checkpoint``: ``kill -9`` of ``sparkcdc run``, then the newest
Spark checkpoint file cut short as a torn write leaves it. A torn commit file is removed and
its batch written again (the sink skips what it holds): replica and change log exact. A torn
offset file of a committed batch is refused with one sentence naming it; restored, the run
goes on."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from sparkcdc.sources.mysql.throwaway import ThrowawayMariaDB
from tests.cases.e2e_sources import MariaDBSource
from tests.e2e.cli import available_now, run
from tests.e2e.crashes import (
    assert_exactly_once,
    changelog_identities,
    crash_trials,
    replica_rows,
    version,
)
from tests.e2e.workload import ChangeWorkload
from tests.faults.pipeline import one_sentence

pytestmark = [pytest.mark.spark, pytest.mark.mariadb, pytest.mark.slow]

CHANGES = 3000


def newest(folder: Path) -> Path:
    return max((p for p in folder.iterdir() if p.name.isdigit()), key=lambda p: int(p.name))


def test_torn_commit_file_after_kill_9_is_replayed(
    mariadb: ThrowawayMariaDB, db: str, tmp_path: Path
) -> None:
    source = MariaDBSource(mariadb, db)
    source.create_accounts()
    cfg = source.config(tmp_path, "accounts", source.start_capturing(["accounts"]))
    lake, spark = source.lake(tmp_path), tmp_path / "checkpoint" / "spark"
    changelog = lake / "accounts__changelog"

    def workload(trial: int) -> ChangeWorkload:
        return ChangeWorkload(source.server, source.database, CHANGES, trial, source.dialect)

    expected = crash_trials(cfg, lambda: version(str(changelog)), workload, 1, random.Random(7))
    torn = newest(spark / "commits")
    torn.write_bytes(torn.read_bytes()[:5])

    available_now(cfg)  # the torn commit file removed, its batch written again

    assert replica_rows(lake / "accounts") == source.accounts_rows()
    assert_exactly_once(changelog_identities(changelog), expected, CHANGES)

    planned = newest(spark / "offsets")  # the run ended on a committed batch
    whole = planned.read_bytes()
    planned.write_bytes(whole[:40])
    code, out = run(cfg, "--available-now", timeout=300)
    assert code != 0 and one_sentence(out), out
    assert str(planned) in out.strip().splitlines()[-1] and "start the pipeline anew" in out
    planned.write_bytes(whole)  # the way out the sentence names: the file restored
    available_now(cfg)
    assert replica_rows(lake / "accounts") == source.accounts_rows()
