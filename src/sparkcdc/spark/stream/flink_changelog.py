"""Flink's changelog rows of a typed table stream: ``option("changelog", "flink")``.

Each change event of the table becomes rows of Flink's ``RowKind`` (Flink CDC's
``RowDataDebeziumDeserializeSchema``), in log order::

    r, c  →  +I  (the after image)
    u     →  -U  (the before image), then +U (the after image), adjacent
    d     →  -D  (the before image)

A row is ``row_kind``, the table's columns at the top level (typed as the envelope's images),
then the metadata Flink CDC's connectors give (``database_name``, ``schema_name``,
``table_name``, ``op_ts``) and the envelope's ``source`` and ``transaction`` to order and
deduplicate by. Other events of the table (schema changes, snapshot notices) give no rows.

A before image is passed as the source logged it. MySQL and MariaDB log whole images (the
source requires ``binlog_row_image=FULL``). PostgreSQL under REPLICA IDENTITY DEFAULT logs only
the key of a delete's (or a key-changing update's) before image: its -D (-U) row holds the key
columns, the others null, as Flink CDC's. An update without a before image (REPLICA IDENTITY
DEFAULT when the key did not change) stops the stream with a sentence, as Flink CDC's
``PostgresValueValidator`` does: a -U row of nulls would be made up.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sparkcdc.core.errors import ConfigError, SourceError
from sparkcdc.core.event import OP_CREATE, OP_DELETE, OP_READ, OP_UPDATE, spark_ddl

ROW_KIND = "row_kind"
INSERT, UPDATE_BEFORE, UPDATE_AFTER, DELETE = "+I", "-U", "+U", "-D"
NAMES = pa.schema(
    [("database_name", pa.string()), ("schema_name", pa.string()), ("table_name", pa.string())]
)
OP_TS = pa.field("op_ts", pa.timestamp("us", tz="UTC"))
ENVELOPE = ("source", "transaction")
METADATA = (*NAMES.names, OP_TS.name, *ENVELOPE)
CHANGE_OPS = pa.array([OP_READ, OP_CREATE, OP_UPDATE, OP_DELETE])


def flink_schema(columns: list[pa.Field], envelope: pa.Schema, table: str) -> pa.Schema:
    """The Arrow schema of ``table``'s Flink rows: ``row_kind``, ``columns``, the metadata
    (``envelope`` gives the ``source`` and ``transaction`` types)."""
    taken = sorted({f.name for f in columns} & {ROW_KIND, *METADATA})
    if taken:
        raise ConfigError(
            f"the option 'changelog': {table} has a column named {taken[0]!r}, which a flink "
            f"row takes for its metadata ({', '.join((ROW_KIND, *METADATA))}); use the "
            "changelog 'debezium'.",
            key="changelog",
        )
    return pa.schema(
        [
            pa.field(ROW_KIND, pa.string()),
            *columns,
            *NAMES,
            OP_TS,
            *(envelope.field(name) for name in ENVELOPE),
        ]
    )


def metadata_ddl(schema: pa.Schema) -> str:
    """The Spark DDL of the metadata columns of a Flink row ``schema``."""
    envelope = pa.schema([schema.field(name) for name in ENVELOPE])
    return f"{spark_ddl(NAMES)}, `{OP_TS.name}` TIMESTAMP, {spark_ddl(envelope)}"


def flink_rows(events: pa.RecordBatch, schema: pa.Schema, table: str) -> pa.RecordBatch:
    """The Flink rows (of ``schema``) of one table's typed envelope ``events``, in their order;
    an update's two rows adjacent."""
    changes = events.filter(pc.is_in(events.column("op"), value_set=CHANGE_OPS))
    ops = np.asarray(changes.column("op").to_pylist(), dtype=object)
    updates = ops == OP_UPDATE
    which = np.repeat(np.arange(len(ops)), np.where(updates, 2, 1))
    second = np.zeros(len(which), dtype=bool)
    second[1:] = which[1:] == which[:-1]  # the +U row of an update
    kinds = np.select(
        [ops[which] == OP_DELETE, updates[which] & ~second, updates[which]],
        [DELETE, UPDATE_BEFORE, UPDATE_AFTER],
        INSERT,
    )
    from_before = (kinds == DELETE) | (kinds == UPDATE_BEFORE)
    picked = changes.take(pa.array(which, pa.int64()))
    before, after = picked.column("before"), picked.column("after")
    valid = np.asarray(pc.if_else(from_before, before.is_valid(), after.is_valid()), dtype=bool)
    if not valid.all():
        raise _no_image(table, str(kinds[~valid][0]))
    sides = zip(before.flatten(), after.flatten(), strict=True)
    values = [pc.if_else(from_before, b, a) for b, a in sides]
    source = picked.column("source")
    names = [source.field(n) for n in ("db", "schema", "table")]
    op_ts = pc.multiply(source.field("ts_ms").cast(pa.int64()), 1000).cast(OP_TS.type)
    arrays = [pa.array(kinds, pa.string()), *values, *names, op_ts,
              *(picked.column(name) for name in ENVELOPE)]  # fmt: skip
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _no_image(table: str, kind: str) -> SourceError:
    if kind in (UPDATE_BEFORE, DELETE):
        return SourceError(
            f"an {'update' if kind == UPDATE_BEFORE else 'delete'} of {table} came without its "
            f"before image, which its {kind} row of the changelog 'flink' is made of (PostgreSQL "
            "logs none under REPLICA IDENTITY DEFAULT unless the key changes); run ALTER TABLE "
            "… REPLICA IDENTITY FULL on the table, or read it with the changelog 'debezium'.",
            table=table,
        )
    return SourceError(f"a change of {table} came without its after image.", table=table)
