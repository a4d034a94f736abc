"""Change events as they travel through Spark: one row per change, Debezium envelope semantics.

Every micro-batch is a set of rows of one fixed schema per source type (:func:`envelope_schema`),
whatever tables they come from; row images are JSON text (encodings in :mod:`sparkcdc.core.types`),
so one stream carries many tables and DDL changes never change the stream's schema. Sinks turn
row images back into typed columns with the table schema announced by ``op = 's'`` events. A
stream whose micro-batches travel as files (``f`` below) keeps the images typed instead: their
text is null and :mod:`sparkcdc.core.images` holds them beside the events.

==========  ==========================================================================
op          ``c`` insert, ``u`` update, ``d`` delete, ``r`` snapshot read,
            ``s`` schema of a table announced or changed (``ddl`` holds the statement,
            ``schema`` the new :class:`~sparkcdc.core.schema.TableSchema` as JSON),
            ``k`` a snapshot chunk whose ``r`` rows stay in the split store: ``after`` is
            ``{"path": <Arrow file of typed rows>, "rows": n}`` (with ``"incremental":
            true``: a chunk of an incremental snapshot, always merged into the replica),
            ``source`` the chunk's high watermark,
            ``n`` a notification of the incremental snapshots (``after`` the notification
            as JSON: ``{"type": ..., ...}``; ``db``/``table`` the table it is about, or empty),
            ``f`` the events of a whole micro-batch kept in an Arrow file (option ``log_dir``:
            ``after`` is ``{"path": <file>, "rows": n}``, ``source`` the batch's end;
            :mod:`sparkcdc.store.batch_files`);
            in the change log only: ``t`` a TRUNCATE of the table (written by the sink from the
            ``s`` event of kind ``truncate``: ``before`` and ``after`` null, ``source`` and
            ``transaction`` the event's; :mod:`sparkcdc.sinks.changes.truncates`)
db, table   the source table's two-part name (MySQL: database and table; PostgreSQL: schema
            and table)
key         JSON array of the key values (from ``after``, or ``before`` for deletes)
before      JSON object of the row before the change (``u``, ``d``), else null;
            for ``s``: the table's previous schema as JSON (null when new to the stream)
after       JSON object of the row after the change (``c``, ``u``, ``r``), else null;
            for ``s``: ``{"kind": kind}``, kind one of ``announce`` (the schema at the start
            offset), ``create``, ``alter``, ``rename`` (plus ``"from": "db.old"``), ``drop``,
            ``truncate`` or ``unknown`` (a statement that could not be followed; ``schema``
            is then the catalog's current schema, or null); plus ``"existing"`` when the
            change rewrote rows the table held without row events (fill, copy, nulls,
            resnapshot: :mod:`sparkcdc.core.existing_rows`)
schema_id   :meth:`~sparkcdc.core.schema.TableSchema.schema_id` of the schema the row images
            follow (for ``s``: of the new schema, or of the dropped one)
ddl         the DDL statement (``s`` only; null for ``announce``)
schema      the table schema as JSON (``s`` only; null for ``drop``)
source      where the event comes from: the common fields below, then the source's own
            (:data:`~sparkcdc.core.offset.Offset.SOURCE_FIELDS`, e.g. a binlog's ``server_id``,
            ``file``, ``pos``, ``row``, ``gtid``)
transaction id (the source's transaction id: a GTID), total_order (1-based position of the
            event in its transaction), data_collection_order (1-based position among the
            transaction's events of the same table); null for snapshot reads
==========  ==========================================================================

The common fields of ``source`` (:data:`COMMON_SOURCE_FIELDS`):

==========  ==========================================================================
db          the source database (MySQL: the table's database)
schema      the table's schema where the source has schemas (PostgreSQL), else null
table       the table
ts_ms       commit time at the source (snapshot reads: when the chunk was read)
snapshot    true for snapshot reads
position    the event's place in the log as sortable text, ``<log position>:<index>``: the
            position of the log record that holds the event (:meth:`Offset.position`) and the
            event's index in it, ten digits each part; the change log ordered by ``position``
            is in log order. Snapshot reads carry their chunk's high watermark (index 0).
==========  ==========================================================================
"""

