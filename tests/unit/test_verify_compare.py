"""A chunk compared: equal whatever the row order; missing, extra and changed keys named, with
the columns that differ; nulls equal nulls and NaN equals NaN, and nested values compare."""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa

from sparkcdc.verify.compare import compare_chunk, same_values
from sparkcdc.verify.replica import group_rows


def table(ids: list[int], names: list[str | None], scores: list[float | None]) -> pa.Table:
    return pa.table(
        {"id": pa.array(ids, pa.int64()), "name": names, "score": pa.array(scores, pa.float64())}
    )


def test_the_same_rows_in_another_order_are_equal() -> None:
    source = table([1, 2, 3], ["a", None, "c"], [1.0, math.nan, None])
    replica = table([3, 1, 2], ["c", "a", None], [None, 1.0, math.nan])
    assert compare_chunk(source, replica, ["id"]).equal


def test_missing_extra_and_changed_keys_are_named_with_their_columns() -> None:
    source = table([1, 2, 3, 4], ["a", "b", "c", "d"], [1.0, 2.0, 3.0, 4.0])
    replica = table([1, 3, 4, 9], ["a", "C", "d", "z"], [1.0, 3.5, None, 9.0])
    diff = compare_chunk(source, replica, ["id"])
    assert diff.missing == ["id=2"]
    assert diff.extra == ["id=9"]
    assert diff.different == {"id=3": ["name", "score"], "id=4": ["score"]}
    assert diff.count == 4


def test_a_composite_key_and_list_columns() -> None:
    source = pa.table({"a": [1, 1], "b": ["x", "y"], "tags": [[1, 2], None]})
    replica = pa.table({"a": [1, 1], "b": ["y", "x"], "tags": [None, [1, 3]]})
    diff = compare_chunk(source, replica, ["a", "b"])
    assert diff.different == {"a=1, b='x'": ["tags"]}
    assert list(same_values(source.column("tags"), source.column("tags"))) == [True, True]


def test_replica_rows_grouped_by_chunk_keep_every_row_once() -> None:
    rows = table([5, 1, 7, 3], ["e", "a", "g", "c"], [None] * 4)
    groups = group_rows(rows, np.array([2, 0, 2, 1]), 4)
    assert [g.column("id").to_pylist() for g in groups] == [[1], [3], [5, 7], []]
