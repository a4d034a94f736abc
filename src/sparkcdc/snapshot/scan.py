"""One split, read without locks and made exact (Flink CDC 2.x's chunk scan, seed 003).

::

    low  = low_watermark()        the log end before reading (all of it visible to reads)
    rows = SELECT chunk           lo <= chunk key < hi, as row-image texts or typed columns
    high = low_watermark()        the log end after reading, all of it visible too
    if high != low:               rows changed meanwhile may or may not be in ``rows``:
        replay the window's changes of this table onto the chunk (:mod:`.correct`)

A chunk read in a pinned view (the dialect's ``read_point``) is the table at that one
position: both its watermarks are that point, and it has no window. The result is the chunk as
of ``high``, tagged with it. The high watermark is taken the way a
low one is (every transaction before it visible to reads started later; it is still past
every change the SELECT saw, as those committed before it), so a task reading splits one after
another passes each split's ``high`` to the next as its ``low``: one watermark per split where
Flink CDC takes two, each a few round trips to the server that wait for a busy CPU. A low
watermark taken earlier only widens the window whose changes are replayed, which is exact
whatever its width.

:func:`scan_run` stretches the same window over a run of consecutive splits: one SELECT of
their union between one pair of watermarks, cut at their bounds and corrected split by split,
which saves a query (a connection, for connectorx) and a watermark per split.

``hook(stage, split)`` is called after each step (``low``, ``chunk``, ``high``) so tests can
write into the window deterministically.

:func:`scan_split_at` is the variant for one consistent snapshot at a fixed point ``at`` taken
before any split is read (the batch read): the chunk is rewound with the log from ``at`` to its
high watermark instead (:meth:`ChunkCorrector.rewind`).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence

import numpy as np
import pyarrow as pa

from sparkcdc.core.chunk import KeyColumn, Split
from sparkcdc.core.convert import arrow_type
from sparkcdc.core.event import Change
from sparkcdc.core.offset import Offset
from sparkcdc.core.schema import TableSchema
from sparkcdc.snapshot.correct import ChunkCorrector, image_rows, typed_rows
from sparkcdc.snapshot.dialect import SnapshotDialect
from sparkcdc.snapshot.keyorder import KeyOrder
from sparkcdc.snapshot.split_store import SplitResult

Hook = Callable[[str, Split], None]
WindowReader = Callable[[str, str, Offset, Offset], list[Change]]
"""(db, table, low, high) -> the table's row changes committed in [low, high)."""


def scan_run(
    splits: Sequence[Split],
    schema: TableSchema,
    keys: Sequence[KeyColumn],
    dialect: SnapshotDialect,
    window: WindowReader,
    hook: Hook | None = None,
    task: str = "",
    typed: bool = False,
    low: Offset | None = None,
) -> list[SplitResult]:
    """Read one split, or a run of consecutive splits that are :func:`joinable`, and correct
    them with their watermark window (see the module docstring). A run is one SELECT of the
    splits' union between one pair of watermarks, cut at the splits' bounds, each part
    corrected with the window's changes in its own key range: each split's result is what its
    own scan would make of it with that wider window, which is exact whatever its width, and the
    query, connection and watermark that every split would cost are paid once.

    ``typed``: the rows as the table's typed columns instead of row-image texts; ``low``: the
    high watermark of the split read before by the same reader, else one is taken now."""
    if low is None:
        low = dialect.low_watermark()
    _called(hook, "low", splits)
    return _scan(splits, schema, keys, dialect, window, low, hook, task, False, typed)


def scan_split_at(
    split: Split,
    schema: TableSchema,
    keys: Sequence[KeyColumn],
    dialect: SnapshotDialect,
    window: WindowReader,
    at: Offset,
    hook: Hook | None = None,
    typed: bool = False,
) -> SplitResult:
    """Read ``split`` and rewind it to the log position ``at`` (see the module docstring)."""
    return _scan([split], schema, keys, dialect, window, at, hook, "", True, typed)[0]


