"""Table schemas and rows shared by the sink and snapshot tests: every MySQL type, and a plain
accounts table."""

from __future__ import annotations

import json
from typing import Any

from sparkcdc.core.schema import TableSchema
from sparkcdc.sources.mysql.schema.column_types import column

ALL_TYPES = TableSchema(
    "shop",
    "types",
    (
        column("id", "int"),
        column("ti", "tinyint"),
        column("tu", "tinyint", unsigned=True),
        column("si", "smallint"),
        column("mi", "mediumint", unsigned=True),
        column("iu", "int", unsigned=True),
        column("bi", "bigint"),
        column("bu", "bigint", unsigned=True),
        column("d", "decimal", precision=38, scale=10),
        column("dwide", "decimal", precision=65, scale=30),
        column("f", "float"),
        column("db", "double"),
        column("bits", "bit", length=64),
        column("y", "year"),
        column("s", "varchar", length=40, charset="utf8mb4"),
        column("j", "json"),
        column("e", "enum", values=("a", "b")),
        column("st", "set", values=("x", "y")),
        column("bin", "binary", length=4),
        column("blob", "blob"),
        column("day", "date"),
        column("dtm", "datetime", fsp=6),
        column("ts", "timestamp", fsp=6),
        column("tm", "time", fsp=6),
    ),
    primary_key=("id",),
)

ROW_JSON: dict[str, Any] = {
    "id": 1, "ti": -128, "tu": 255, "si": -32768, "mi": 16777215, "iu": 4294967295,
    "bi": -9223372036854775808, "bu": 18446744073709551615,
    "d": "1234567890123456789012345678.0123456789",
    "dwide": "12345678901234567890123456789012345.123456789012345678901234567890",
    "f": 3.4028235e38, "db": 2.2250738585072014e-308, "bits": 18446744073709551615, "y": 2155,
    "s": "grüße 🎉", "j": '{"k": [1, 2]}', "e": "b", "st": "x,y", "bin": "AQAAAA==",
    "blob": "AAD/AA==", "day": "0000-00-00", "dtm": "9999-12-31T23:59:59.999999",
    "ts": "2038-01-19T03:14:07.999999Z", "tm": "-838:59:59.000000",
}  # fmt: skip

ACCOUNTS = TableSchema(
    "shop",
    "accounts",
    (
        column("id", "bigint"),
        column("owner", "varchar"),
        column("balance", "decimal", precision=10, scale=2),
    ),
    primary_key=("id",),
)


def images(schema: TableSchema, rows: list[dict[str, Any]]) -> tuple[list[str], list[str]]:
    """The key texts and row images of ``rows`` as a log reader writes them."""
    keys = [json.dumps([r[k] for k in schema.key], separators=(",", ":")) for r in rows]
    return keys, [json.dumps(r) for r in rows]
