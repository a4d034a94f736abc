"""Builders of envelope micro-batches for sink tests (rows in log order, like the source's)."""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa

from sparkcdc.core.event import EnvelopeBuilder
from sparkcdc.core.schema import TableSchema


class Changes:
    """Appends schema announcements and changes of tables; ``table()`` is the micro-batch."""

    def __init__(self, file: str = "mysql-bin.000001", pos: int = 1000) -> None:
        self.builder = EnvelopeBuilder()
        self.file, self.pos = file, pos

    def _next(self) -> int:
        self.pos += 10
        return self.pos

    def schema(self, schema: TableSchema, ddl: str | None = None) -> Changes:
        self.builder.append(
            "s", schema.db, schema.table, None, None, None, schema.schema_id(),
            server_id=1, file=self.file, pos=self._next(), row=0, gtid="0-1-1", ts_ms=0,
            total_order=1, data_collection_order=1, ddl=ddl, schema=json.dumps(schema.to_json()),
        )  # fmt: skip
        return self

    def ddl(self, db: str, table: str, ddl: str, schema: TableSchema | None = None) -> Changes:
        self.builder.append(
            "s", db, table, None, None, None, schema.schema_id() if schema else "",
            server_id=1, file=self.file, pos=self._next(), row=0, gtid="0-1-1", ts_ms=0,
            total_order=1, data_collection_order=1, ddl=ddl,
            schema=json.dumps(schema.to_json()) if schema else None,
        )  # fmt: skip
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
        self.builder.append(
            op, schema.db, schema.table, key,
            None if before is None else json.dumps(before),
            None if after is None else json.dumps(after),
            schema.schema_id(), server_id=1, file=self.file, pos=self._next(), row=0,
            gtid="0-1-2", ts_ms=ts_ms, total_order=1, data_collection_order=1,
        )  # fmt: skip
        return self

    def table(self) -> pa.Table:
        return pa.Table.from_batches([self.builder.build()])
