"""Bulk columns of the envelope: the sortable position texts."""

from __future__ import annotations

from sparkcdc.core import columns as col


def test_positions_count_up_from_each_run_and_sort_as_the_log() -> None:
    prefixes = ["0000000002:0000000100", None, "0000000002:0000000900", "0000000010:0000000004"]
    firsts, counts = [3, 0, 1023, 70_000], [2, 2, 3, 2]
    got = col.positions(prefixes, firsts, counts, sum(counts)).to_pylist()
    assert got == [
        "0000000002:0000000100:0000000003", "0000000002:0000000100:0000000004", None, None,
        "0000000002:0000000900:0000001023", "0000000002:0000000900:0000001024",
        "0000000002:0000000900:0000001025",
        "0000000010:0000000004:0000070000", "0000000010:0000000004:0000070001",
    ]  # fmt: skip
    texts = [t for t in got if t is not None]
    assert texts == sorted(texts)
    one = col.positions(["p"] * 3, [0, 5, 65_535], [1, 1, 1], 3).to_pylist()
    assert one == ["p:0000000000", "p:0000000005", "p:0000065535"]
