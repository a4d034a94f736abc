"""History tables (``sink.history``): a slowly changing dimension of type 2 (Kimball), one row
per version of a key, computed once for every table format from a micro-batch's changes.

Databricks' AUTO CDC (``APPLY CHANGES … STORED AS SCD TYPE 2``) keeps the same rows, but guesses
the order of changes from a ``sequence_by`` column; here the change log's own order is exact:
the changes of one table in the micro-batch, in log order (``source.position``, then their place
in the batch), each applied to the key's open version (``__end_position`` null):

========  ========================================================================
``r``     a key with an open version whose tracked values equal the row's: the open
          version's other columns updated in place; else as ``c``
``c``     the open version (if any) closed at this change; a version opened
``u``     the key unchanged and its tracked values too: the open version updated in
          place (its ``__start_*`` and ``__op`` kept); else the old key's version
          closed and one opened for the after image's key, ``__op = 'u'``
``d``     the open version closed
``t``     (a TRUNCATE; a DROP TABLE as ``reset``) every open version closed
========  ========================================================================

Closing sets ``__end_at`` / ``__end_position`` to the closing change's commit time and position
and ``__current`` false. The open versions before the batch are read from the history table
(the ``__current`` rows of the keys the batch touches, of every key after a TRUNCATE); the
result is every version the batch opened, closed or changed, to upsert into the history table
keyed on the table's key and ``__start_position``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from sparkcdc.core.event import OP_CREATE, OP_DELETE, OP_READ, OP_TRUNCATE, OP_UPDATE

HISTORY_SUFFIX = "__history"
START_AT = "__start_at"
START_POSITION = "__start_position"
END_AT = "__end_at"
END_POSITION = "__end_position"
CURRENT = "__current"
OP = "__op"
TIMESTAMP = pa.timestamp("us", tz="UTC")
VERSION_FIELDS = [
    pa.field(START_AT, TIMESTAMP),
    pa.field(START_POSITION, pa.string()),
    pa.field(END_AT, TIMESTAMP),
    pa.field(END_POSITION, pa.string()),
    pa.field(CURRENT, pa.bool_()),
    pa.field(OP, pa.string()),
]
VERSION_COLUMNS = [f.name for f in VERSION_FIELDS]

Row = dict[str, Any]
Key = tuple[Any, ...]


def history_schema(columns: Sequence[pa.Field]) -> pa.Schema:
    """The history table's columns: the table's (as the replica's), then the version's."""
    names = {f.name for f in VERSION_FIELDS}
    return pa.schema([f for f in columns if f.name not in names] + VERSION_FIELDS)


def data_fields(schema: pa.Schema | Sequence[pa.Field]) -> list[pa.Field]:
    """The table's own columns of a history table's ``schema``."""
    return [f for f in schema if f.name not in VERSION_COLUMNS]


@dataclass(frozen=True)
class Reset:
    """A DROP TABLE (or TRUNCATE) at ``at`` in the batch (the envelope row index, as ``_pos``)."""

    at: int
    ts_ms: int | None
    position: str | None


def versions(
    changes: pa.Table,
    before: pa.StructArray,
    after: pa.StructArray,
    schema: pa.Schema,
    key: Sequence[str],
    tracked: Sequence[str],
    open_rows: pa.Table,
    reset: Reset | None = None,
) -> pa.Table:
    """The versions the ``changes`` (one table's, in log order: ``op``, ``source``, ``_pos``;
    their typed images) open, close or change, given the ``open_rows`` of the history table
    ``schema`` before them (module docstring); rows of ``schema``."""
    state = _State(schema, key, tracked)
    for row in open_rows.select(schema.names).to_pylist():
        state.open[state.key_of(row)] = row
    source = changes.column("source").combine_chunks()
    steps = zip(
        changes.column("op").to_pylist(),
        changes.column("_pos").to_pylist(),
        source.field("ts_ms").to_pylist(),
        source.field("position").to_pylist(),
        before.to_pylist(),
        after.to_pylist(),
        strict=True,
    )
    for op, pos, ts_ms, position, old, new in steps:
        if reset is not None and pos > reset.at:
            state.close_all(reset.ts_ms, reset.position)
            reset = None
        state.apply(op, _at(ts_ms), position, old, new)
    if reset is not None:
        state.close_all(reset.ts_ms, reset.position)
    return pa.Table.from_pylist(list(state.changed.values()), schema=schema)


def _at(ts_ms: int | None) -> dt.datetime | None:
    if ts_ms is None:
        return None
    return dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(milliseconds=int(ts_ms))


class _State:
    """The open version of each key, and the versions changed so far (by key and start)."""

    def __init__(self, schema: pa.Schema, key: Sequence[str], tracked: Sequence[str]) -> None:
        names = data_fields(schema)
        self.columns = [f.name for f in names]
        lower = {c.lower(): c for c in self.columns}
        self.key = [lower[k.lower()] for k in key]
        self.tracked = [lower[t.lower()] for t in tracked if t.lower() in lower]
        self.open: dict[Key, Row] = {}
        self.changed: dict[tuple[Key, str | None], Row] = {}

    def key_of(self, image: Row) -> Key:
        return tuple(image.get(k) for k in self.key)

    def apply(
        self, op: str, at: dt.datetime | None, position: str | None, old: Row | None,
        new: Row | None,
    ) -> None:  # fmt: skip
        """One change (module docstring's table)."""
        if op == OP_TRUNCATE:
            self.close_all(at, position)
        elif op == OP_DELETE and old is not None:
            self._close(self.key_of(old), at, position)
        elif op in (OP_CREATE, OP_READ, OP_UPDATE) and new is not None:
            key = self.key_of(new)
            if op == OP_UPDATE and old is not None and self.key_of(old) != key:
                self._close(self.key_of(old), at, position)  # the key moved
            held = self.open.get(key)
            if op != OP_CREATE and held is not None and self._same(held, new):
                self._keep({**held, **self._values(new)})
                return
            self._close(key, at, position)
            self._keep({**self._values(new), START_AT: at, START_POSITION: position,
                        END_AT: None, END_POSITION: None, CURRENT: True, OP: op})  # fmt: skip

    def close_all(self, at: dt.datetime | int | None, position: str | None) -> None:
        when = _at(at) if isinstance(at, int) else at
        for key in list(self.open):
            self._close(key, when, position)

    def _close(self, key: Key, at: dt.datetime | None, position: str | None) -> None:
        held = self.open.pop(key, None)
        if held is not None:
            self._record({**held, END_AT: at, END_POSITION: position, CURRENT: False})

    def _keep(self, row: Row) -> None:
        self.open[self.key_of(row)] = row
        self._record(row)

    def _record(self, row: Row) -> None:
        self.changed[(self.key_of(row), row[START_POSITION])] = row

    def _values(self, image: Row) -> Row:
        return {c: image.get(c) for c in self.columns}

    def _same(self, held: Row, image: Row) -> bool:
        return all(held.get(c) == image.get(c) for c in self.tracked)
