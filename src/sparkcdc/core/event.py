"""Change events as they travel through Spark: one row per change, Debezium envelope semantics.

Every micro-batch is a set of rows with the fixed schema :data:`ENVELOPE_DDL`, whatever tables
they come from; row images are JSON text (encodings in :mod:`sparkcdc.core.schema`), so one stream
carries many tables and DDL changes never change the stream's schema. Sinks turn row images back
into typed columns with the table schema announced by ``op = 's'`` events.

==========  ==========================================================================
op          ``c`` insert, ``u`` update, ``d`` delete, ``r`` snapshot read,
            ``s`` schema of a table announced or changed (``ddl`` holds the statement,
            ``schema`` the new :class:`~sparkcdc.core.schema.TableSchema` as JSON)
db, table   the source table
key         JSON array of the key values (from ``after``, or ``before`` for deletes)
before      JSON object of the row before the change (``u``, ``d``), else null
after       JSON object of the row after the change (``c``, ``u``, ``r``), else null
schema_id   :meth:`TableSchema.schema_id` of the schema the row images follow
ddl         the DDL statement (``s`` only)
schema      the table schema as JSON (``s`` only)
source      server_id, file, pos (of the rows event), row (index inside that event), gtid,
            ts_ms (commit time at the source), db, table, snapshot
transaction id (the GTID), total_order (1-based position of the event in its transaction),
            data_collection_order (1-based position among the transaction's events of the
            same table)
==========  ==========================================================================

Log order is ``(source.file, source.pos, source.row)``: binlog file names have fixed-width
sequence numbers, so the string order of ``file`` is the log order.
"""

from __future__ import annotations

import pyarrow as pa

OP_CREATE = "c"
OP_UPDATE = "u"
OP_DELETE = "d"
OP_READ = "r"
OP_SCHEMA = "s"

SOURCE_TYPE = pa.struct(
    [
        ("server_id", pa.int64()),
        ("file", pa.string()),
        ("pos", pa.int64()),
        ("row", pa.int32()),
        ("gtid", pa.string()),
        ("ts_ms", pa.int64()),
        ("db", pa.string()),
        ("table", pa.string()),
        ("snapshot", pa.bool_()),
    ]
)

TRANSACTION_TYPE = pa.struct(
    [
        ("id", pa.string()),
        ("total_order", pa.int64()),
        ("data_collection_order", pa.int64()),
    ]
)

ENVELOPE_SCHEMA = pa.schema(
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
        ("source", SOURCE_TYPE),
        ("transaction", TRANSACTION_TYPE),
    ]
)

ENVELOPE_DDL = (
    "op STRING, db STRING, `table` STRING, key STRING, before STRING, after STRING, "
    "schema_id STRING, ddl STRING, `schema` STRING, "
    "source STRUCT<server_id: BIGINT, file: STRING, pos: BIGINT, `row`: INT, gtid: STRING, "
    "ts_ms: BIGINT, db: STRING, `table`: STRING, snapshot: BOOLEAN>, "
    "transaction STRUCT<id: STRING, total_order: BIGINT, data_collection_order: BIGINT>"
)


class EnvelopeBuilder:
    """Collects change events column by column and emits :data:`ENVELOPE_SCHEMA` batches.

    Appending to Python lists and building each Arrow column once is the cheapest way from
    decoded values to Arrow here; building a dict per row would cost more than decoding.
    """

    __slots__ = ("cols",)

    def __init__(self) -> None:
        self.cols: dict[str, list[object]] = {name: [] for name in _FLAT_COLUMNS}

    def __len__(self) -> int:
        return len(self.cols["op"])

    def append(
        self,
        op: str,
        db: str,
        table: str,
        key: str | None,
        before: str | None,
        after: str | None,
        schema_id: str,
        *,
        server_id: int,
        file: str,
        pos: int,
        row: int,
        gtid: str,
        ts_ms: int,
        total_order: int,
        data_collection_order: int,
        snapshot: bool = False,
        ddl: str | None = None,
        schema: str | None = None,
    ) -> None:
        c = self.cols
        c["op"].append(op)
        c["db"].append(db)
        c["table"].append(table)
        c["key"].append(key)
        c["before"].append(before)
        c["after"].append(after)
        c["schema_id"].append(schema_id)
        c["ddl"].append(ddl)
        c["schema"].append(schema)
        c["server_id"].append(server_id)
        c["file"].append(file)
        c["pos"].append(pos)
        c["row"].append(row)
        c["gtid"].append(gtid)
        c["ts_ms"].append(ts_ms)
        c["snapshot"].append(snapshot)
        c["total_order"].append(total_order)
        c["data_collection_order"].append(data_collection_order)

    def build(self) -> pa.RecordBatch:
        c = self.cols
        source = pa.StructArray.from_arrays(
            [
                pa.array(c["server_id"], pa.int64()),
                pa.array(c["file"], pa.string()),
                pa.array(c["pos"], pa.int64()),
                pa.array(c["row"], pa.int32()),
                pa.array(c["gtid"], pa.string()),
                pa.array(c["ts_ms"], pa.int64()),
                pa.array(c["db"], pa.string()),
                pa.array(c["table"], pa.string()),
                pa.array(c["snapshot"], pa.bool_()),
            ],
            fields=list(SOURCE_TYPE),
        )
        transaction = pa.StructArray.from_arrays(
            [
                pa.array(c["gtid"], pa.string()),
                pa.array(c["total_order"], pa.int64()),
                pa.array(c["data_collection_order"], pa.int64()),
            ],
            fields=list(TRANSACTION_TYPE),
        )
        columns = [pa.array(c[name], pa.string()) for name in _STRING_COLUMNS]
        return pa.RecordBatch.from_arrays(
            [*columns, source, transaction], schema=ENVELOPE_SCHEMA
        )


_STRING_COLUMNS = ("op", "db", "table", "key", "before", "after", "schema_id", "ddl", "schema")
_FLAT_COLUMNS = (
    *_STRING_COLUMNS,
    "server_id",
    "file",
    "pos",
    "row",
    "gtid",
    "ts_ms",
    "snapshot",
    "total_order",
    "data_collection_order",
)
