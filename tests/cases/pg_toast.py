"""A table whose rows hold values PostgreSQL stores out of line (TOAST), and what its source,
replica and change log hold."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from deltalake import DeltaTable

from sparkcdc.sources.postgres.throwaway import ThrowawayPostgres

DOC = (
    "CREATE TABLE doc (id int PRIMARY KEY, body text, n int)",
    "ALTER TABLE doc ALTER COLUMN body SET STORAGE EXTERNAL",  # stored out of line, whole
)


def big(salt: str) -> str:
    """SQL for 9,600 characters of md5 text: TOASTed, never inline."""
    return f"(SELECT string_agg(md5(i::text || '{salt}'), '') FROM generate_series(1, 300) i)"


def source_rows(pg: ThrowawayPostgres, db: str) -> list[dict[str, Any]]:
    found = pg.query("SELECT id, body, n FROM doc ORDER BY id", database=db)
    return [{"id": i, "body": b, "n": n} for i, b, n in found]


def replica(lake: Path) -> list[dict[str, Any]]:
    table = DeltaTable(str(lake / "public" / "doc")).to_pyarrow_table()
    return sorted(table.to_pylist(), key=lambda r: r["id"])


def changelog(lake: Path) -> list[dict[str, Any]]:
    table = DeltaTable(str(lake / "public" / "doc__changelog")).to_pyarrow_table()
    return sorted(table.to_pylist(), key=lambda r: r["source"]["position"])
