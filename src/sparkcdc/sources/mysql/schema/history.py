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

import json
import os
import threading
from pathlib import Path

from sparkcdc.core.schema import TableSchema
from sparkcdc.sources.mysql.offset import BinlogOffset
from sparkcdc.sources.mysql.schema.column_types import mapped_schema

Schemas = dict[tuple[str, str], TableSchema]


class SchemaHistory:
    """An append-only JSONL file of (offset, schemas) records."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._records: list[tuple[BinlogOffset, Schemas]] = []
        self._read_at: dict[tuple[str, str], BinlogOffset] = {}
        self._read_bytes = 0
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._refresh()

    def record(
        self,
        offset: BinlogOffset,
        schemas: Schemas,
        read_at: dict[tuple[str, str], BinlogOffset] | None = None,
    ) -> None:
        """Append one record: from ``offset`` on, these are the captured tables' schemas
        (``read_at``: of the tables read from the catalog, where the log ended then)."""
        doc = {
            "offset": offset.to_json(),
            "schemas": [s.to_json() for _, s in sorted(schemas.items())],
        }
        if read_at:
            doc["read_at"] = {f"{db}.{t}": o.to_json() for (db, t), o in sorted(read_at.items())}
        line = json.dumps(doc, separators=(",", ":"), sort_keys=True)
        data = (line + "\n").encode("utf-8")
        with self._lock:
            self._refresh()
            self._cut_torn_tail()
            created = not self.path.exists()
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                written = os.write(fd, data)
                while written < len(data):  # a short write: finish the line
                    written += os.write(fd, data[written:])
                os.fsync(fd)
            finally:
                os.close(fd)
            if created:  # make the new file's name durable too
                dir_fd = os.open(self.path.parent, os.O_RDONLY)
                try:
                    os.fsync(dir_fd)
                finally:
                    os.close(dir_fd)
            self._records.append((offset, dict(schemas)))
            self._read_at.update(read_at or {})
            self._read_bytes += len(data)

    def schemas_at(self, offset: BinlogOffset) -> Schemas | None:
        """The schemas of the latest record at or before ``offset`` (None if there is none).

        Of records with equal offsets (a log read twice after a restart) the last one wins.
        """
        with self._lock:
            self._refresh()
            best: tuple[BinlogOffset, Schemas] | None = None
            for rec_offset, schemas in self._records:
                if rec_offset <= offset and (best is None or rec_offset >= best[0]):
                    best = (rec_offset, schemas)
            return None if best is None else dict(best[1])

    def read_at(self) -> dict[tuple[str, str], BinlogOffset]:
        """Per table read from the catalog, where the log ended when it was read (the latest)."""
        with self._lock:
            self._refresh()
            return dict(self._read_at)

    def offsets(self) -> list[BinlogOffset]:
        """The offsets of all records, in the order they were written."""
        with self._lock:
            self._refresh()
            return [o for o, _ in self._records]

    def _refresh(self) -> None:
        """Read whole lines appended since the last look (by this or another process)."""
        try:
            with open(self.path, "rb") as f:
                f.seek(self._read_bytes)
                tail = f.read()
        except FileNotFoundError:
            return
        end = tail.rfind(b"\n")
        if end < 0:
            return
        for raw in tail[: end + 1].splitlines():
            if not raw.strip():
                continue
            try:
                doc = json.loads(raw)
                offset = BinlogOffset.from_json(doc["offset"])
                tables = [mapped_schema(TableSchema.from_json(s)) for s in doc["schemas"]]
                read_at = {
                    (name.partition(".")[0], name.partition(".")[2]): BinlogOffset.from_json(at)
                    for name, at in doc.get("read_at", {}).items()
                }
            except (ValueError, KeyError, TypeError):
                continue  # a line torn by a crash and completed by a later append
            self._records.append((offset, {(s.db, s.table): s for s in tables}))
            self._read_at.update(read_at)
        self._read_bytes += end + 1

    def _cut_torn_tail(self) -> None:
        """Drop an unfinished last line, so the next record starts on a line of its own."""
        try:
            size = self.path.stat().st_size
        except FileNotFoundError:
            return
        if size > self._read_bytes:
            with open(self.path, "r+b") as f:
                f.truncate(self._read_bytes)
                f.flush()
                os.fsync(f.fileno())
