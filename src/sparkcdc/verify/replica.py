"""The replica's side of a verify: its rows in the source's column types, cut into the
source's chunks.

The replica is read whole at its latest version, its columns cast to the Arrow types of the
source's columns (a column the replica lacks, or holds in a type that does not cast, is a
:class:`~sparkcdc.core.errors.SinkError` naming it). Each row is given the index of the chunk its
key falls in: by bisecting the chunk bounds in NumPy for a single integer key, else through
:class:`~sparkcdc.snapshot.keyorder.KeyOrder`, which asks the database for strings, binary and
temporal keys, so collations place replica rows exactly where the source's chunk reads put
them.
"""

from __future__ import annotations

import base64
import datetime as dt
from collections.abc import Sequence
from decimal import Decimal
from pathlib import Path

import numpy as np
import pyarrow as pa
from deltalake import DeltaTable

from sparkcdc.core.chunk import KeyColumn, KeyValue
from sparkcdc.core.convert import arrow_schema
from sparkcdc.core.errors import SinkError
from sparkcdc.core.schema import TableSchema
from sparkcdc.snapshot.dialect import SnapshotDialect
from sparkcdc.snapshot.keyorder import KeyOrder


def read_replica(path: str, schema: TableSchema) -> pa.Table:
    """The replica at ``path`` (empty if it was never written) in ``schema``'s columns."""
    target = arrow_schema(schema)
    if not (Path(path) / "_delta_log").is_dir():
        return target.empty_table()
    table = DeltaTable(path).to_pyarrow_table()
    by_lower = {n.lower(): n for n in table.column_names}
    columns = []
    for f in target:
        found = by_lower.get(f.name.lower())
        if found is None:
            raise SinkError(
                f"the replica of {schema.name} at {path} has no column {f.name}, which the "
                "source has; the pipeline adds columns as it reads their DDL, so let it run "
                "past the change (or snapshot the table again)."
            )
        try:
            columns.append(table.column(found).cast(f.type))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            raise SinkError(
                f"the replica column {schema.name}.{f.name} is {table.schema.field(found).type}, "
                f"which does not read as the source's {f.type} ({exc}); snapshot the table "
                "again to rewrite it."
            ) from exc
    return pa.Table.from_arrays(columns, schema=target)


def chunk_indexes(
    replica: pa.Table,
    keys: Sequence[KeyColumn],
    bounds: Sequence[KeyValue],
    dialect: SnapshotDialect,
) -> np.ndarray:
    """For each replica row, the index of the chunk its chunk key falls in (``bounds``: the
    ascending upper bounds of every chunk but the last)."""
    if replica.num_rows == 0:
        return np.zeros(0, dtype=np.int64)
    if len(keys) == 1 and keys[0].integer and all(-(2**63) <= b[0] < 2**63 for b in bounds):
        values = replica.column(keys[0].name).to_numpy()
        edges = np.array([b[0] for b in bounds], dtype=np.int64)
        return np.searchsorted(edges, values, side="right").astype(np.int64)
    values = key_values(replica, keys)
    return np.array(KeyOrder(keys, dialect).locate(values, bounds), dtype=np.int64)


def key_values(table: pa.Table, keys: Sequence[KeyColumn]) -> list[KeyValue]:
    """The chunk keys of ``table``'s rows in the row-image encoding that chunk bounds use."""
    columns = [[_encoded(v) for v in table.column(k.name).to_pylist()] for k in keys]
    return list(zip(*columns, strict=True))


def _encoded(value: object) -> object:
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, dt.datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, (dt.date, dt.time)):
        return value.isoformat()
    return value


def group_rows(replica: pa.Table, indexes: np.ndarray, count: int) -> list[pa.Table]:
    """``replica``'s rows split into ``count`` tables by chunk index."""
    order = np.argsort(indexes, kind="stable")
    ordered = replica.take(pa.array(order)) if replica.num_rows else replica
    edges = np.searchsorted(indexes[order], np.arange(count + 1), side="left")
    return [ordered.slice(int(a), int(b - a)) for a, b in zip(edges[:-1], edges[1:], strict=True)]


def without_key_text(chunk: pa.Table) -> pa.Table:
    """A typed chunk of the source without its leading ``key`` JSON column."""
    return chunk.drop_columns(["key"]) if "key" in chunk.column_names else chunk
