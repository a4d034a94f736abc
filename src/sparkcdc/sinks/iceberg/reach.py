"""The rows of a replica a micro-batch's keys reach, as an Iceberg filter that stays cheap.

pyiceberg binds a filter value by value: an ``In`` of 100,000 keys costs seconds before a file
is read. So a batch's keys become an exact ``In`` only while they are few and the key is one
column (:data:`IN_LIMIT`); otherwise the sorted values of the key's first column are cut into at
most :data:`MAX_RANGES` closed ranges, split at the widest gaps between neighbouring values
(numbers, dates and times) or into runs of equal count (text, binary), and the filter is those
ranges. Files whose statistics miss every range are never read. A range also reaches rows whose
key the batch did not change: :func:`not_gone` finds them, and the writer appends them again in
the same commit as the delete.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import reduce
from typing import cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyiceberg.expressions import (
    And,
    BooleanExpression,
    GreaterThanOrEqual,
    In,
    LessThanOrEqual,
    Or,
)

IN_LIMIT = 2000  # keys of a one-column key given to Iceberg one by one
MAX_RANGES = 32

# pyiceberg's predicates, typed as they are called (their pydantic models mislead mypy)
_IN = cast(Callable[[str, list[object]], BooleanExpression], In)
_AT_LEAST = cast(Callable[[str, object], BooleanExpression], GreaterThanOrEqual)
_AT_MOST = cast(Callable[[str, object], BooleanExpression], LessThanOrEqual)


def reach(keys: pa.Table, names: Sequence[str]) -> tuple[BooleanExpression, bool]:
    """A filter of the rows whose key is among ``keys`` (columns ``names``), and whether it
    reaches those rows only (else some others too)."""
    first = pc.unique(keys.column(names[0]).combine_chunks()).drop_null()
    if len(names) == 1 and len(first) <= IN_LIMIT:
        return _IN(names[0], first.to_pylist()), True
    ordered = first.take(pc.sort_indices(first))
    spans = [
        reduce(And, [_AT_LEAST(names[0], lo), _AT_MOST(names[0], hi)])
        for lo, hi in _ranges(ordered)
    ]
    return (reduce(Or, spans) if len(spans) > 1 else spans[0]), False


def _ranges(ordered: pa.Array) -> list[tuple[object, object]]:
    """At most MAX_RANGES (low, high) covering the sorted distinct values ``ordered``."""
    n = len(ordered)
    if n <= MAX_RANGES:
        return [(v, v) for v in ordered.to_pylist()]
    kind = ordered.type
    numeric = pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_temporal(kind)
    if numeric and not pa.types.is_time(kind):
        values = ordered.cast(pa.int64()) if pa.types.is_temporal(kind) else ordered
        gaps = np.diff(values.to_numpy(zero_copy_only=False).astype(np.float64))
        cuts = np.sort(np.argpartition(gaps, -(MAX_RANGES - 1))[-(MAX_RANGES - 1) :]) + 1
    else:
        cuts = np.linspace(0, n, MAX_RANGES + 1, dtype=np.int64)[1:-1]
    starts = [0, *cuts.tolist()]
    ends = [*(c - 1 for c in cuts.tolist()), n - 1]
    return [(ordered[s].as_py(), ordered[e].as_py()) for s, e in zip(starts, ends, strict=True)]


def not_gone(found: pa.Table, gone: pa.Table, names: Sequence[str]) -> pa.Table:
    """The rows of ``found`` whose key is not one of ``gone``'s."""
    wanted = gone.select(list(names)).group_by(list(names)).aggregate([])
    return found.join(wanted, keys=list(names), join_type="left anti")