def _scan(
    splits: Sequence[Split],
    schema: TableSchema,
    keys: Sequence[KeyColumn],
    dialect: SnapshotDialect,
    window: WindowReader,
    low: Offset,
    hook: Hook | None,
    task: str,
    rewind: bool,
    typed: bool,
) -> list[SplitResult]:
    """SELECT the splits, take the high watermark, and move the rows to the high watermark
    (forward) or back to ``low`` (``rewind``) with the window's changes."""
    if len(splits) > 1 and not (typed and joinable(splits, schema, keys)):
        raise ValueError(f"splits {[s.index for s in splits]} cannot be read as one")
    started = time.time()
    rows = dialect.read_chunk(schema, keys, splits[0].lo, splits[-1].hi, typed)
    _called(hook, "chunk", splits)
    high = dialect.watermark() if rewind else dialect.low_watermark()
    _called(hook, "high", splits)
    seen = dialect.read_point()
    if seen is not None:  # read as of one log position: the chunk has no window
        low = high = seen
    changes = window(*splits[0].db_table, low, high) if high > low else []
    ended = time.time()

    def exact(split: Split, part: pa.Table) -> SplitResult:
        if changes:
            order = KeyOrder(keys, dialect)
            corrector = ChunkCorrector(
                schema.key,
                [k.name for k in keys],
                lambda values: order.within(split, values),
                typed_rows(schema) if typed else image_rows,
            )
            part = corrector.rewind(part, changes) if rewind else corrector.apply(part, changes)
        return SplitResult(
            split,
            part,
            low,
            low if rewind else high,
            started,
            ended,
            len(changes),
            task or f"pid {os.getpid()}",
            [k.to_json() for k in keys],
            list(schema.key),
        )

    parts = [rows]
    if len(splits) > 1:
        parts = cut(rows, keys[0].name, [split.hi[0] for split in splits[:-1] if split.hi])
    return [exact(split, part) for split, part in zip(splits, parts, strict=True)]


def _called(hook: Hook | None, stage: str, splits: Sequence[Split]) -> None:
    for split in splits if hook else ():
        hook(stage, split)  # type: ignore[misc]


def joinable(splits: Sequence[Split], schema: TableSchema, keys: Sequence[KeyColumn]) -> bool:
    """Whether :func:`scan_run` may read ``splits`` as one: two or more consecutive splits of
    one table chunked by a single integer key column that is never NULL, with bounds in the
    column's range, so the rows are cut at the splits' bounds here, exactly as the server would
    compare them."""
    if len(splits) < 2 or len(keys) != 1 or not keys[0].numeric:
        return False
    column = schema.column(keys[0].name)
    target = arrow_type(column)
    if column.nullable or not pa.types.is_integer(target):
        return False
    fits = np.iinfo(target.to_pandas_dtype())  # bounds are cut in the column's own type
    return all(
        a.table == b.table and a.hi is not None and a.hi == b.lo and len(a.hi) == 1
        and isinstance(a.hi[0], int) and fits.min <= a.hi[0] <= fits.max
        for a, b in zip(splits, splits[1:], strict=False)
    )  # fmt: skip


def cut(rows: pa.Table, name: str, bounds: Sequence[int]) -> list[pa.Table]:
    """``rows`` in ``len(bounds) + 1`` parts by the integer column ``name``: part ``i`` holds
    ``bounds[i-1] <= value < bounds[i]``. Rows in key order (as a primary key range scan
    returns them) are sliced; others are put in order of their part first."""
    values = rows.column(name).to_numpy()
    edges = np.asarray(bounds, dtype=values.dtype)
    if len(values) < 2 or bool(np.all(values[1:] >= values[:-1])):
        starts = np.searchsorted(values, edges, side="left")
    else:
        part = np.searchsorted(edges, values, side="right")
        rows = rows.take(pa.array(np.argsort(part, kind="stable")))
        starts = np.cumsum(np.bincount(part, minlength=len(bounds) + 1))[:-1]
    ends = [*(int(e) for e in starts), rows.num_rows]
    begins = [0, *ends[:-1]]
    return [rows.slice(a, b - a) for a, b in zip(begins, ends, strict=True)]
