"""Events made at an offset rather than read from a log record: snapshot reads, kept chunks,
schema announcements and notifications.

Their ``source`` struct carries the offset they are exact at (a chunk's high watermark, the
micro-batch end a notification was made at) and the source's own fields as the offset gives
them (:meth:`~sparkcdc.core.offset.Offset.source_fields`). The events made together (a chunk's
rows, a batch's notifications) share its position (index 0: they are one instant of the log)
and are numbered from 0 by the source's event counter (MySQL's ``row``). They belong to no
transaction, as snapshot reads do not in Debezium.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

import pyarrow as pa

from sparkcdc.core import columns as col
from sparkcdc.core.envelope import EnvelopeBuilder, OwnValues
from sparkcdc.core.event import (
    OP_CHUNK,
    OP_FILE,
    OP_NOTICE,
    OP_READ,
    OP_SCHEMA,
    TRANSACTION_TYPE,
    OffsetType,
    SchemaRow,
    envelope_schema,
    source_type,
)
from sparkcdc.core.json_value import JSONObject
from sparkcdc.core.offset import Offset

Notice = tuple[str, str, JSONObject]
"""(db, table, notification): one incremental-snapshot notification (db, table empty when it is
about the snapshots as a whole)."""


def offset_source(
    n: int,
    db: str | pa.Array,
    table: str | pa.Array,
    at: Offset,
    ts_ms: int,
    *,
    snapshot: bool,
    database: str | None = None,
) -> pa.StructArray:
    """The ``source`` column of ``n`` events made at ``at``: its position, its own fields as it
    gives them, the event counter numbering them from 0; ``db``/``table`` one name or one per
    event; ``database`` the source's database where ``db`` is a schema
    (:attr:`~sparkcdc.config.model.SourceSettings.source_database`)."""
    dbs = col.strings_cached(db, n) if isinstance(db, str) else db
    tables = col.strings_cached(table, n) if isinstance(table, str) else table
    names = [dbs, pa.nulls(n, col.STRING)] if database is None else [
        col.strings_cached(database, n), dbs]  # fmt: skip
    values = at.source_fields()
    counter = type(at).EVENT_COUNTER
    own = [col.counters(f.type, [0], [n], n) if f.name == counter
           else col.constant(f.type, values.get(f.name), n)
           for f in type(at).SOURCE_FIELDS]  # fmt: skip
    return col.from_buffers(
        source_type(type(at)), n, [None],
        children=[*names, tables, col.int64s(ts_ms, n), col.bools(snapshot, n),
                  col.strings(f"{at.position()}:{0:0{col.INDEX_DIGITS}d}", n), *own],
    )  # fmt: skip


def snapshot_batch(
    keys: pa.Array,
    afters: pa.Array,
    db: str,
    table: str,
    schema_id: str,
    at: Offset,
    ts_ms: int,
    op: str = OP_READ,
    database: str | None = None,
) -> pa.RecordBatch:
    """Snapshot reads (``op = 'r'``, ``source.snapshot = true``) of one chunk, built in bulk:
    ``keys`` and ``afters`` are the chunk's JSON texts, ``at`` its high watermark, the log
    position its rows are exact at. With ``op = 'k'`` (:data:`OP_CHUNK`) it is the one row that
    stands for a chunk kept in the split store. ``database`` as for :func:`offset_source`."""
    n = len(keys)
    return pa.RecordBatch.from_arrays(
        [
            col.strings_cached(op, n),
            col.strings_cached(db, n),
            col.strings_cached(table, n),
            keys.cast(col.STRING),
            pa.nulls(n, col.STRING),
            afters.cast(col.STRING),
            col.strings_cached(schema_id, n),
            pa.nulls(n, col.STRING),
            pa.nulls(n, col.STRING),
            offset_source(n, db, table, at, ts_ms, snapshot=True, database=database),
            pa.nulls(n, TRANSACTION_TYPE),
        ],
        schema=envelope_schema(type(at)),
    )


def chunk_event(
    ref: Mapping[str, object],
    db: str,
    table: str,
    schema_id: str,
    at: Offset,
    ts_ms: int,
    database: str | None = None,
) -> pa.RecordBatch:
    """The one ``k`` event of a chunk whose typed rows are kept in a file: ``ref`` names the
    file (``path``) and its ``rows``, and whatever else its reader needs; the event adds the
    source field that numbers the rows (``counter``, if the source has one)."""
    counter = type(at).EVENT_COUNTER
    text = json.dumps(ref if counter is None else {**ref, "counter": counter},
                      separators=(",", ":"))  # fmt: skip
    keys, refs = pa.nulls(1, col.STRING), pa.array([text], col.STRING)
    return snapshot_batch(keys, refs, db, table, schema_id, at, ts_ms, OP_CHUNK, database)


def file_event(ref: Mapping[str, object], at: Offset) -> pa.RecordBatch:
    """The one ``f`` event standing for the events of a micro-batch ending at ``at`` that are
    kept in the file ``ref`` names (``path``, ``rows``)."""
    text = pa.array([json.dumps(ref, separators=(",", ":"))], col.STRING)
    nothing = pa.nulls(1, col.STRING)
    return pa.RecordBatch.from_arrays(
        [col.strings_cached(OP_FILE, 1), col.strings_cached("", 1), col.strings_cached("", 1),
         nothing, nothing, text, nothing, nothing, nothing,
         offset_source(1, "", "", at, 0, snapshot=False), pa.nulls(1, TRANSACTION_TYPE)],
        schema=envelope_schema(type(at)),
    )  # fmt: skip


def own_values(offsets: OffsetType, at: Offset | None) -> OwnValues:
    """The source's own ``source`` fields of an event made at ``at`` (None: all null)."""
    values = {} if at is None else at.source_fields()
    return tuple(values.get(f.name) for f in offsets.SOURCE_FIELDS)


