"""Change events as they travel through Spark: one row per change, Debezium envelope semantics.

Every micro-batch is a set of rows with the fixed schema :data:`ENVELOPE_DDL`, whatever tables
they come from; row images are JSON text (encodings in :mod:`sparkcdc.core.schema`), so one stream
carries many tables and DDL changes never change the stream's schema. Sinks turn row images back
into typed columns with the table schema announced by ``op = 's'`` events.

==========  ==========================================================================
op          ``c`` insert, ``u`` update, ``d`` delete, ``r`` snapshot read,
            ``s`` schema of a table announced or changed (``ddl`` holds the statement,
            ``schema`` the new :class:`~sparkcdc.core.schema.TableSchema` as JSON),
            ``k`` a snapshot chunk whose ``r`` rows stay in the split store (only when the
            source is asked for ``snapshot_delivery = store``): ``after`` is
            ``{"path": <Arrow file of typed rows>, "rows": n}``, ``source`` the chunk's
            high watermark; the sink reads the rows from the file (with
            ``"incremental": true`` in ``after``: a chunk of an incremental snapshot,
            always merged into the replica),
            ``n`` a notification of the incremental snapshots (``after`` the notification
            as JSON: ``{"type": ..., ...}``; ``db``/``table`` the table it is about, or empty)
db, table   the source table
key         JSON array of the key values (from ``after``, or ``before`` for deletes)
before      JSON object of the row before the change (``u``, ``d``), else null;
            for ``s``: the table's previous schema as JSON (null when new to the stream)
after       JSON object of the row after the change (``c``, ``u``, ``r``), else null;
            for ``s``: ``{"kind": kind}``, kind one of ``announce`` (the schema at the start
            offset), ``create``, ``alter``, ``rename`` (plus ``"from": "db.old"``), ``drop``,
            ``truncate`` or ``unknown`` (a statement that could not be followed; ``schema``
            is then the catalog's current schema, or null)
schema_id   :meth:`TableSchema.schema_id` of the schema the row images follow (for ``s``:
            of the new schema, or of the dropped one)
ddl         the DDL statement (``s`` only; null for ``announce``)
schema      the table schema as JSON (``s`` only; null for ``drop``)
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

from collections.abc import Sequence

import pyarrow as pa

from sparkcdc.core import columns as col

OP_CREATE = "c"
OP_UPDATE = "u"
OP_DELETE = "d"
OP_READ = "r"
OP_SCHEMA = "s"
OP_CHUNK = "k"
OP_NOTICE = "n"

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


Change = tuple[str, str | None, str | None, str | None]
"""(op, key JSON, before JSON, after JSON) of one row, as the rows decoder returns them."""

_Segment = tuple[
    int, str, str, str, str | None, str | None, int, str, int, int, str, int, bool, int, int
]
# rows sharing their metadata: (count, db, table, schema_id, ddl, schema, server_id, file, pos,
# first row, gtid, ts_ms, snapshot, first total_order, first data_collection_order)


class EnvelopeBuilder:
    """Collects change events and emits :data:`ENVELOPE_SCHEMA` batches.

    Per row only the values that differ from row to row are kept (op, key, before, after);
    everything else is recorded once per :meth:`extend` call (a rows event, or the part of one
    that goes into an item) and becomes its Arrow columns in bulk (:mod:`.columns`): constants
    straight from buffers (or a small cache of them), counters as ranges. Building a dict per
    row, or Arrow arrays per row, would cost more than decoding.
    """

    __slots__ = ("_ops", "_keys", "_befores", "_afters", "_segments")

    def __init__(self) -> None:
        self._ops: list[str] = []
        self._keys: list[str | None] = []
        self._befores: list[str | None] = []
        self._afters: list[str | None] = []
        self._segments: list[_Segment] = []

    def __len__(self) -> int:
        return len(self._ops)

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
        """One change event."""
        self._ops.append(op)
        self._keys.append(key)
        self._befores.append(before)
        self._afters.append(after)
        self._segments.append(
            (1, db, table, schema_id, ddl, schema, server_id, file, pos, row, gtid, ts_ms,
             snapshot, total_order, data_collection_order)
        )  # fmt: skip

    def extend(
        self,
        changes: Sequence[Change],
        db: str,
        table: str,
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
        """Change events ``(op, key, before, after)`` sharing everything else; ``row``,
        ``total_order`` and ``data_collection_order`` are the first one's and count up by one
        from change to change (the same as :meth:`append` per change, only cheaper)."""
        m = len(changes)
        if m == 1:
            op, key, before, after = changes[0]
            self._ops.append(op)
            self._keys.append(key)
            self._befores.append(before)
            self._afters.append(after)
        elif m:
            ops, keys, befores, afters = zip(*changes, strict=True)
            self._ops += ops
            self._keys += keys
            self._befores += befores
            self._afters += afters
        else:
            return
        self._segments.append(
            (m, db, table, schema_id, ddl, schema, server_id, file, pos, row, gtid, ts_ms,
             snapshot, total_order, data_collection_order)
        )  # fmt: skip

    def absorb(self, other: EnvelopeBuilder) -> None:
        """Append the change events collected by ``other`` (after this one's)."""
        self._ops += other._ops
        self._keys += other._keys
        self._befores += other._befores
        self._afters += other._afters
        self._segments += other._segments

    def build(self) -> pa.RecordBatch:
        n = len(self._ops)
        segs = self._segments
        if len(segs) == 1:
            (_, db, table, schema_id, ddl, schema, server_id, file, pos, row, gtid, ts_ms,
             snapshot, order, table_order) = segs[0]  # fmt: skip
            db_a = col.strings_cached(db, n)
            table_a = col.strings_cached(table, n)
            schema_id_a = col.strings_cached(schema_id, n)
            ddl_a = col.strings(ddl, n)
            schema_a = col.strings(schema, n)
            server_id_a = col.int64s_cached(server_id, n)
            file_a = col.strings_cached(file, n)
            pos_a = col.int64s(pos, n)
            row_a = col.counter(col.INT32, "i", row, n)
            gtid_a = col.strings(gtid, n)
            ts_a = col.int64s(ts_ms, n)
            snapshot_a = col.bools(snapshot, n)
            order_a = col.counter(col.INT64, "q", order, n)
            table_order_a = col.counter(col.INT64, "q", table_order, n)
        else:
            cols = list(zip(*segs, strict=True))
            counts = cols[0]
            db_a, table_a, schema_id_a, ddl_a, schema_a = (
                col.string_runs(cols[i], counts, n) for i in range(1, 6)
            )
            server_id_a = col.int_runs(col.INT64, "q", cols[6], counts, n)
            file_a = col.string_runs(cols[7], counts, n)
            pos_a = col.int_runs(col.INT64, "q", cols[8], counts, n)
            row_a = col.ranges(col.INT32, "i", cols[9], counts, n)
            gtid_a = col.string_runs(cols[10], counts, n)
            ts_a = col.int_runs(col.INT64, "q", cols[11], counts, n)
            snapshot_a = (
                col.bools(cols[12][0], n)
                if col.same(cols[12])
                else pa.array(col.expand(cols[12], counts), col.BOOL)
            )
            order_a = col.ranges(col.INT64, "q", cols[13], counts, n)
            table_order_a = col.ranges(col.INT64, "q", cols[14], counts, n)
        source = col.from_buffers(
            SOURCE_TYPE,
            n,
            [None],
            children=[server_id_a, file_a, pos_a, row_a, gtid_a, ts_a, db_a, table_a, snapshot_a],
        )
        transaction = col.from_buffers(
            TRANSACTION_TYPE, n, [None], children=[gtid_a, order_a, table_order_a]
        )
        ops = self._ops
        op_a = (
            col.strings_cached(ops[0], n) if ops.count(ops[0]) == n else pa.array(ops, col.STRING)
        )
        return pa.RecordBatch.from_arrays(
            [
                op_a,
                db_a,
                table_a,
                col.texts(self._keys, n),
                col.texts(self._befores, n),
                col.texts(self._afters, n),
                schema_id_a,
                ddl_a,
                schema_a,
                source,
                transaction,
            ],
            schema=ENVELOPE_SCHEMA,
        )


def snapshot_source(
    n: int, db: str, table: str, *, server_id: int, file: str, pos: int, gtid: str, ts_ms: int
) -> pa.StructArray:
    """The ``source`` column of ``n`` snapshot reads at one position (``row`` counts up)."""
    return col.from_buffers(
        SOURCE_TYPE,
        n,
        [None],
        children=[
            col.int64s_cached(server_id, n),
            col.strings_cached(file, n),
            col.int64s(pos, n),
            col.counter(col.INT32, "i", 0, n),
            col.strings(gtid, n),
            col.int64s(ts_ms, n),
            col.strings_cached(db, n),
            col.strings_cached(table, n),
            col.bools(True, n),
        ],
    )


def snapshot_batch(
    keys: pa.Array,
    afters: pa.Array,
    db: str,
    table: str,
    schema_id: str,
    *,
    server_id: int,
    file: str,
    pos: int,
    gtid: str,
    ts_ms: int,
    op: str = OP_READ,
) -> pa.RecordBatch:
    """Snapshot reads (``op = 'r'``, ``source.snapshot = true``) of one chunk, built in bulk.

    ``keys`` and ``afters`` are the chunk's JSON texts; ``file``/``pos``/``gtid`` name the
    chunk's high watermark, the log position its rows are exact at. Reads belong to no
    transaction, as in Debezium. With ``op = 'k'`` (:data:`OP_CHUNK`) it is the one row that
    stands for a chunk kept in the split store.
    """
    n = len(keys)
    source = snapshot_source(
        n, db, table, server_id=server_id, file=file, pos=pos, gtid=gtid, ts_ms=ts_ms
    )
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
            source,
            pa.nulls(n, TRANSACTION_TYPE),
        ],
        schema=ENVELOPE_SCHEMA,
    )
