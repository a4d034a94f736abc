"""The envelope's side channels, read the same way by every sink.

Besides the changes (``c``, ``u``, ``d``, ``r``) a micro-batch may carry events that stand for
something kept elsewhere:

====  ======================================================================================
f     the whole micro-batch, kept in an Arrow file by the stream reader
      (:mod:`sparkcdc.store.batch_files`): :func:`read_batch` puts its events in its place
k     a snapshot chunk kept typed in the split store: :func:`chunk_table` reads its rows
      (each an ``r`` row at the chunk's high watermark)
s     a schema event; :func:`is_truncate` says whether it is a TRUNCATE (a ``t`` row of the
      change log, and the replica emptied)
n     a notification of an incremental snapshot: no change
====  ======================================================================================
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import cast

import pyarrow as pa
import pyarrow.compute as pc

from sparkcdc.core.images import TypedImages
from sparkcdc.core.table_name import TableName
from sparkcdc.sinks.port import BatchFrame, ChunkRef
from sparkcdc.store import batch_files

_TRUNCATE = re.compile(r"\s*TRUNCATE\b", re.IGNORECASE)


@dataclass(frozen=True)
class MicroBatch:
    """A micro-batch as a sink reads it: its envelope rows (each ``f`` event replaced by its
    file's events), the typed row images kept beside them, and whether it ends inside a
    transaction that goes on in the next batch (:mod:`sparkcdc.sinks.changes.transactions`)."""

    envelope: pa.Table
    images: list[TypedImages]
    open_end: bool = False


def read_micro_batch(batch: BatchFrame) -> MicroBatch:
    """The micro-batch ``foreachBatch`` handed over, read (:class:`MicroBatch`)."""
    raw = batch.toArrow()
    envelope, images = batch_files.expand(raw)
    return MicroBatch(envelope, images, batch_files.ends_inside_transaction(raw))


def read_batch(batch: BatchFrame) -> tuple[pa.Table, list[TypedImages]]:
    """The micro-batch's envelope rows with each ``f`` event replaced by its file's events,
    and the typed row images kept beside them."""
    read = read_micro_batch(batch)
    return read.envelope, read.images


def chunk_table(after: str | None) -> pa.Table:
    """The typed rows of the chunk a ``k`` event (its ``after``) names, read from the split
    store, without their ``key`` column."""
    where = cast(ChunkRef, json.loads(after or "{}"))
    path = where["path"]
    try:
        with pa.memory_map(path) as source:
            table = pa.ipc.open_file(source).read_all()
    except OSError as exc:
        raise OSError(
            f"the snapshot chunk file {path} is gone ({exc}); the split store must stay "
            "readable by the sink until Spark commits the micro-batch"
        ) from exc
    if table.num_rows != int(where["rows"]):
        raise ValueError(f"{path} holds {table.num_rows} rows, its event says {where['rows']}")
    return table.drop_columns(["key"])


def is_truncate(row: Mapping[str, object]) -> bool:
    """Whether a schema event (as a dict) is a TRUNCATE of a table the sink knows the schema of
    (by the change's kind, else by the statement)."""
    if not row.get("schema_id"):
        return False  # a table never announced has no change log to write to
    after = row.get("after")
    try:
        change = json.loads(after if isinstance(after, str) else "null")
    except ValueError:
        change = None
    if isinstance(change, dict) and "kind" in change:
        return bool(change["kind"] == "truncate")
    ddl = row.get("ddl")
    return bool(_TRUNCATE.match(ddl if isinstance(ddl, str) else ""))


def per_table(rows: pa.Table) -> list[tuple[TableName, pa.Table]]:
    """``rows`` split by table, each table's rows in log order, the tables in the order of
    their first change: one stable sort by name, then slices (not a filter per table)."""
    names = pc.binary_join_element_wise(rows.column("db"), rows.column("table"), "\x00")
    order = pc.sort_indices(names)  # stable: a table's rows keep their log order
    ordered = rows.take(order)
    counts = pc.value_counts(names.take(order)).to_pylist()
    firsts = order.to_numpy()
    parts = []
    start = 0
    for found in counts:
        n = int(found["counts"])
        name = TableName(*str(found["values"]).split("\x00", 1))
        parts.append((int(firsts[start]), name, ordered.slice(start, n)))
        start += n
    return [(name, part) for _, name, part in sorted(parts, key=lambda p: p[0])]
