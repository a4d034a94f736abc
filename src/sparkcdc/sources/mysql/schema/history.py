"""The schema history: which table schemas were in force at which point of the binary log.

Rows events carry values by position only, so a reader restarted at an old offset must decode
them with the schemas of *that* moment, not today's catalog. Every time the captured schemas
change (and once at start) the log reader records the offset and all captured schemas:

    {"offset": {"file": "mysql-bin.000003", "pos": 1234, "gtid": "0-1-9", "skip": 0},
     "schemas": [<TableSchema JSON>, ...]}

one JSON object per line, appended with a single write and fsync'd, so a line is either whole or
the torn tail of a crash (``kill -9``); a torn tail is ignored when reading and cut off before the
next record is appended.

A record of schemas read from the catalog (at a stream's first start, or for tables new to
``source.tables``) also says where the log ended when they were read: ``"read_at": {"db.t":
<offset>}``. Those are today's schemas, not the ones at the record's offset, so a DDL of such a
table before ``read_at`` is already in them and what it did to the rows cannot be told from them
(:meth:`SchemaHistory.read_at`).
"""

from __future__ import annotations

import os
from typing import Any

from sparkcdc.core.schema import TableSchema
from sparkcdc.core.table_name import TableName
from sparkcdc.sources.json_lines import JsonLinesFile
from sparkcdc.sources.mysql.offset import BinlogOffset
from sparkcdc.sources.mysql.schema.column_types import mapped_schema

Schemas = dict[tuple[str, str], TableSchema]


class SchemaHistory:
    """An append-only JSONL file of (offset, schemas) records."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self._records: list[tuple[BinlogOffset, Schemas]] = []
        self._read_at: dict[tuple[str, str], BinlogOffset] = {}
        self._file = JsonLinesFile(path, self._absorb)
        self.path = self._file.path
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._file.lock:
            self._file.refresh()

    def record(
        self,
        offset: BinlogOffset,
        schemas: Schemas,
        read_at: dict[tuple[str, str], BinlogOffset] | None = None,
    ) -> None:
        """Append one record: from ``offset`` on, these are the captured tables' schemas
        (``read_at``: of the tables read from the catalog, where the log ended then)."""
        doc: dict[str, Any] = {
            "offset": offset.to_json(),
            "schemas": [s.to_json() for _, s in sorted(schemas.items())],
        }
        if read_at:
            doc["read_at"] = {str(TableName(*n)): o.to_json() for n, o in sorted(read_at.items())}
        with self._file.lock:
            self._file.append(doc)

    def schemas_at(self, offset: BinlogOffset) -> Schemas | None:
        """The schemas of the latest record at or before ``offset`` (None if there is none).

        Of records with equal offsets (a log read twice after a restart) the last one wins.
        """
        with self._file.lock:
            self._file.refresh()
            best: tuple[BinlogOffset, Schemas] | None = None
            for rec_offset, schemas in self._records:
                if rec_offset <= offset and (best is None or rec_offset >= best[0]):
                    best = (rec_offset, schemas)
            return None if best is None else dict(best[1])

    def read_at(self) -> dict[tuple[str, str], BinlogOffset]:
        """Per table read from the catalog, where the log ended when it was read (the latest)."""
        with self._file.lock:
            self._file.refresh()
            return dict(self._read_at)

    def offsets(self) -> list[BinlogOffset]:
        """The offsets of all records, in the order they were written."""
        with self._file.lock:
            self._file.refresh()
            return [o for o, _ in self._records]

    def _absorb(self, doc: dict[str, Any]) -> None:
        offset = BinlogOffset.from_json(doc["offset"])
        tables = [mapped_schema(TableSchema.from_json(s)) for s in doc["schemas"]]
        read_at: dict[tuple[str, str], BinlogOffset] = {
            TableName.parse(name): BinlogOffset.from_json(at)
            for name, at in doc.get("read_at", {}).items()
        }
        self._records.append((offset, {(s.db, s.table): s for s in tables}))
        self._read_at.update(read_at)
