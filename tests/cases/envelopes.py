"""Builders of envelope micro-batches for sink and delivery tests: MySQL-shaped change events
(binlog ``source`` fields) in log order, as the MySQL log reader makes them."""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa

from sparkcdc.core.envelope import EnvelopeBuilder
from sparkcdc.core.event import Change
from sparkcdc.core.offset import position_text
from sparkcdc.core.schema import TableSchema
from sparkcdc.sources.mysql.offset import BinlogOffset, file_sequence

FILE = "mysql-bin.000001"


def add(
    builder: EnvelopeBuilder,
    changes: list[Change],
    db: str,
    table: str,
    schema_id: str,
    *,
    file: str = FILE,
    pos: int = 100,
    gtid: str = "",
    ts_ms: int = 0,
    first: int = 0,
    ddl: str | None = None,
    schema: str | None = None,
) -> None:
    """``changes`` as the rows of one binlog event at ``file:pos`` (the first at index
    ``first``), the transaction ``gtid``."""
    builder.extend(
        changes, db, table, schema_id, position=position_text(file_sequence(file), pos),
        index=first, own=(1, file, pos, None, gtid), ts_ms=ts_ms, transaction=gtid,
        total_order=first + 1, data_collection_order=first + 1, ddl=ddl, schema=schema,
    )  # fmt: skip


def rows(first: int, count: int, pos: int = 100) -> pa.RecordBatch:
    """Inserts of ids ``first .. first + count - 1`` in one rows event at ``pos``, each with its
    own commit time (1000 + id)."""
    b = EnvelopeBuilder(BinlogOffset)
    for i in range(first, first + count):
        add(b, [("c", f"[{i}]", None, f'{{"id": {i}}}')], "d", "t", "s1", pos=pos,
            ts_ms=1000 + i, first=i)  # fmt: skip
    return b.build()


class Changes:
    """Appends schema announcements and changes of tables; ``table()`` is the micro-batch."""

    def __init__(self, file: str = FILE, pos: int = 1000) -> None:
        self.builder = EnvelopeBuilder(BinlogOffset)
        self.file, self.pos = file, pos

    def _next(self) -> int:
        self.pos += 10
        return self.pos

    def schema(self, schema: TableSchema, ddl: str | None = None) -> Changes:
        add(self.builder, [("s", None, None, None)], schema.db, schema.table, schema.schema_id(),
            file=self.file, pos=self._next(), gtid="0-1-1", ddl=ddl,
            schema=json.dumps(schema.to_json()))  # fmt: skip
        return self

    def ddl(self, db: str, table: str, ddl: str, schema: TableSchema | None = None) -> Changes:
        add(self.builder, [("s", None, None, None)], db, table,
            schema.schema_id() if schema else "", file=self.file, pos=self._next(),
            gtid="0-1-1", ddl=ddl, schema=json.dumps(schema.to_json()) if schema else None,
            )  # fmt: skip
        return self

    def alter(
        self, old: TableSchema, new: TableSchema, ddl: str, existing: dict[str, Any] | None = None
    ) -> Changes:
        """The ``s`` row of an ALTER TABLE from ``old`` to ``new`` whose change JSON carries
        ``existing`` (:class:`~sparkcdc.core.existing_rows.ExistingRows` as JSON)."""
        change = {"kind": "alter", **({"existing": existing} if existing else {})}
        add(self.builder, [("s", None, json.dumps(old.to_json()), json.dumps(change))], new.db,
            new.table, new.schema_id(), file=self.file, pos=self._next(), gtid="0-1-1", ddl=ddl,
            schema=json.dumps(new.to_json()))  # fmt: skip
        return self

    def change(
        self,
        op: str,
        schema: TableSchema,
        before: dict[str, Any] | None = None,
        after: dict[str, Any] | None = None,
        ts_ms: int = 1_700_000_000_000,
    ) -> Changes:
        image = after if after is not None else before
        assert image is not None
        key = json.dumps([image[k] for k in schema.key])
        change = (op, key, None if before is None else json.dumps(before),
                  None if after is None else json.dumps(after))  # fmt: skip
        add(self.builder, [change], schema.db, schema.table, schema.schema_id(),
            file=self.file, pos=self._next(), gtid="0-1-2", ts_ms=ts_ms)  # fmt: skip
        return self

    def table(self) -> pa.Table:
        return pa.Table.from_batches([self.builder.build()])
