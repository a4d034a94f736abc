"""The fake database: one JSON-lines file, written by tests, read by the fake source.

    line 1     {"schemas": [<TableSchema JSON>, ...], "not_ready": <sentence or null>}
    line 2..   {"ts_ms": <commit time>, "rows": [[op, db, table, key, before, after], ...]}
               (a transaction; key, before, after are JSON texts as a log reader writes them)
               or {"error": <name in sparkcdc.core.errors>, "message": <sentence>}: a log reader
               reaching it stops with that error

Transaction ``n`` (counting from 0, error lines included) is the one the offset ``seq = n``
stands before. The tables' contents at any offset are the replay of the transactions before it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sparkcdc.core.event import OP_DELETE, Change
from sparkcdc.core.schema import TableSchema
from tests.fakes.offset import FakeOffset

Row = list[Any]  # [op, db, table, key, before, after]


class FakeLog:
    """Writes the fake database a test's source reads."""

    def __init__(
        self, path: Path, schemas: Sequence[TableSchema], not_ready: str | None = None
    ) -> None:
        self.path = path
        self.seq = 0
        header = {"schemas": [s.to_json() for s in schemas], "not_ready": not_ready}
        path.write_text(json.dumps(header) + "\n")

    def commit(self, rows: list[Row], ts_ms: int = 1_700_000_000_000) -> FakeOffset:
        """Append one transaction; returns the offset after it."""
        self._append({"ts_ms": ts_ms, "rows": rows})
        return self.end

    def fail(self, error: str, message: str) -> None:
        """Make a log reader stop with ``errors.<error>(message)`` when it reaches this point."""
        self._append({"error": error, "message": message})

    def _append(self, line: dict[str, Any]) -> None:
        with self.path.open("a") as f:
            f.write(json.dumps(line) + "\n")
        self.seq += 1

    @property
    def end(self) -> FakeOffset:
        return FakeOffset(self.seq)


@dataclass(frozen=True)
class Transaction:
    seq: int
    ts_ms: int
    rows: list[Row]
    error: tuple[str, str] | None = None


class FakeDatabase:
    """What the file at ``path`` holds, read afresh by every call."""

    def __init__(self, path: str) -> None:
        self.path = Path(path)

    def _lines(self) -> list[dict[str, Any]]:
        lines = self.path.read_text().splitlines()
        return [json.loads(line) for line in lines if line.endswith("}")]

    def header(self) -> dict[str, Any]:
        return self._lines()[0]

    def schemas(self) -> list[TableSchema]:
        return [TableSchema.from_json(s) for s in self.header()["schemas"]]

    def schema(self, db: str, table: str) -> TableSchema | None:
        return next((s for s in self.schemas() if (s.db, s.table) == (db, table)), None)

    def transactions(self, since: int = 0) -> list[Transaction]:
        out = []
        for seq, line in enumerate(self._lines()[1:]):
            if seq < since:
                continue
            error = (line["error"], line["message"]) if "error" in line else None
            out.append(Transaction(seq, int(line.get("ts_ms", 0)), line.get("rows", []), error))
        return out

    def end(self) -> FakeOffset:
        return FakeOffset(len(self._lines()) - 1)

    def changes(self, db: str, table: str, low: int, high: int) -> list[Change]:
        """The changes of ``db.table`` in transactions ``low .. high - 1``."""
        return [
            (r[0], r[3], r[4], r[5])
            for t in self.transactions(low)
            if t.seq < high
            for r in t.rows
            if (r[1], r[2]) == (db, table)
        ]

    def rows(self, db: str, table: str) -> dict[str, dict[str, Any]]:
        """The table now: row image by key text."""
        out: dict[str, dict[str, Any]] = {}
        for op, key, before, after in self.changes(db, table, 0, self.end().seq):
            if before is not None:
                out.pop(key_of(before, self, db, table), None)
            if op != OP_DELETE and after is not None:
                out[key] = json.loads(after)
        return out


def key_of(image: str, db: FakeDatabase, schema_db: str, table: str) -> str:
    """The key text of a row image of ``schema_db.table``."""
    schema = db.schema(schema_db, table)
    assert schema is not None
    row = json.loads(image)
    return json.dumps([row.get(c) for c in schema.key], separators=(",", ":"))
