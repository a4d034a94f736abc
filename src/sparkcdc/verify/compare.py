"""One chunk compared: the source's rows of a key range against the replica's rows of it.

Both sides are typed Arrow tables with the table's columns in their Delta types (the source's
through the snapshot's typed chunk read, so a value compares as the snapshot would have written
it). Equal chunks cost a sort of each side by key and one ``Table.equals``; an unequal one is
drilled into with a full outer join on the row key, which names the keys missing from the
replica, those it holds beyond the source, and those whose values differ (nulls equal nulls,
NaN equals NaN).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

SOURCE_ROW, REPLICA_ROW = "__verify_source_row", "__verify_replica_row"


@dataclass
class ChunkDiff:
    """The keys (as labels such as ``id=7``) that differ between the two sides of a chunk, and
    for a changed row the columns that differ."""

    missing: list[str] = field(default_factory=list)
    extra: list[str] = field(default_factory=list)
    different: dict[str, list[str]] = field(default_factory=dict)

    @property
    def equal(self) -> bool:
        return not (self.missing or self.extra or self.different)

    @property
    def count(self) -> int:
        return len(self.missing) + len(self.extra) + len(self.different)

    def within(self, keys: set[str]) -> ChunkDiff:
        """Only the differences of ``keys``."""
        return ChunkDiff(
            [k for k in self.missing if k in keys],
            [k for k in self.extra if k in keys],
            {k: v for k, v in self.different.items() if k in keys},
        )

    def without(self, keys: set[str]) -> ChunkDiff:
        """The differences of keys other than ``keys``."""
        return ChunkDiff(
            [k for k in self.missing if k not in keys],
            [k for k in self.extra if k not in keys],
            {k: v for k, v in self.different.items() if k not in keys},
        )

    def merge(self, other: ChunkDiff) -> None:
        """Add ``other``'s differences (each key once)."""
        self.missing += [k for k in other.missing if k not in self.missing]
        self.extra += [k for k in other.extra if k not in self.extra]
        self.different.update(other.different)


def compare_chunk(source: pa.Table, replica: pa.Table, key: Sequence[str]) -> ChunkDiff:
    """``source`` and ``replica`` (the same columns, typed alike) compared row by row by
    ``key``; see the module docstring."""
    order = [(k, "ascending") for k in key]
    if source.num_rows == replica.num_rows and source.sort_by(order).equals(replica.sort_by(order)):
        return ChunkDiff()
    left = source.select(list(key)).append_column(SOURCE_ROW, _positions(source.num_rows))
    right = replica.select(list(key)).append_column(REPLICA_ROW, _positions(replica.num_rows))
    pairs = left.join(right, list(key), join_type="full outer")
    s_rows, r_rows = pairs.column(SOURCE_ROW), pairs.column(REPLICA_ROW)
    diff = ChunkDiff()
    diff.missing = labels(pairs.filter(pc.is_null(r_rows)), key)
    diff.extra = labels(pairs.filter(pc.is_null(s_rows)), key)
    both = pairs.filter(pc.and_(pc.is_valid(s_rows), pc.is_valid(r_rows)))
    ours = source.take(both.column(SOURCE_ROW))
    theirs = replica.take(both.column(REPLICA_ROW))
    changed: dict[int, list[str]] = {}
    for name in source.column_names:
        same = same_values(ours.column(name), theirs.column(name))
        for i in np.flatnonzero(~same):
            changed.setdefault(int(i), []).append(name)
    names = labels(both, key)
    diff.different = {names[i]: columns for i, columns in sorted(changed.items())}
    return diff


def same_values(a: pa.ChunkedArray, b: pa.ChunkedArray) -> np.ndarray:
    """Per row, whether ``a`` and ``b`` hold the same value (null = null, NaN = NaN)."""
    if a.type != b.type:
        return np.zeros(len(a), dtype=bool)
    kind = a.type
    if pa.types.is_nested(kind) or pa.types.is_dictionary(kind):
        return np.array([x == y for x, y in zip(a.to_pylist(), b.to_pylist(), strict=True)])
    equal = pc.fill_null(pc.equal(a, b), False)
    same = pc.or_(equal, pc.and_(pc.is_null(a), pc.is_null(b)))
    if pa.types.is_floating(kind):
        nans = pc.fill_null(pc.and_(pc.is_nan(a), pc.is_nan(b)), False)
        same = pc.or_(same, nans)
    return np.asarray(same.to_numpy(zero_copy_only=False), dtype=bool)


def labels(rows: pa.Table, key: Sequence[str]) -> list[str]:
    """``a=1, b='x'`` for each row of ``rows`` by its ``key`` columns."""
    values = [rows.column(k).to_pylist() for k in key]
    return [
        ", ".join(f"{k}={v!r}" for k, v in zip(key, row, strict=True))
        for row in zip(*values, strict=True)
    ]


def _positions(count: int) -> pa.Array:
    return pa.array(np.arange(count, dtype=np.int64))
