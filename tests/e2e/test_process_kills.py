"""``kill -9`` of one process inside a running pipeline (the fault campaign's
``worker-kill9`` and ``source-kill9``, ``tests/faults/process_kills.py``, which the campaign
runs on both sources; here each on one, the code under test being Spark's side, not a source's):

- a Spark Python worker reading a snapshot chunk: Spark runs its task again, on a local master
  too, and the run goes on through the snapshot and its hand-off to the log (it used to end
  with Spark's report: a local master tried a task once);
- the stream's source process, which Spark does not start again: the run ends with one sentence
  naming it (it used to be Spark's ``[STREAM_FAILED] … SQLSTATE: XXKST``), and a restart
  resumes from the checkpoint, each change once.
"""

from __future__ import annotations

import os
import signal
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from sparkcdc.spark.pipeline.session import SPARK_LOG_LEVEL
from tests.cases.e2e_sources import E2ESource
from tests.e2e.cli import available_now
from tests.e2e.conftest import SOURCES
from tests.e2e.crashes import assert_exactly_once, changelog_identities, replica_rows, version
from tests.e2e.incremental_runs import wait_for
from tests.e2e.snapshot_runs import ITEM_COLUMNS, check_changelog, replica
from tests.e2e.snapshot_workload import Churn, load_items
from tests.e2e.workload import ChangeWorkload
from tests.faults.pipeline import Pipeline, one_sentence
from tests.faults.processes import connected, source_processes, task_workers

pytestmark = [pytest.mark.spark, pytest.mark.slow]

LOST_TASK = "Lost task"  # Spark's log (at WARN) on a task whose worker ended
KILLS = 3  # at most: a task's fourth failure would end the run


def kill_a_reading_worker(pipeline: Pipeline, port: int, handoff: Path) -> int:
    """kill -9 of a task worker while it reads a chunk (connected to the database at ``port``),
    again until Spark's log says it lost a task to it; how many were killed."""
    assert pipeline.proc is not None
    for kills in range(1, KILLS + 1):
        deadline = time.monotonic() + 120
        while not (reading := connected(task_workers(pipeline.proc.pid), port)):
            assert pipeline.alive(), pipeline.output()[-3000:]
            assert not handoff.exists(), "the snapshot ended before a worker was seen reading"
            assert time.monotonic() < deadline, "no task worker read from the database in 120 s"
            time.sleep(0.02)
        os.kill(reading[0].pid, signal.SIGKILL)
        time.sleep(1.5)
        if LOST_TASK in pipeline.output():
            return kills
    raise AssertionError(f"none of {KILLS} kills hit a running task: {pipeline.output()[-3000:]}")


def items(source: E2ESource) -> list[tuple[Any, ...]]:
    return sorted(source.query("SELECT id, version, name, amount FROM items"))


@pytest.mark.parametrize("source", [SOURCES[0]], indirect=True)
def test_worker_killed_mid_snapshot_is_tried_again_and_the_run_goes_on(
    source: E2ESource, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    load_items(source.server, source.database, 12000)
    churn = Churn(source.server, source.database, top=24000, seed=17)
    cfg = source.config(tmp_path, "items", "initial", extra_source=source.snapshot_settings())
    monkeypatch.setenv(SPARK_LOG_LEVEL, "WARN")  # Spark's log tells a task lost
    pipeline = Pipeline(cfg, tmp_path)
    handoff = tmp_path / "checkpoint" / "sparkcdc" / "snapshot" / "handoff.json"
    lake = source.lake(tmp_path)
    churn.start()
    try:
        pipeline.start()
        assert pipeline.proc is not None
        kill_a_reading_worker(pipeline, source.server.port, handoff)
        wait_for(pipeline.proc, handoff.exists, "the snapshot's hand-off in the same run")
        time.sleep(1)  # the log flows past the hand-off while the writes go on
        churn.halt()
        wait_for(  # the same run catches up with the last changes
            pipeline.proc, lambda: replica(lake / "items", ITEM_COLUMNS) == items(source),
            "the replica equal to the source",
        )  # fmt: skip
        assert pipeline.stop() == 0, pipeline.output()[-3000:]
    finally:
        churn.halt()
        if pipeline.alive():
            pipeline.kill9()
    check_changelog(lake / "items__changelog", source.place)


@pytest.mark.parametrize("source", [SOURCES[1]], indirect=True)
def test_source_process_killed_ends_with_a_sentence_and_a_restart_converges(
    source: E2ESource, tmp_path: Path
) -> None:
    source.create_accounts()
    cfg = source.config(tmp_path, "accounts", source.start_capturing(["accounts"]))
    changelog = str(source.lake(tmp_path) / "accounts__changelog")
    pipeline = Pipeline(cfg, tmp_path)
    first = ChangeWorkload(source.server, source.database, 2000, 1, source.dialect)
    pipeline.start()
    first.start()
    try:
        assert pipeline.proc is not None
        wait_for(pipeline.proc, lambda: version(changelog) >= 0, "the stream's first batch")
        [runner] = source_processes(pipeline.proc.pid)
        os.kill(runner.pid, signal.SIGKILL)
        status = pipeline.wait_exit(60)
    finally:
        if pipeline.alive():
            pipeline.kill9()
    first.join()
    out = pipeline.output()
    assert status == 2, out[-3000:]
    assert one_sentence(out), out[-3000:]
    assert out.strip().splitlines()[-1].startswith("sparkcdc: the stream's source process")

    second = ChangeWorkload(source.server, source.database, 1000, 2, source.dialect)
    second.next_id = 10_000_000
    second.start()
    second.join()
    assert first.error is None and second.error is None, (first.error, second.error)
    available_now(cfg)  # the restart resumes from the checkpoint

    assert replica_rows(source.lake(tmp_path) / "accounts") == source.accounts_rows()
    expected = first.expected + second.expected
    if not source.full_before_image:  # a delete's before image holds its key only
        expected = Counter(
            {(op, key, -1 if op == "d" else v): n for (op, key, v), n in expected.items()}
        )
    assert_exactly_once(changelog_identities(changelog), expected, 3000)
