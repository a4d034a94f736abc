"""The fault campaign's fast slice (``scripts/faults.sh`` runs the full one): one trial of every
fault kind, at a seed fixed here, against real servers of its own, ``sparkcdc run`` and real
lakes; the independent checker finds no violation. A failure prints the trial's seed and the
command that replays it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.faults.campaign import SINKS, SOURCES, run_campaign
from tests.faults.kinds import FAULTS

pytestmark = [
    pytest.mark.spark, pytest.mark.mariadb, pytest.mark.postgres, pytest.mark.s3,
    pytest.mark.slow,
]  # fmt: skip

SEED = 16  # trials 16 onwards, one per fault kind: every kind once (taken by turn)


def test_every_fault_kind_once_leaves_no_violation(tmp_path: Path) -> None:
    faults = [f for f in FAULTS if f != "disk-full" or os.geteuid() == 0]  # tmpfs needs root
    results = run_campaign(SEED, len(faults), list(SOURCES), list(SINKS), faults, tmp_path)
    assert {r.plan.fault for r in results} == set(faults)
    failed = [r for r in results if r.violations]
    report = (tmp_path / "REPORT.md").read_text()
    assert not failed, report
    assert all(r.recovery_s is not None for r in results), report
