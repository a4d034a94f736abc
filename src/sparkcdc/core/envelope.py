"""Change events collected one log record at a time and emitted as envelope record batches.

A source's log reader hands the builder the changes of one log record (a binlog rows event, …)
with what they share: table, schema, commit time, transaction, the record's position and the
source's own ``source`` fields. Per row only what differs from row to row is kept (op, key,
before, after); everything else is recorded once per call and becomes its Arrow columns in bulk
(:mod:`.columns`): constants straight from buffers or a small cache of them, counters as ranges,
the sortable ``position`` text from the record's position and a counter. Building a dict per row,
or Arrow arrays per row, would cost more than decoding.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence

import pyarrow as pa

from sparkcdc.core import columns as col
from sparkcdc.core.errors import DecodeError, SparkCDCError
from sparkcdc.core.event import (
    TRANSACTION_TYPE,
    LogChange,
    OffsetType,
    envelope_schema,
    source_type,
)
from sparkcdc.core.images import ColumnarRows, TypedImages, images_batch, struct_maker
from sparkcdc.core.schema import TableSchema
from sparkcdc.core.table_name import TableName

OwnValues = tuple[object, ...]
"""Values of the source's own ``source`` fields (its offset type's ``SOURCE_FIELDS``), in order;
the value of the event counter field is ignored (it counts up from the record's first index)."""

Segment = tuple[
    int, str, str, str, str | None, str | None, int, bool, str, str | None, int, int, int,
    OwnValues,
]  # fmt: skip
"""Changes sharing their metadata: (count, db, table, schema_id, ddl, schema, ts_ms, snapshot,
transaction id, record position, first index, first total_order, first data_collection_order,
own source values)."""


class _TypedRows:
    """The typed images of one table's changes in one schema version, and their rows: as
    tuples, or in a source's own buffers (``columnar``)."""

    __slots__ = ("schema", "rows", "befores", "afters", "columnar")

    def __init__(self, schema: TableSchema, columnar: ColumnarRows | None = None) -> None:
        self.schema = schema
        self.rows: list[int] = []
        self.befores: list[object] = []
        self.afters: list[object] = []
        self.columnar = columnar


class EnvelopeBuilder:
    """Collects change events of one source and emits its envelope batches (module docstring).

    ``database`` is the source database's name for sources whose tables are named by schema and
    table (PostgreSQL): it fills ``source.db``, and the table's first name part fills
    ``source.schema``. Without it ``source.db`` is the first name part (MySQL's database)."""

    __slots__ = (
        "_ops", "_keys", "_befores", "_afters", "_segments", "_typed", "offsets", "database"
    )  # fmt: skip

    def __init__(self, offsets: OffsetType, database: str | None = None) -> None:
        self.offsets = offsets
        self.database = database
        self._ops: list[str] = []
        self._keys: list[str | None] = []
        self._befores: list[str | None] = []
        self._afters: list[str | None] = []
        self._segments: list[Segment] = []
        self._typed: dict[tuple[str, str, str, bool], _TypedRows] = {}

    def __len__(self) -> int:
        return len(self._ops)

    def extend(
        self,
        changes: Sequence[LogChange] | ColumnarRows,
        db: str,
        table: str,
        schema_id: str,
        *,
        position: str | None,
        index: int,
        own: OwnValues,
        ts_ms: int,
        transaction: str,
        total_order: int,
        data_collection_order: int,
        snapshot: bool = False,
        ddl: str | None = None,
        schema: str | None = None,
        images: TableSchema | None = None,
    ) -> None:
        """Change events ``(op, key, before, after)`` of one log record at ``position``
        sharing everything else; ``index`` (the first one's index in the record),
        ``total_order`` and ``data_collection_order`` count up by one from change to change.
        With ``images`` (their table's schema) before and after are typed row tuples, kept
        apart (:meth:`typed_images`)."""
        self.record(
            changes,
            images,
            (len(changes), db, table, schema_id, ddl, schema, ts_ms, snapshot, transaction,
             position, index, total_order, data_collection_order, own),
        )  # fmt: skip

    def record(
        self,
        changes: Sequence[LogChange] | ColumnarRows,
        images: TableSchema | None,
        segment: Segment,
    ) -> None:
        """:meth:`extend` with the values the changes share already in a :data:`Segment`
        (``segment[0]`` is ``len(changes)``): the log readers' path, one call per record."""
        m = segment[0]
        if not m:
            return
        if images is not None:
            if isinstance(changes, ColumnarRows):
                self._columnar_rows(changes, segment[1], segment[2], segment[3], images)
            else:
                self._typed_rows(changes, segment[1], segment[2], segment[3], images)
        elif isinstance(changes, ColumnarRows):
            raise ValueError("changes decoded into buffers need the schema of their images")
        elif m == 1:
            op, key, before, after = changes[0]
            self._pad_texts()
            self._ops.append(op)
            self._keys.append(key)
            self._befores.append(before)  # type: ignore[arg-type]  # JSON text without images
            self._afters.append(after)  # type: ignore[arg-type]
        else:
            ops, keys, befores, afters = zip(*changes, strict=True)
            self._pad_texts()
            self._ops += ops
            self._keys += keys
            self._befores += befores
            self._afters += afters
        self._segments.append(segment)

    def _typed_rows(
        self, changes: Sequence[LogChange], db: str, table: str, schema_id: str, schema: TableSchema
    ) -> None:
        ops, keys, befores, afters = zip(*changes, strict=True)
        group = self._typed.get((db, table, schema_id, False))
        if group is None:
            group = self._typed[(db, table, schema_id, False)] = _TypedRows(schema)
        first = len(self._ops)
        group.rows += range(first, first + len(ops))
        group.befores += befores
        group.afters += afters
        self._ops += ops
        self._keys += keys

    def _columnar_rows(
        self, changes: ColumnarRows, db: str, table: str, schema_id: str, schema: TableSchema
    ) -> None:
        group = self._typed.get((db, table, schema_id, True))
        first, m = len(self._ops), len(changes)
        if group is None:  # the first event's buffers become the group's
            group = _TypedRows(schema, changes.owned())
            self._typed[(db, table, schema_id, True)] = group
        else:
            assert group.columnar is not None
            group.columnar.extend(changes)
        group.rows += range(first, first + m)
        self._ops += [changes.op] * m
        self._keys += changes.keys

    def split(self, at: int) -> EnvelopeBuilder:
        """Keep the first ``at`` change events and return a builder of the rest, typed images
        included; ``at`` falls between two log records (a transaction boundary)."""
        rest = EnvelopeBuilder(self.offsets, self.database)
        segments, count, cut = self._segments, 0, 0
        while count < at:
            count += segments[cut][0]
            cut += 1
        if count != at:
            raise ValueError(f"{at} is not between two log records' change events")
        rest._segments, self._segments = segments[cut:], segments[:cut]
        rest._ops, self._ops = self._ops[at:], self._ops[:at]
        rest._keys, self._keys = self._keys[at:], self._keys[:at]
        rest._befores, self._befores = self._befores[at:], self._befores[:at]
        rest._afters, self._afters = self._afters[at:], self._afters[:at]
        for name, group in list(self._typed.items()):
            k = bisect_left(group.rows, at)
            if k == len(group.rows):
                continue
            tail = rest._typed[name] = _TypedRows(group.schema)
            tail.rows = [r - at for r in group.rows[k:]]
            tail.befores, tail.afters = group.befores[k:], group.afters[k:]
            del group.rows[k:], group.befores[k:], group.afters[k:]
            columnar = group.columnar
            if columnar is not None:
                tail.columnar = columnar.part(k, len(columnar)).owned()
                group.columnar = columnar.part(0, k).owned()
            if not k:
                del self._typed[name]
        return rest

    def _pad_texts(self) -> None:
        """Typed changes keep no JSON text; a null one per change so far before JSON text."""
        missing = len(self._ops) - len(self._befores)
        if missing:
            self._befores += [None] * missing
            self._afters += [None] * missing

    def build(self) -> pa.RecordBatch:
        self._pad_texts()
        n = len(self._ops)
        segs = self._segments
        cols = list(zip(*segs, strict=True))
        counts = cols[0]
        db_a, table_a, schema_id_a, ddl_a, schema_a = (col.runs(col.STRING, cols[i], counts, n)
                                                       for i in range(1, 6))  # fmt: skip
        ts_a = col.runs(col.INT64, cols[6], counts, n)
        snapshot_a = col.runs(col.BOOL, cols[7], counts, n)
        txn_a = col.runs(col.STRING, cols[8], counts, n)
        position_a = col.positions(cols[9], cols[10], counts, n)
        order_a = col.ranges(col.INT64, "q", cols[11], counts, n)
        table_order_a = col.ranges(col.INT64, "q", cols[12], counts, n)
        own = self._own(cols[13], cols[10], counts, n, (cols[8], txn_a))
        if self.database is None:
            names = [db_a, pa.nulls(n, col.STRING)]
        else:
            names = [col.strings_cached(self.database, n), db_a]
        source = col.from_buffers(
            source_type(self.offsets), n, [None],
            children=[*names, table_a, ts_a, snapshot_a, position_a, *own],
        )  # fmt: skip
        transaction = col.from_buffers(
            TRANSACTION_TYPE, n, [None], children=[txn_a, order_a, table_order_a]
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
            schema=envelope_schema(self.offsets),
        )

    def typed_images(self, batch: pa.RecordBatch) -> tuple[TypedImages, ...]:
        """The typed row images collected, per table and schema version, found by the
        ``source.position`` their changes have in ``batch`` (what :meth:`build` returned)."""
        if not self._typed:
            return ()
        positions = batch.column(batch.schema.get_field_index("source")).field("position")
        out = []
        for (db, table, schema_id, _), group in self._typed.items():
            found = positions.take(pa.array(group.rows, pa.int64()))
            try:
                make = struct_maker(group.schema)
                if group.columnar is not None:
                    before, after = group.columnar.structs(make.fields)
                else:
                    before = make(group.befores)  # type: ignore[arg-type]
                    after = make(group.afters)  # type: ignore[arg-type]
            except SparkCDCError:
                raise
            except Exception as exc:  # noqa: BLE001 - values the log's decoder let through
                raise _unconvertible(str(TableName(db, table)), found, exc) from exc
            out.append(TypedImages(db, table, schema_id, images_batch(found, before, after)))
        return tuple(out)

    def _own(
        self,
        values: Sequence[OwnValues],
        firsts: Sequence[int],
        counts: Sequence[int],
        n: int,
        known: tuple[Sequence[object], pa.Array],
    ) -> list[pa.Array]:
        """The source's own ``source`` fields: runs of the values given, the event counter
        counting up from each record's first index; a field whose values are ``known[0]``
        (the transaction ids, which a GTID field repeats) takes the column made of them."""
        out = []
        fields = self.offsets.SOURCE_FIELDS
        for field, column in zip(fields, zip(*values, strict=True), strict=True):
            if field.name == self.offsets.EVENT_COUNTER:
                out.append(col.counters(field.type, firsts, counts, n))
            elif field.type == col.STRING and column == known[0]:
                out.append(known[1])
            else:
                out.append(col.runs(field.type, column, counts, n))
        return out


def _unconvertible(table: str, positions: pa.Array, exc: Exception) -> DecodeError:
    """The error for row values of ``table`` (at ``positions``) that do not become their
    columns' Arrow types: the log's decoder let damaged values through."""
    first, last = positions[0].as_py(), positions[-1].as_py()
    text = str(exc)[:200]
    return DecodeError(
        f"the changes of {table} at source.position {first} to {last} hold values that are not "
        f"of their columns' types ({type(exc).__name__}: {text}); the log there is damaged or "
        "the tracked schema is not the one the rows were written with: the stream stops "
        "rather than deliver them wrong (check the log there, then restart from a snapshot).",
        table=table,
        position=first,
    )
