"""What a window learns from its micro-batch's log events, and its chunk as the ``k`` event.

Step 5 of :mod:`sparkcdc.spark.incremental.driver` (DBLog, seed 002): the keys the micro-batch's own
log events touched, old and new, are dropped from the window's chunk rows, since those events
are newer; the rest follow the events as one ``k`` event naming an Arrow file of typed rows.
The same events say whether the window's table changed its schema inside the window (the
window is then read again), which tables' schemas a reader must load again, and which tables
a schema change rewrote so that they are read again whole.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from sparkcdc.core.event import OP_CREATE, OP_DELETE, OP_SCHEMA, OP_UPDATE
from sparkcdc.core.existing_rows import ExistingRows
from sparkcdc.core.images import POSITION, TypedImages, json_values
from sparkcdc.core.offset import Offset
from sparkcdc.core.offset_events import chunk_event
from sparkcdc.core.schema import TableSchema
from sparkcdc.core.table_name import TableName
from sparkcdc.sinks.port import ChunkRef
from sparkcdc.snapshot.correct import key_text
from sparkcdc.snapshot.incremental import Window


def altered(batches: list[pa.RecordBatch], schema: TableSchema) -> bool:
    """Whether the window holds a schema change of the table read (an announcement of the
    schema at the reader's start is none)."""
    picked = events_of(batches, schema.db, schema.table, [OP_SCHEMA], ["after"])
    return any(
        json.loads(after or "{}").get("kind") != "announce"
        for after in picked.column("after").to_pylist()
    )


def events_of(
    batches: list[pa.RecordBatch], db: str, table: str, ops: list[str], columns: list[str]
) -> pa.Table:
    """The ``columns`` of the events of ``db.table`` with an op in ``ops``, in one pass."""
    if not batches:
        return pa.table({c: pa.array([], pa.string()) for c in columns if c != "source"})
    rows = pa.Table.from_batches(batches).select(["op", "db", "table", *columns])
    mask = pc.and_(
        pc.and_(pc.equal(rows.column("db"), db), pc.equal(rows.column("table"), table)),
        pc.is_in(rows.column("op"), pa.array(ops)),
    )
    return rows.filter(mask).select(columns)


def window_chunk_event(
    window: Window,
    batches: list[pa.RecordBatch],
    finish: Offset,
    ts: int,
    images: Sequence[TypedImages] = (),
    database: str | None = None,
) -> pa.RecordBatch:
    """The ``k`` event of ``window`` (its raw chunk file without the keys ``batches`` touched,
    their typed ``images`` included), at ``finish``, the micro-batch's end; ``database``: its
    ``source.db`` where the table's first name part is a schema."""
    raw = Path(window.path)
    with pa.memory_map(str(raw)) as source:
        rows = pa.ipc.open_file(source).read_all()
    changed = touched(batches, window.table, list(window.row_key), images)
    kept = raw  # the window's log events changed none of its keys: the raw file is the chunk
    if changed:
        rows = rows.filter(pc.invert(pc.is_in(rows.column("key"), pa.array(changed))))
        kept = raw.with_name(raw.name.replace(".arrow", ".rows.arrow"))
        write_arrow(kept, rows)
    db, table = TableName.parse(window.table)
    ref: ChunkRef = {"path": str(kept), "rows": rows.num_rows, "incremental": True}
    if window.schema is not None:  # the schema the chunks were read in (catalog's or stream's)
        ref["schema"] = window.schema.to_json()
    return chunk_event(ref, db, table, window.schema_id, finish, ts, database)


def touched(
    batches: list[pa.RecordBatch],
    name: str,
    row_key: list[str],
    images: Sequence[TypedImages] = (),
) -> list[str]:
    """The key texts of ``name``'s rows the log events changed (old and new keys), from their
    JSON images or their typed ``images``."""
    db, table = TableName.parse(name)
    ops = [OP_CREATE, OP_UPDATE, OP_DELETE]
    picked = events_of(batches, db, table, ops, ["before", "after", "source"])
    out: set[str] = set()
    for image_col in ("before", "after"):
        for image in picked.column(image_col).to_pylist():
            if image is not None:
                row = json.loads(image)
                out.add(key_text([row.get(c) for c in row_key]))
    mine = [i for i in images if (i.db, i.table) == (db, table)]
    if mine and picked.num_rows:
        positions = picked.column("source").combine_chunks().field("position")
        for found in mine:
            rows = found.rows.filter(pc.is_in(found.rows.column(POSITION), value_set=positions))
            for side in ("before", "after"):
                values = json_values(rows.column(side), row_key)
                out.update(key_text(v) for v in values if v is not None)
    return sorted(out)


def rewritten(batches: list[pa.RecordBatch]) -> list[tuple[str, str]]:
    """(``db.table``, reason) of each schema event among ``batches`` whose change says its
    table's rows must be read again (``existing.resnapshot``), in log order."""
    if not batches:
        return []
    rows = pa.Table.from_batches(batches).select(["op", "db", "table", "after"])
    picked = rows.filter(pc.equal(rows.column("op"), OP_SCHEMA)).to_pylist()
    out = []
    for row in picked:
        reason = ExistingRows.of_change(json.loads(row["after"] or "{}")).resnapshot
        if reason:
            out.append((str(TableName(row["db"], row["table"])), reason))
    return out


def schema_changed(batches: list[pa.RecordBatch]) -> set[str]:
    """The ``db.table`` names of the schema events among ``batches`` (one pass over them)."""
    if not batches:
        return set()
    rows = pa.Table.from_batches(batches).select(["op", "db", "table"])
    picked = rows.filter(pc.equal(rows.column("op"), OP_SCHEMA))
    dbs, tables = picked.column("db").to_pylist(), picked.column("table").to_pylist()
    return {str(TableName(db, table)) for db, table in zip(dbs, tables, strict=True)}


def write_arrow(path: Path, rows: pa.Table) -> None:
    """``rows`` as an Arrow IPC file at ``path``, whole or not at all."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with pa.OSFile(str(tmp), "wb") as sink, pa.ipc.new_file(sink, rows.schema) as writer:
        writer.write_table(rows)
    os.replace(tmp, path)