from __future__ import annotations

import functools
from typing import TypedDict

import pyarrow as pa

from sparkcdc.core.offset import Offset

OP_CREATE = "c"
OP_UPDATE = "u"
OP_DELETE = "d"
OP_READ = "r"
OP_SCHEMA = "s"
OP_CHUNK = "k"
OP_NOTICE = "n"
OP_FILE = "f"
OP_TRUNCATE = "t"  # change logs only: the sink writes it for an 's' event of kind truncate

COMMON_SOURCE_FIELDS = (
    pa.field("db", pa.string()),
    pa.field("schema", pa.string()),
    pa.field("table", pa.string()),
    pa.field("ts_ms", pa.int64()),
    pa.field("snapshot", pa.bool_()),
    pa.field("position", pa.string()),
)

TRANSACTION_TYPE = pa.struct(
    [
        ("id", pa.string()),
        ("total_order", pa.int64()),
        ("data_collection_order", pa.int64()),
    ]
)

OffsetType = type[Offset]

Change = tuple[str, str | None, str | None, str | None]
"""(op, key JSON, before JSON, after JSON) of one row, as a source's log decoder returns them."""

Image = str | tuple[object, ...] | None
"""A row image: JSON text, or a tuple of every column's typed value (:mod:`.images`)."""

LogChange = tuple[str, str | None, Image, Image]
"""A :data:`Change` whose images may be typed (a log reader opened with typed images)."""


class EnvelopeRow(TypedDict):
    """One event of the envelope as a dict (Arrow's ``to_pylist``), the columns of
    :func:`envelope_schema`."""

    op: str
    db: str
    table: str
    key: str | None
    before: str | None
    after: str | None
    schema_id: str | None
    ddl: str | None
    schema: str | None
    source: dict[str, object]
    transaction: dict[str, object] | None


SchemaRow = tuple[str, str, str | None, str | None, str, str]
"""(db, table, new schema JSON or None if dropped, previous schema JSON or None, change JSON
``{"kind": kind, ...}``, schema_id): one ``op = 's'`` event."""


@functools.cache
def source_type(offsets: OffsetType) -> pa.StructType:
    """The ``source`` struct of a source whose offsets are ``offsets``."""
    return pa.struct([*COMMON_SOURCE_FIELDS, *offsets.SOURCE_FIELDS])


@functools.cache
def envelope_schema(offsets: OffsetType) -> pa.Schema:
    """The stream's schema for a source whose offsets are ``offsets``."""
    return pa.schema(
        [
            ("op", pa.string()),
            ("db", pa.string()),
            ("table", pa.string()),
            ("key", pa.string()),
            ("before", pa.string()),
            ("after", pa.string()),
            ("schema_id", pa.string()),
            ("ddl", pa.string()),
            ("schema", pa.string()),
            ("source", source_type(offsets)),
            ("transaction", TRANSACTION_TYPE),
        ]
    )


_SPARK = {
    pa.string(): "STRING",
    pa.int64(): "BIGINT",
    pa.int32(): "INT",
    pa.bool_(): "BOOLEAN",
}


def spark_ddl(schema: pa.Schema) -> str:
    """The Spark DDL of a schema of strings, integers, booleans and structs of them."""

    def ddl(t: pa.DataType) -> str:
        if pa.types.is_struct(t):
            inner = ", ".join(f"`{t.field(i).name}`: {ddl(t.field(i).type)}"
                              for i in range(t.num_fields))  # fmt: skip
            return f"STRUCT<{inner}>"
        return _SPARK[t]

    return ", ".join(f"`{f.name}` {ddl(f.type)}" for f in schema)


def envelope_ddl(offsets: OffsetType) -> str:
    return spark_ddl(envelope_schema(offsets))
