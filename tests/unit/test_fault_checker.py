"""The fault campaign's independent checker (``tests/faults/checker.py``) on made-up change logs:
it passes the one right answer and names each kind of wrong one (a checker that cannot fail is
worse than none)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from tests.faults.checker import Identity, check_changelog

COMMITTED: Counter[Identity] = Counter(
    [("c", 1, 0), ("u", 1, 1), ("u", 1, 2), ("c", 2, 0), ("d", 2, 0), ("c", 3, 0)]
)


def row(op: str, key: int, version: int, pos: int) -> dict[str, Any]:
    image = {"id": key, "version": version}
    before, after = (image, None) if op == "d" else (None, image)
    return {"op": op, "before": before, "after": after,
            "source": {"file": "mysql-bin.000001", "pos": pos, "row": 0}}  # fmt: skip


def stream() -> list[dict[str, Any]]:
    return [row("c", 1, 0, 10), row("c", 2, 0, 20), row("u", 1, 1, 30), row("d", 2, 0, 40),
            row("u", 1, 2, 50), row("c", 3, 0, 60)]  # fmt: skip


def test_the_whole_history_once_in_log_order_passes() -> None:
    assert check_changelog(stream(), COMMITTED, reads_allowed=False).ok


def test_a_duplicate_a_gap_an_invention_and_a_reordering_are_each_named() -> None:
    duplicate = [*stream(), row("u", 1, 1, 70)]
    gap = [r for r in stream() if r["source"]["pos"] != 30]
    invented = [*stream(), row("u", 3, 1, 70)]
    reordered = [
        {**r, "source": {**r["source"], "pos": 100 - r["source"]["pos"]}} for r in stream()
    ]
    for rows, words in ((duplicate, "twice"), (gap, "missing"), (invented, "unexpected"),
                        (reordered, "out of log order")):  # fmt: skip
        verdict = check_changelog(rows, COMMITTED, reads_allowed=False)
        assert not verdict.ok and words in verdict.violations[0], verdict.violations


def test_a_snapshot_row_stands_for_the_changes_before_it() -> None:
    rows = [row("r", 1, 1, 5), row("u", 1, 2, 50), row("r", 3, 0, 6)]
    assert check_changelog(rows, COMMITTED, reads_allowed=True).ok  # key 2 lived and died before
    assert not check_changelog(rows, COMMITTED, reads_allowed=False).ok
    twice = [*rows, row("r", 3, 0, 7)]
    assert not check_changelog(twice, COMMITTED, reads_allowed=True).ok
    stale = [row("r", 1, 1, 5), row("u", 1, 1, 40), row("u", 1, 2, 50), row("r", 3, 0, 6)]
    assert not check_changelog(stale, COMMITTED, reads_allowed=True).ok
    never = [row("r", 1, 7, 5), row("r", 3, 0, 6)]
    assert not check_changelog(never, COMMITTED, reads_allowed=True).ok


BEFORE: Counter[Identity] = Counter([("c", 9, 0)])  # written before the stream began
INCREMENTAL = COMMITTED + BEFORE


def test_an_incremental_snapshot_row_holds_its_key_as_the_log_had_it_at_its_place() -> None:
    """Key 1 read after its first update (placed after it in the log), key 9 (never in the
    log) read once, key 3 not read: every logged change is there besides the reads."""
    rows = [*stream(), row("r", 1, 1, 35), row("r", 9, 0, 36)]
    assert check_changelog(rows, INCREMENTAL, True, before_log=BEFORE).ok
    assert check_changelog([*stream(), row("r", 1, 2, 55), row("r", 9, 0, 36)], INCREMENTAL,
                           True, before_log=BEFORE).ok  # fmt: skip


def test_an_incremental_snapshot_row_out_of_its_place_or_missing_is_named() -> None:
    for rows, words in (
        ([*stream(), row("r", 1, 2, 35), row("r", 9, 0, 36)], "log had version 1"),
        ([*stream(), row("r", 1, 1, 55), row("r", 9, 0, 36)], "log had version 2"),
        ([*stream(), row("r", 2, 0, 45), row("r", 9, 0, 36)], "log had no row"),
        ([*stream(), row("r", 9, 0, 36), row("r", 9, 0, 37)], "should not have"),
        (stream(), "key 9: no snapshot row"),
        ([*stream(), row("c", 9, 0, 5), row("r", 9, 0, 36)], "unexpected"),
    ):
        verdict = check_changelog(rows, INCREMENTAL, True, before_log=BEFORE)
        assert not verdict.ok and words in " ".join(verdict.violations), (words, verdict)


def test_after_a_lost_log_the_first_run_then_a_re_snapshot_with_the_gone_keys_deleted() -> None:
    """The first run delivered key 1's insert and key 2's; the log of key 1's first update and
    key 2's delete was lost, the re-snapshot read key 1 at version 1 and logged key 2's delete;
    key 3 came after it."""
    first: Counter[Identity] = Counter([("c", 1, 0), ("c", 2, 0)])
    rows = [row("c", 1, 0, 10), row("c", 2, 0, 20), row("r", 1, 1, 100), row("d", 2, 0, 101),
            row("u", 1, 2, 110), row("c", 3, 0, 120)]  # fmt: skip
    assert check_changelog(rows, COMMITTED, True, first_run=first).ok
    for wrong, words in (
        ([r for r in rows if r["source"]["pos"] != 10], "missing"),  # the first run's change lost
        ([r for r in rows if r["source"]["pos"] != 101], "missing"),  # the gone key kept
        ([*rows, row("d", 2, 0, 102)], "twice"),
        ([*rows, row("u", 1, 1, 105)], "unexpected"),  # a change the snapshot row holds
        ([row("c", 1, 0, 115), *rows[1:]], "after a later one"),
    ):
        verdict = check_changelog(wrong, COMMITTED, True, first_run=first)
        assert not verdict.ok and words in " ".join(verdict.violations), (words, verdict)
    # key 1 untouched while the log was lost: read at the version the first run delivered
    first_u: Counter[Identity] = Counter([("c", 1, 0), ("u", 1, 1), ("c", 2, 0)])
    rows = [row("c", 1, 0, 10), row("c", 2, 0, 20), row("u", 1, 1, 30), row("r", 1, 1, 100),
            row("d", 2, 0, 101), row("u", 1, 2, 110), row("c", 3, 0, 120)]  # fmt: skip
    assert check_changelog(rows, COMMITTED, True, first_run=first_u).ok
