"""One split, read without locks and made exact (Flink CDC 2.x's chunk scan, seed 003).

::

    low  = low_watermark()        the log end before reading (all of it visible to reads)
    rows = SELECT chunk           lo <= chunk key < hi, as row-image texts or typed columns
    high = low_watermark()        the log end after reading, all of it visible too
    if high != low:               rows changed meanwhile may or may not be in ``rows``:
        replay the window's changes of this table onto the chunk (:mod:`.correct`)

The result is the chunk as of ``high``, tagged with it. The high watermark is taken the way a
low one is (every transaction before it visible to reads started later; it is still past
every change the SELECT saw, as those committed before it), so a task reading splits one after
another passes each split's ``high`` to the next as its ``low``: one watermark per split where
Flink CDC takes two, each a few round trips to the server that wait for a busy CPU. A low
watermark taken earlier only widens the window whose changes are replayed, which is exact
whatever its width.

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

from sparkcdc.core.chunk import KeyColumn, Split
from sparkcdc.core.event import Change
from sparkcdc.core.offset import BinlogOffset
from sparkcdc.core.schema import TableSchema
from sparkcdc.snapshot.correct import ChunkCorrector, image_rows, typed_rows
from sparkcdc.snapshot.dialect import SnapshotDialect
from sparkcdc.snapshot.keyorder import KeyOrder
from sparkcdc.snapshot.state import SplitResult

Hook = Callable[[str, Split], None]
WindowReader = Callable[[str, str, BinlogOffset, BinlogOffset], list[Change]]
"""(db, table, low, high) -> the table's row changes committed in [low, high)."""


def scan_split(
    split: Split,
    schema: TableSchema,
    keys: Sequence[KeyColumn],
    dialect: SnapshotDialect,
    window: WindowReader,
    hook: Hook | None = None,
    task: str = "",
    typed: bool = False,
    low: BinlogOffset | None = None,
) -> SplitResult:
    """Read ``split`` and correct it with its watermark window (see the module docstring);
    ``typed``: the rows as the table's typed columns instead of row-image texts; ``low``: the
    high watermark of the split read before by the same reader, else one is taken now."""
    if low is None:
        low = dialect.low_watermark()
    if hook:
        hook("low", split)
    return _scan(split, schema, keys, dialect, window, low, hook, task, False, typed)


def scan_split_at(
    split: Split,
    schema: TableSchema,
    keys: Sequence[KeyColumn],
    dialect: SnapshotDialect,
    window: WindowReader,
    at: BinlogOffset,
    hook: Hook | None = None,
    typed: bool = False,
) -> SplitResult:
    """Read ``split`` and rewind it to the log position ``at`` (see the module docstring)."""
    return _scan(split, schema, keys, dialect, window, at, hook, "", True, typed)


def _scan(
    split: Split,
    schema: TableSchema,
    keys: Sequence[KeyColumn],
    dialect: SnapshotDialect,
    window: WindowReader,
    low: BinlogOffset,
    hook: Hook | None,
    task: str,
    rewind: bool,
    typed: bool,
) -> SplitResult:
    """SELECT the chunk, take the high watermark, and move the rows to the high watermark
    (forward) or back to ``low`` (``rewind``) with the window's changes."""
    started = time.time()
    rows = dialect.read_chunk(schema, keys, split.lo, split.hi, typed)
    if hook:
        hook("chunk", split)
    high = dialect.watermark() if rewind else dialect.low_watermark()
    if hook:
        hook("high", split)
    changes: list[Change] = []
    if high > low:
        changes = window(*split.db_table, low, high)
        order = KeyOrder(keys, dialect)
        corrector = ChunkCorrector(
            schema.key,
            [k.name for k in keys],
            lambda values: order.within(split, values),
            typed_rows(schema) if typed else image_rows,
        )
        rows = corrector.rewind(rows, changes) if rewind else corrector.apply(rows, changes)
    return SplitResult(
        split,
        rows,
        low,
        low if rewind else high,
        started,
        time.time(),
        len(changes),
        task or f"pid {os.getpid()}",
        [k.to_json() for k in keys],
        list(schema.key),
    )
