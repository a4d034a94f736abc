"""Cutting a transaction into items with the resume counter (no server needed)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from sparkcdc.core.event import Change
from sparkcdc.core.logitem import LogItem
from sparkcdc.core.offset import position_text
from sparkcdc.sources.mysql.offset import BinlogOffset
from sparkcdc.store.cutter import TransactionCutter

F = "mysql-bin.000002"


def cutter_of(item_rows: int, items: list[LogItem]) -> TransactionCutter:
    return TransactionCutter(item_rows, items.append, BinlogOffset)


def begin(
    cutter: TransactionCutter, pos: int, before: str, gtid: str, ts: int, skip: int = 0
) -> None:
    cutter.begin(BinlogOffset(F, pos, before), gtid, ts, skip)


def add(cutter: TransactionCutter, table: str, pos: int, changes: Sequence[Change]) -> None:
    """The changes of one rows event at ``pos`` of the file ``F``."""
    own = (1, F, pos, None, cutter.transaction)
    cutter.add("db", table, "s1", position_text(2, pos), own, changes)


def run(n: int, item_rows: int, skip: int = 0) -> list[LogItem]:
    items: list[LogItem] = []
    cutter = cutter_of(item_rows, items)
    begin(cutter, 400, "0-1-8", "0-1-9", 1000, skip)
    for first in range(0, n, 4):  # rows events of up to 4 rows, alternating tables
        ids = range(first, min(n, first + 4))
        changes = [("c", f"[{i}]", None, f'{{"id":{i}}}') for i in ids]
        add(cutter, "a" if first % 8 else "b", 500 + first, changes)
    assert cutter.commit(BinlogOffset(F, 900, "0-1-9"))
    cutter.flush()
    return items


@pytest.mark.parametrize("n,k", [(1, 1), (10, 10), (11, 10), (35, 10), (7, 3)])
def test_items_hold_at_most_item_rows_and_carry_the_counter(n: int, k: int) -> None:
    items = run(n, k)
    assert sum(it.rows for it in items) == n
    assert all(0 < it.rows <= k for it in items)
    inner, last = items[:-1], items[-1]
    assert [it.after.skip for it in inner] == [k * (i + 1) for i in range(len(inner))]
    assert all((it.after.file, it.after.pos, it.after.gtid) == (F, 400, "0-1-8") for it in inner)
    assert last.after == BinlogOffset(F, 900) and last.after.gtid == "0-1-9"


@pytest.mark.parametrize("skip", [3, 10, 20, 34])
def test_resume_drops_exactly_the_delivered_rows_and_keeps_orders(skip: int) -> None:
    whole = [r for it in run(35, 10) for r in it.batch.to_pylist()]  # type: ignore[union-attr]
    resumed = [r for it in run(35, 10, skip) for r in it.batch.to_pylist()]  # type: ignore[union-attr]
    assert resumed == whole[skip:]


def test_orders_count_per_transaction_and_per_table() -> None:
    rows = [r for it in run(12, 5) for r in it.batch.to_pylist()]  # type: ignore[union-attr]
    assert [r["transaction"]["total_order"] for r in rows] == list(range(1, 13))
    assert [(r["table"], r["transaction"]["data_collection_order"]) for r in rows] == [
        ("b", 1),
        ("b", 2),
        ("b", 3),
        ("b", 4),
        ("a", 1),
        ("a", 2),
        ("a", 3),
        ("a", 4),
        ("b", 5),
        ("b", 6),
        ("b", 7),
        ("b", 8),
    ]
    assert [r["source"]["row"] for r in rows] == [0, 1, 2, 3] * 3
    assert [r["source"]["pos"] for r in rows] == [500] * 4 + [504] * 4 + [508] * 4


def test_transaction_without_captured_rows_puts_nothing() -> None:
    items: list[LogItem] = []
    cutter = cutter_of(5, items)
    begin(cutter, 4, "", "0-1-1", 0)
    assert cutter.commit(BinlogOffset(F, 100)) is False and items == []
    cutter.flush()
    assert items == []


def single(cutter: TransactionCutter, pos: int, rows: int = 1) -> BinlogOffset:
    """A transaction at ``pos`` with ``rows`` rows (one rows event); returns its end."""
    begin(cutter, pos, "", f"0-1-{pos}", 0)
    add(cutter, "t", pos + 10, [("c", f"[{i}]", None, "{}") for i in range(rows)])
    end = BinlogOffset(F, pos + 100)
    cutter.commit(end)
    return end


def test_committed_transactions_coalesce_into_one_item_with_their_boundaries() -> None:
    items: list[LogItem] = []
    cutter = cutter_of(10, items)
    ends = [single(cutter, pos, rows) for pos, rows in ((100, 1), (200, 3), (300, 2))]
    assert items == []
    begin(cutter, 400, "", "0-1-400", 0)  # no captured rows: the pending item moves on
    assert cutter.commit(BinlogOffset(F, 500))
    cutter.flush()
    (item,) = items
    assert item.rows == 6 and item.after == BinlogOffset(F, 500) and item.at_boundary
    assert item.boundaries == ((1, ends[0]), (4, ends[1]), (6, ends[2]))
    assert item.nbytes is not None and item.size == 64 + item.nbytes
    assert [item.rows_before(BinlogOffset(F, p)) for p in (100, 200, 300, 400, 500)] == [
        0, 1, 4, 6, 6]  # fmt: skip


def test_a_transaction_that_does_not_fit_is_cut_alone_at_the_usual_points() -> None:
    items: list[LogItem] = []
    cutter = cutter_of(10, items)
    first = single(cutter, 100, 4)
    big = single(cutter, 200, 25)  # inner items at skip 10 and 20, its last 5 rows pending
    tail = single(cutter, 300, 5)  # fits with the pending 5
    cutter.flush()
    assert [(it.rows, it.after) for it in items] == [
        (4, first), (10, BinlogOffset(F, 200, skip=10)), (10, BinlogOffset(F, 200, skip=20)),
        (10, tail)]  # fmt: skip
    assert items[0].boundaries == () and items[-1].boundaries == ((5, big),)
    seven = single(cutter, 400, 7)
    eight = single(cutter, 500, 8)  # 7 + 8 > 10: the pending item goes first
    cutter.flush()
    assert [(it.rows, it.after) for it in items[4:]] == [(7, seven), (8, eight)]
