"""The fault campaign's report (``tests/faults/report.py``) on made-up trials: its counts per
fault × phase (MariaDB + PostgreSQL), × sink and × outcome, its recovery percentiles and its
violations with the command that replays each."""

from __future__ import annotations

import tests.faults.kinds  # noqa: F401  (the fault kinds first: the modules import each other)
from tests.faults.report import _markdown, percentile
from tests.faults.trial import Plan, Result

ARGS = "--sources mysql,postgres"


def trial(seed: int, source: str, phase: str, fault: str, recovery: float | None = 2.0,
          violations: tuple[str, ...] = ()) -> Result:  # fmt: skip
    plan = Plan(seed, source, "delta", phase, fault, 0.5)
    return Result(plan, phase_seen=phase, outcome="survived", recovery_s=recovery,
                  violations=list(violations), commit="abc1234")  # fmt: skip


def test_counts_per_fault_phase_and_source_recovery_and_replays() -> None:
    results = [
        trial(1, "mysql", "stream", "db-kill9", 4.0),
        trial(2, "postgres", "stream", "db-kill9", 8.0),
        trial(3, "mysql", "snapshot", "db-kill9", 6.0),
        trial(4, "postgres", "snapshot", "net-cut-short", None, ("replica: key 7 missing",)),
    ]
    lines = _markdown(results, 1, ARGS, 120)
    text = "\n".join(lines)
    assert "4 trials in 120 s, **1 with violations**" in text
    assert "Code: `abc1234` (4 trials)." in text
    assert "| fault | snapshot | stream | all |" in lines
    assert "| db-kill9 | 1+0 | 1+1 | 3 |" in lines
    assert "| net-cut-short | 0+1 |  | 1 |" in lines
    assert "| db-kill9 | 3 | 6 | 8 |" in lines  # recovery: 3 trials, p50 6 s, p99 8 s
    assert (
        "- seed 4 (net-cut-short, snapshot, postgres, delta): replica: key 7 missing. Replay: "
        f"`scripts/faults.sh --seed 4 --trials 1 {ARGS}`"
    ) in lines


def test_percentile_by_nearest_rank() -> None:
    assert percentile([1.0], 0.99) == 1.0
    assert percentile([3.0, 1.0, 2.0], 0.5) == 2.0
    assert percentile([float(n) for n in range(1, 101)], 0.99) == 99.0
