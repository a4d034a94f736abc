"""The keyset SQL written once (:mod:`sparkcdc.sources.keyset_sql`), run by SQLite: a chunk
condition selects exactly the keys a keyset scan in key order puts between its bounds, and
``locate`` counts the bounds at or below each value, with NULL first (MySQL) or last
(PostgreSQL), over nullable and NOT NULL keys, as plain OR terms and as row values."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparkcdc.core.chunk import KeyColumn
from sparkcdc.sources.keyset_sql import (
    KeyRange,
    KeysetSyntax,
    compare_column,
    locate_query,
    range_condition,
)

KEYS = [KeyColumn("a", "int"), KeyColumn("b", "int")]
Key = tuple[int | None, int | None]


def syntax(nulls_first: bool, row_values: bool = False) -> KeysetSyntax:
    return KeysetSyntax(
        lambda _key, v: None if v is None else str(int(str(v))),
        nulls_first=nulls_first,
        true="1",
        false="0",
        same=lambda a, b: f"{a} IS {b}",
        row_values=row_values,
    )


def order(key: Sequence[int | None], nulls_first: bool) -> tuple[tuple[int, int], ...]:
    """The sort key of ``key`` in key order."""
    return tuple(((0 if nulls_first else 1), 0) if v is None else (1 if nulls_first else 0, v)
                 for v in key)  # fmt: skip


def selected(rows: list[Key], condition: str) -> list[Key]:
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE t (a INT, b INT)")
    db.executemany("INSERT INTO t VALUES (?, ?)", rows)
    return sorted(db.execute(f"SELECT a, b FROM t WHERE {condition}").fetchall(), key=str)


values = st.one_of(st.none(), st.integers(0, 3))
keys = st.tuples(values, values)


@settings(max_examples=300, deadline=None)
@given(
    rows=st.lists(keys, max_size=12),
    lo=st.one_of(st.none(), keys),
    hi=st.one_of(st.none(), keys),
    upto=st.one_of(st.none(), keys),
    nulls_first=st.booleans(),
)
def test_a_range_selects_the_keys_between_its_bounds(
    rows: list[Key], lo: Key | None, hi: Key | None, upto: Key | None, nulls_first: bool
) -> None:
    condition = range_condition(syntax(nulls_first), ["a", "b"], KEYS, KeyRange(lo, hi, upto))
    at = lambda k: order(k, nulls_first)  # noqa: E731
    expected = [
        r
        for r in rows
        if (lo is None or at(lo) <= at(r))
        and (hi is None or at(r) < at(hi))
        and (upto is None or at(r) <= at(upto))
    ]
    assert selected(rows, condition) == sorted(expected, key=str)


@settings(max_examples=200, deadline=None)
@given(
    rows=st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3)), max_size=12),
    lo=st.one_of(st.none(), st.tuples(st.integers(0, 3), st.integers(0, 3))),
    hi=st.one_of(st.none(), st.tuples(st.integers(0, 3), st.integers(0, 3))),
    row_values=st.booleans(),
)
def test_not_null_keys_compare_as_row_values_or_terms_alike(
    rows: list[Key], lo: Key | None, hi: Key | None, row_values: bool
) -> None:
    condition = range_condition(
        syntax(False, row_values), ["a", "b"], KEYS, KeyRange(lo, hi), nullable=False
    )
    assert ("(a, b) >=" in condition) == (row_values and lo is not None)
    expected = [r for r in rows if (lo is None or lo <= r) and (hi is None or r < hi)]
    assert selected(rows, condition) == sorted(expected, key=str)


@settings(max_examples=200, deadline=None)
@given(
    points=st.lists(keys, min_size=1, max_size=6),
    bounds=st.lists(keys, min_size=1, max_size=6),
    nulls_first=st.booleans(),
)
def test_locate_counts_the_bounds_at_or_below_each_value(
    points: list[Key], bounds: list[Key], nulls_first: bool
) -> None:
    def literals(key: Key) -> list[str]:
        return ["NULL" if v is None else str(v) for v in key]

    sql = locate_query(
        syntax(nulls_first), [literals(p) for p in points], [literals(b) for b in bounds]
    )
    found = dict(sqlite3.connect(":memory:").execute(sql).fetchall())
    at = lambda k: order(k, nulls_first)  # noqa: E731
    assert [found[i] for i in range(len(points))] == [
        sum(at(b) <= at(p) for b in bounds) for p in points
    ]


def test_the_where_condition_and_open_bounds() -> None:
    s = syntax(True)
    assert range_condition(s, ["a", "b"], KEYS, KeyRange()) == "1"
    assert range_condition(s, ["a", "b"], KEYS, KeyRange(where="a > 1")) == "(a > 1)"
    assert compare_column("a", "<", None, nulls_first=True, nullable=True) is False
    with pytest.raises(ValueError, match="a chunk bound has 1 values for 2 key columns"):
        range_condition(s, ["a", "b"], KEYS, KeyRange((1,)))