def schema_batch(
    tables: Sequence[SchemaRow],
    offsets: OffsetType,
    *,
    position: str | None,
    own: OwnValues,
    ts_ms: int,
    ddl: str | None = None,
    transaction: str = "",
    database: str | None = None,
) -> pa.RecordBatch:
    """One ``op = 's'`` event per table (``schema`` the new schema, ``before`` the old,
    ``after`` the change) of one log record at ``position`` (None: at no log position, as a
    snapshot's announcements), the source's own fields ``own``; ``database`` as for
    :class:`~sparkcdc.core.envelope.EnvelopeBuilder`."""
    builder = EnvelopeBuilder(offsets, database)
    for order, (db, table, schema_json, before_json, change, schema_id) in enumerate(tables, 1):
        builder.extend(
            [(OP_SCHEMA, None, before_json, change)], db, table, schema_id,
            position=position, index=order - 1, own=own, ts_ms=ts_ms, transaction=transaction,
            total_order=order, data_collection_order=1, ddl=ddl, schema=schema_json,
        )  # fmt: skip
    return builder.build()


def notice_batch(
    notices: Sequence[Notice], at: Offset, ts_ms: int, database: str | None = None
) -> pa.RecordBatch:
    """The ``n`` events of ``notices``, made at ``at``: no key, schema or transaction;
    ``database`` as for :func:`offset_source`."""
    n = len(notices)
    dbs = pa.array([db for db, _, _ in notices], col.STRING)
    tables = pa.array([table for _, table, _ in notices], col.STRING)
    texts = pa.array([json.dumps(notice) for _, _, notice in notices], col.STRING)
    nothing = pa.nulls(n, col.STRING)
    return pa.RecordBatch.from_arrays(
        [
            col.strings_cached(OP_NOTICE, n),
            dbs,
            tables,
            nothing,
            nothing,
            texts,
            nothing,
            nothing,
            nothing,
            offset_source(n, dbs, tables, at, ts_ms, snapshot=False, database=database),
            pa.nulls(n, TRANSACTION_TYPE),
        ],
        schema=envelope_schema(type(at)),
    )
