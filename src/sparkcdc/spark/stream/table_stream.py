"""One table's change stream with typed row images: ``option("table", "db.t")`` on a stream.

``spark.readStream.format("mysql-cdc").option("table", "shop.orders")`` (with the
``schema_history`` every stream keeps) gives the table's change events with the envelope's
columns, ``before`` and ``after`` being structs of the table's columns, typed as a batch read of
the table types them: Debezium's row shape, Flink CDC's typed rows. The images come as the log
reader decoded them (typed, found by ``source.position``); JSON images (snapshot chunks, the
hand-off stretch) are parsed with the table's schema. Other events of the table (its schema
changes, snapshot notices) pass with null images.

The columns are the table's when the query starts (they ride in the Spark schema, so every
micro-batch of the query reads the same ones). Images of another schema version fit when
every column they hold is one of those (an added column is null in older rows); a change that
would lose a value (a column the stream does not have, a value its type cannot hold) stops the
stream with a sentence: a restarted query reads the table's columns again.

With ``option("changelog", "flink")`` the same events come as Flink's changelog rows
(:mod:`~.flink_changelog`): ``row_kind``, the table's columns, metadata.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.types import StructType

from sparkcdc.core.convert import cast_struct, decode_images
from sparkcdc.core.errors import ConfigError, SourceError
from sparkcdc.core.event import (
    OP_CREATE,
    OP_DELETE,
    OP_READ,
    OP_UPDATE,
    OffsetType,
    envelope_schema,
    spark_ddl,
)
from sparkcdc.core.images import (
    UNCHANGED_PREFIX,
    TypedImages,
    fill_untyped,
    images_of,
    struct_maker,
)
from sparkcdc.core.schema import TableSchema
from sparkcdc.spark.stream.flink_changelog import ROW_KIND, flink_rows, flink_schema, metadata_ddl

IMAGES = ("before", "after")
COMMENT_PREFIX = "sparkcdc table schema "
CHANGE_OPS = pa.array([OP_READ, OP_CREATE, OP_UPDATE, OP_DELETE])


class TableStream:
    """The typed change events of the table ``schema`` names (see the module docstring)."""

    def __init__(
        self, schema: TableSchema, offsets: OffsetType, changelog: str = "debezium"
    ) -> None:
        self.schema = schema
        self.offsets = offsets
        self.changelog = changelog
        self.schema_id = schema.schema_id()
        self.fields = struct_maker(schema).fields
        image = pa.struct(self.fields)
        self.arrow_schema = pa.schema(
            [pa.field(f.name, image) if f.name in IMAGES else f for f in envelope_schema(offsets)]
        )
        self.flink = (
            flink_schema(self.fields, self.arrow_schema, schema.name)
            if changelog == "flink"
            else None
        )

    @property
    def name(self) -> str:
        return self.schema.name

    def ddl(self) -> str:
        """The stream's Spark schema: the envelope's, the images as structs of the columns
        (Flink rows: ``row_kind``, the columns, the metadata); the table's schema rides in the
        comment of ``after`` (``row_kind``) that :meth:`of_spark` reads, so every process of
        the query agrees on the columns the query started with."""
        packed = base64.b64encode(json.dumps(self.schema.to_json()).encode()).decode()
        said = f" COMMENT '{COMMENT_PREFIX}{packed}'"
        if self.flink is not None:
            columns = ", ".join(f"`{c.name}` {c.spark_type()}" for c in self.schema.columns)
            return f"`{ROW_KIND}` STRING{said}, {columns}, {metadata_ddl(self.flink)}"
        inner = ", ".join(f"`{c.name}`: {c.spark_type()}" for c in self.schema.columns)
        comment = {"before": "", "after": said}
        return ", ".join(
            f"`{f.name}` STRUCT<{inner}>{comment[f.name]}"
            if f.name in IMAGES
            else spark_ddl(pa.schema([f]))
            for f in envelope_schema(self.offsets)
        )

    @classmethod
    def of_spark(
        cls, schema: StructType, offsets: OffsetType, changelog: str = "debezium"
    ) -> TableStream:
        """The table stream whose :meth:`ddl` gave the Spark ``schema``."""
        carrier = ROW_KIND if changelog == "flink" else "after"
        field = schema[carrier] if carrier in schema.fieldNames() else None
        comment = "" if field is None else str(field.metadata.get("comment", ""))
        if not comment.startswith(COMMENT_PREFIX):
            raise ConfigError(
                "a typed stream of one table takes the schema sparkcdc gives it; leave out "
                "the .schema(...) of the read.",
                key="table",
            )
        packed = base64.b64decode(comment.removeprefix(COMMENT_PREFIX))
        return cls(TableSchema.from_json(json.loads(packed)), offsets, changelog)

    def rows(self, batch: pa.RecordBatch, typed: Sequence[TypedImages] = ()) -> pa.RecordBatch:
        """The table's change events of the envelope ``batch``, images typed: from ``typed``
        where it holds them, else parsed from their JSON text."""
        mine = pc.and_(
            pc.equal(batch.column("db"), self.schema.db),
            pc.equal(batch.column("table"), self.schema.table),
        )
        rows = batch.filter(pc.fill_null(mine, False))
        name = (self.schema.db, self.schema.table)
        found = [self._fitting(t) for t in typed if (t.db, t.table) == name]
        positions = rows.column("source").field("position")
        try:
            index, before, after = images_of(positions, found, self.fields)
            rest = rows.filter(pc.is_null(index))
            decoded = self._decoded(rest)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            raise self._misfit(f"a value does not fit its column's type ({exc})") from exc
        images = fill_untyped(index, (before, after), decoded)
        columns = [
            images[IMAGES.index(f.name)] if f.name in IMAGES else rows.column(f.name)
            for f in self.arrow_schema
        ]
        events = pa.RecordBatch.from_arrays(columns, schema=self.arrow_schema)
        if self.flink is not None:
            return flink_rows(events, self.flink, self.name)
        return events

    def _fitting(self, images: TypedImages) -> TypedImages:
        """``images`` if every value they hold has a column in the stream."""
        if images.schema_id != self.schema_id:
            names = {f.name for f in self.fields}
            for side in IMAGES:
                structs = images.rows.column(side)
                for field in structs.type:
                    held = pc.and_(structs.is_valid(), structs.field(field.name).is_valid())
                    if field.name not in names and pc.any(held).as_py():
                        raise self._misfit(f"its column {field.name!r} is not in the stream")
        return images

    def _decoded(self, rows: pa.RecordBatch) -> tuple[pa.StructArray, pa.StructArray]:
        """The JSON images of ``rows``' changes, parsed with the stream's columns (one naming
        another column is an error); other events (notices, schema changes) have none."""
        changes = pc.is_in(rows.column("op"), value_set=CHANGE_OPS)
        if pc.any(pc.starts_with(rows.column("after"), UNCHANGED_PREFIX)).as_py():
            raise SourceError(
                f"an update of {self.name} left a TOASTed value out of the log, and a typed "
                "stream of one table has no replica to fill it from; set ALTER TABLE … "
                "REPLICA IDENTITY FULL on the table, or write the changes with the Delta sink.",
                table=self.name,
            )
        before, after = (
            cast_struct(decode_images(pc.if_else(changes, rows.column(side), None),
                                      self.schema, strict=True), self.fields)
            for side in IMAGES
        )  # fmt: skip
        return before, after

    def _misfit(self, why: str) -> SourceError:
        return SourceError(
            f"a change of {self.name} does not fit the columns its typed stream started with "
            f"({why}): the table's schema changed; restart the query to read on with its new "
            "columns, or stream it with the option 'tables' (JSON images that follow every "
            "schema change).",
            table=self.name,
        )
