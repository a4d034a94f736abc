"""What every table format's sink does before and after it writes a history table
(:mod:`.history`): the table's history checked against its schema, the keys a batch touches,
the open versions of those keys picked out, and a DROP TABLE's reset as a closing point."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from sparkcdc.core.errors import SinkError
from sparkcdc.core.event import OP_TRUNCATE
from sparkcdc.core.history_spec import HistorySpec, TableHistory
from sparkcdc.core.table_name import TableName
from sparkcdc.sinks.changes.history import CURRENT, Reset, data_fields, versions


@dataclass(frozen=True)
class HistoryBatch:
    """One table's changes of a micro-batch, as the replica was written from them: ``rows``
    (``op``, ``source``, ``_pos``, in log order, snapshot chunks as their ``r`` rows) and their
    typed images in the replica's ``columns``; ``reset``: a TRUNCATE or DROP in the batch."""

    name: TableName
    key: tuple[str, ...]
    columns: list[pa.Field]
    rows: pa.Table
    before: pa.StructArray
    after: pa.StructArray
    reset: Reset | None = None

    @property
    def closes_all(self) -> bool:
        """Whether every open version may close (a TRUNCATE or DROP in the batch)."""
        if self.reset is not None:
            return True
        return self.rows.num_rows > 0 and bool(
            pc.any(pc.equal(self.rows.column("op"), OP_TRUNCATE)).as_py()
        )


def table_history(spec: HistorySpec, batch: HistoryBatch) -> TableHistory | None:
    """The history ``sink.history`` gives the batch's table (None: none); SinkError naming the
    key for a table without a key or a tracked column the table lacks."""
    found = spec.of(batch.name)
    if found is None:
        return None
    label = str(batch.name)
    if not batch.key:
        raise SinkError(
            f"sink.history keeps versions of {label} by its key, and it has no primary key; "
            f"name its key columns in source.key_columns, or take {label} out of sink.history",
            table=label,
        )
    missing = found.unknown([f.name for f in batch.columns])
    if missing:
        raise SinkError(
            f"sink.history.{label} names the column {', '.join(missing)}, which {label} does "
            "not have; name columns of the table",
            table=label,
        )
    return found


def batch_versions(
    batch: HistoryBatch,
    history: TableHistory,
    schema: pa.Schema,
    open_versions: Callable[[list[str]], pa.Table],
) -> tuple[pa.Table, list[str]]:
    """The versions ``batch`` opens, closes or changes in the history table ``schema`` (the
    table format's ``open_versions`` of the key columns give the open ones before it), and the
    key columns as the table spells them."""
    wanted = {k.lower() for k in batch.key}
    key = [f.name for f in batch.columns if f.name.lower() in wanted]
    tracked = history.tracked([f.name for f in batch.columns])
    rows = versions(batch.rows, batch.before, batch.after, schema, key, tracked,
                    open_versions(key), batch.reset)  # fmt: skip
    return rows, key


def touched_keys(batch: HistoryBatch, key: Sequence[str]) -> pa.Table:
    """The distinct keys of the batch's before and after images (``key``: the column names)."""
    parts = []
    for image in (batch.before, batch.after):
        valid = image.filter(image.is_valid())
        names = [f.name for f in valid.type]
        parts.append(pa.table({k: valid.field(names.index(k)) for k in key}))
    keys = pa.concat_tables(parts)
    return keys.group_by(list(key)).aggregate([]) if keys.num_rows else keys


def open_of(current: pa.Table, keys: pa.Table | None) -> pa.Table:
    """The open versions (``__current``) of ``current`` whose key is one of ``keys`` (None:
    every one), in ``current``'s columns."""
    current = current.filter(pc.fill_null(current.column(CURRENT), False))
    if keys is None or current.num_rows == 0:
        return current
    names = keys.column_names
    wanted = keys.cast(pa.schema([current.schema.field(n) for n in names]))
    picked = current.join(wanted, keys=names, join_type="left semi")
    return picked.select(current.column_names)


def resets_of(envelope: pa.Table, resets: Mapping[TableName, int]) -> dict[TableName, Reset]:
    """Each table's TRUNCATE or DROP (its envelope row) as a :class:`Reset` at its commit."""
    found = {}
    for name, at in resets.items():
        source = envelope.column("source")[at].as_py() or {}
        found[name] = Reset(at, source.get("ts_ms"), source.get("position"))
    return found


def missing_columns(held: Sequence[pa.Field], columns: Sequence[pa.Field]) -> list[pa.Field]:
    """The replica's ``columns`` the history table's columns ``held`` lack."""
    have = {f.name.lower() for f in data_fields(held)}
    return [f for f in columns if f.name.lower() not in have]


def retyped_columns(held: Sequence[pa.Field], columns: Sequence[pa.Field]) -> list[pa.Field]:
    """The replica's ``columns`` the history table holds with another type (a retype the
    replica made: the history table follows it)."""
    types = {f.name.lower(): f.type for f in data_fields(held)}
    return [f for f in columns if f.name.lower() in types and types[f.name.lower()] != f.type]
