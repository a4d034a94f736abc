"""The fake source's catalog (:class:`sparkcdc.sources.port.Catalog`) and chunk dialect
(:class:`sparkcdc.snapshot.dialect.SnapshotDialect`), over the fake database's file.

Keys are compared in Python, so the fake takes integer and string keys without collations.
"""

from __future__ import annotations

import bisect
import json
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any, Self

import pyarrow as pa

from sparkcdc.core import errors
from sparkcdc.core.chunk import KeyColumn, KeyValue
from sparkcdc.core.schema import TableSchema
from sparkcdc.snapshot.correct import CHUNK_SCHEMA, key_text, typed_rows
from sparkcdc.sources.table_filter import compile_patterns, no_table_matches, unmatched_patterns
from tests.fakes.database import FakeDatabase
from tests.fakes.offset import FakeOffset


class FakeCatalog:
    def __init__(self, path: str) -> None:
        self.db = FakeDatabase(path)
        self.address = f"fake:{path}"

    def check_ready(self, namespaces: Iterable[str] = ()) -> None:
        reason = self.db.header().get("not_ready")
        if reason:
            raise errors.LogNotReady(reason)

    def match_tables(
        self, patterns: Sequence[str], each: bool = False, exclude: Sequence[str] = ()
    ) -> list[tuple[str, str]]:
        compiled, excluded = compile_patterns(patterns), compile_patterns(exclude)
        found = sorted((s.db, s.table) for s in self.db.schemas()
                       if any(p.fullmatch(s.name) for p in compiled)
                       and not any(p.fullmatch(s.name) for p in excluded))  # fmt: skip
        unmatched = unmatched_patterns(patterns, (f"{d}.{t}" for d, t in found))
        if not found or (each and unmatched):
            raise no_table_matches(patterns, unmatched, f"in {self.address}", "fix them")
        return found

    def load_schema(self, db: str, table: str, key_columns: Sequence[str] = ()) -> TableSchema:
        schema = self.db.schema(db, table)
        if schema is None:
            raise errors.SourceError(f"Table {db}.{table} does not exist on {self.address}.")
        if schema.primary_key:
            return schema
        if not key_columns:
            raise errors.TableWithoutKey(f"Table {db}.{table} has no primary key.", db=db,
                                         table=table)  # fmt: skip
        return replace(schema, key_columns=tuple(key_columns))

    def log_end(self) -> FakeOffset:
        return self.db.end()

    def oldest_position(self) -> str:
        return "0"

    def check_signal_table(self, table: str) -> None:
        db, _, name = table.partition(".")
        if self.db.schema(db, name) is None:
            raise errors.ConfigError(
                f"The signal table {table} does not exist.", key="source.signal_table"
            )

    def write_signal(self, table: str, signal_id: str, kind: str, data: str) -> None:
        db, _, name = table.partition(".")
        self.check_signal_table(table)
        image = json.dumps({"id": signal_id, "type": kind, "data": data})
        row = ["c", db, name, json.dumps([signal_id]), None, image]
        with self.db.path.open("a") as f:
            f.write(json.dumps({"ts_ms": 0, "rows": [row]}) + "\n")

    def close(self) -> None:
        pass

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class FakeChunks(FakeCatalog):
    """The chunk queries, over each table's rows at the log's end."""

    def _keys(self, db: str, table: str, keys: Sequence[KeyColumn]) -> list[KeyValue]:
        rows = self.db.rows(db, table).values()
        return sorted(tuple(r.get(k.name) for k in keys) for r in rows)

    def key_columns(self, db: str, table: str, names: Sequence[str]) -> list[KeyColumn]:
        schema = self.load_schema(db, table, names)
        found = [schema.column(n) for n in names]
        return [KeyColumn(c.name, c.data_type, logical=c.logical) for c in found]

    def row_count(self, db: str, table: str) -> int:
        return len(self.db.rows(db, table))

    def key_range(
        self, db: str, table: str, keys: Sequence[KeyColumn]
    ) -> tuple[KeyValue, KeyValue] | None:
        found = self._keys(db, table, keys)
        return (found[0], found[-1]) if found else None

    def key_after(
        self,
        db: str,
        table: str,
        keys: Sequence[KeyColumn],
        lo: KeyValue | None,
        offset: int,
        upto: KeyValue | None = None,
    ) -> KeyValue | None:
        found = [k for k in self._keys(db, table, keys) if (lo is None or k >= tuple(lo))
                 and (upto is None or k <= tuple(upto))]  # fmt: skip
        return found[offset] if offset < len(found) else None

    def count_between(
        self,
        db: str,
        table: str,
        keys: Sequence[KeyColumn],
        lo: KeyValue | None,
        hi: KeyValue | None,
        limit: int,
    ) -> int:
        return min(limit, sum(1 for k in self._keys(db, table, keys) if _within(k, lo, hi)))

    def read_chunk(
        self,
        schema: TableSchema,
        keys: Sequence[KeyColumn],
        lo: KeyValue | None,
        hi: KeyValue | None,
        typed: bool = False,
        upto: KeyValue | None = None,
        where: str | None = None,
    ) -> pa.Table:
        names = list(schema.key or [k.name for k in keys])
        picked: list[tuple[KeyValue, str, str]] = []  # in key order, as a range scan returns
        for row in self.db.rows(schema.db, schema.table).values():
            value = tuple(row.get(k.name) for k in keys)
            if _within(value, lo, hi) and (upto is None or value <= tuple(upto)):
                picked.append((value, key_text([row.get(c) for c in names]), _image(row, schema)))
        picked.sort(key=lambda p: p[0])
        texts, images = [k for _, k, _ in picked], [i for _, _, i in picked]
        if typed:
            return typed_rows(schema)(texts, images)
        return pa.table([pa.array(texts, pa.string()), pa.array(images, pa.string())],
                        CHUNK_SCHEMA)  # fmt: skip

    def check_condition(self, db: str, table: str, where: str) -> str | None:
        return "the fake source takes no conditions"

    def locate(
        self, keys: Sequence[KeyColumn], values: Sequence[KeyValue], bounds: Sequence[KeyValue]
    ) -> list[int]:
        ordered = [tuple(b) for b in bounds]
        return [bisect.bisect_right(ordered, tuple(v)) for v in values]

    def read_point(self) -> None:
        return None

    def watermark(self) -> FakeOffset:
        return self.db.end()

    def low_watermark(self) -> FakeOffset:
        return self.db.end()


def _within(value: KeyValue, lo: KeyValue | None, hi: KeyValue | None) -> bool:
    return (lo is None or value >= tuple(lo)) and (hi is None or value < tuple(hi))


def _image(row: dict[str, Any], schema: TableSchema) -> str:
    return json.dumps({c.name: row.get(c.name) for c in schema.columns}, separators=(",", ":"))
