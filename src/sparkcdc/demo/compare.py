"""Order-independent comparison of a source table with its Delta replica.

Each row becomes one canonical text (values normalised by the table's column types, so that
MariaDB's answer and the replica's typed value of the same thing print alike), hashed with
SHA-256; the fingerprint of a table is the row count and the sum of the row hashes modulo 2**64.
Equal fingerprints mean equal contents whatever the row order.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from sparkcdc.core.schema import TableSchema
from sparkcdc.sinks.delta import commits
from sparkcdc.sources.mysql.throwaway import ThrowawayMariaDB


@dataclass(frozen=True)
class Fingerprint:
    rows: int
    checksum: int

    def __str__(self) -> str:
        return f"{self.rows:>7,} rows  checksum {self.checksum:016x}"


def canonical(value: Any, data_type: str) -> str:
    """One value as text, the same for the source's and the replica's form of it."""
    if value is None:
        return "\u2205"
    if data_type == "time":
        return str(_time_micros(value))
    if data_type == "float":
        return format(float(value), ".6g")
    if data_type == "bit":
        return str(int.from_bytes(value, "big") if isinstance(value, bytes) else int(value))
    if isinstance(value, set):
        return ",".join(sorted(value))
    if data_type == "set":
        return ",".join(sorted(str(value).split(","))) if value else ""
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).hex()
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(dt.UTC).replace(tzinfo=None)
        return str(value.isoformat(timespec="microseconds"))
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, float):
        return repr(value)
    return str(value)


def _time_micros(value: Any) -> int:
    """A TIME value (``timedelta`` from the server, ``[-]HHH:MM:SS[.ffffff]`` in the replica)."""
    if isinstance(value, dt.timedelta):
        return value // dt.timedelta(microseconds=1)
    text = str(value)
    sign = -1 if text.startswith("-") else 1
    hours, minutes, seconds = text.lstrip("-").split(":")
    whole, _, fraction = seconds.partition(".")
    micros = int((fraction + "000000")[:6])
    return sign * (((int(hours) * 60 + int(minutes)) * 60 + int(whole)) * 1_000_000 + micros)


def canonical_rows(
    rows: list[tuple[Any, ...]] | list[list[Any]], schema: TableSchema
) -> list[tuple[str, ...]]:
    """Every row as canonical texts, sorted: for row-by-row comparisons in tests."""
    types = [c.data_type for c in schema.columns]
    return sorted(tuple(canonical(v, t) for v, t in zip(r, types, strict=True)) for r in rows)


def source_rows(server: ThrowawayMariaDB, schema: TableSchema) -> list[tuple[Any, ...]]:
    """The source table's rows (TIMESTAMP columns read in UTC)."""
    columns = ", ".join(f"`{c}`" for c in schema.column_names())
    with contextlib.closing(server.connect(schema.db)) as conn, conn.cursor() as cur:
        cur.execute("SET time_zone = '+00:00'")
        cur.execute(f"SELECT {columns} FROM `{schema.table}`")
        return list(cur.fetchall())


def replica_rows(path: str, schema: TableSchema) -> list[list[Any]]:
    """The replica's rows, columns in the source's order."""
    table = commits.table(path).to_pyarrow_table(columns=schema.column_names())
    return [list(r.values()) for r in table.to_pylist()]


def fingerprint(rows: list[tuple[Any, ...]] | list[list[Any]], schema: TableSchema) -> Fingerprint:
    types = [c.data_type for c in schema.columns]
    total = 0
    for row in rows:
        text = "\x1f".join(canonical(v, t) for v, t in zip(row, types, strict=True))
        total += int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")
    return Fingerprint(len(rows), total % 2**64)


def source_fingerprint(server: ThrowawayMariaDB, schema: TableSchema) -> Fingerprint:
    return fingerprint(source_rows(server, schema), schema)


def replica_fingerprint(path: str, schema: TableSchema) -> Fingerprint:
    return fingerprint(replica_rows(path, schema), schema)
