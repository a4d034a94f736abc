"""Columns and tables as MySQL 8 describes them, from their DDL type text.

From ``Column(name, sql_type)`` come: the binlog type code and the TABLE_MAP metadata bytes as
MySQL 8 writes them (``rows_event.h``'s table of column types: temporal2 types with their
fractional precision, NEWDECIMAL precision/scale, VARCHAR's maximum length in bytes, the STRING
real-type/length pair of CHAR/BINARY/ENUM/SET, the pack length of BLOB/TEXT/JSON/GEOMETRY, BIT's
bits and bytes) and the ``information_schema.COLUMNS`` row MySQL 8.0.19+ reports (integer types
without display width). Values are turned into row-image bytes by :mod:`.values`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

# enum_field_types (mysql_com.h)
T_TINY, T_SHORT, T_LONG, T_FLOAT, T_DOUBLE, T_LONGLONG, T_INT24 = 1, 2, 3, 4, 5, 8, 9
T_DATE, T_YEAR, T_VARCHAR, T_BIT = 10, 13, 15, 16
T_TIMESTAMP2, T_DATETIME2, T_TIME2 = 17, 18, 19
T_JSON, T_NEWDECIMAL, T_ENUM, T_SET = 245, 246, 247, 248
T_BLOB, T_STRING, T_GEOMETRY = 252, 254, 255

# charset -> (default collation id, collation name, most bytes per character)
CHARSETS: dict[str, tuple[int, str, int]] = {
    "utf8mb4": (255, "utf8mb4_0900_ai_ci", 4),
    "utf8mb3": (33, "utf8mb3_general_ci", 3),
    "latin1": (8, "latin1_swedish_ci", 1),
    "ascii": (11, "ascii_general_ci", 1),
    "binary": (63, "binary", 1),
}
_INTS = {  # name: (type code, bytes, I_S precision signed, unsigned)
    "tinyint": (T_TINY, 1, 3, 3),
    "smallint": (T_SHORT, 2, 5, 5),
    "mediumint": (T_INT24, 3, 7, 8),
    "int": (T_LONG, 4, 10, 10),
    "bigint": (T_LONGLONG, 8, 19, 20),
}
_SIZES = {"tiny": (1, 255), "": (2, 65535), "medium": (3, 16777215), "long": (4, 4294967295)}
_TEMPORAL = {"time": T_TIME2, "datetime": T_DATETIME2, "timestamp": T_TIMESTAMP2}
# the types with a SIGNEDNESS bit (has_signedess_information_type): YEAR too, its bit 0
NUMERIC = frozenset({T_TINY, T_SHORT, T_INT24, T_LONG, T_LONGLONG, T_NEWDECIMAL, T_FLOAT, T_DOUBLE,
                     T_YEAR})  # fmt: skip
_TYPE = re.compile(r"^\s*([a-z]+)\s*(?:\((.*)\))?\s*(.*)$", re.I | re.S)


def charset_of(name: str) -> str:
    name = name.lower()
    return "utf8mb3" if name == "utf8" else name


def quoted_list(text: str) -> tuple[str, ...]:
    """The members of an ENUM/SET list ``'a','b''c'``."""
    return tuple(m.replace("''", "'") for m in re.findall(r"'((?:[^']|'')*)'", text))


@dataclass(frozen=True)
class Column:
    """One column: its name, its MySQL DDL type (``int unsigned``, ``varchar(300)``,
    ``enum('a','b')`` …), NULL-ability and an optional character set (the table's if None)."""

    name: str
    sql_type: str
    nullable: bool = True
    charset: str | None = None

    def spec(self, table_charset: str = "utf8mb4") -> TypeSpec:
        return type_spec(self, table_charset)


@dataclass(frozen=True)
class TypeSpec:
    """Everything the binlog and the catalog say about one column."""

    base: str  # the server's type name (DATA_TYPE)
    column_type: str  # COLUMN_TYPE
    code: int  # the binlog type code in TABLE_MAP
    meta: bytes  # the TABLE_MAP metadata bytes
    unsigned: bool = False
    length: int = 0  # chars (CHAR/VARCHAR/TEXT …), bytes (BINARY …), bits (BIT), digits
    scale: int = 0  # DECIMAL scale, fsp of TIME/DATETIME/TIMESTAMP
    max_bytes: int = 0  # the most bytes a CHAR/VARCHAR/BINARY value takes
    charset: str | None = None  # None for non-character types
    values: tuple[str, ...] = ()  # ENUM/SET members
    width: int = 0  # fixed byte width (integers, ENUM/SET pack length, BLOB length bytes)

    @property
    def collation(self) -> int:
        return CHARSETS[self.charset or "binary"][0]

    @property
    def is_character(self) -> bool:
        """A character column as the table map's charset field counts them (binary ones too)."""
        return self.code in (T_STRING, T_VARCHAR, T_BLOB) and self.base not in ("enum", "set")

    @property
    def is_enum_or_set(self) -> bool:
        return self.base in ("enum", "set")


def type_spec(col: Column, table_charset: str = "utf8mb4") -> TypeSpec:
    """The :class:`TypeSpec` of ``col`` (ValueError for a type this writer does not know)."""
    match = _TYPE.match(col.sql_type)
    if not match:
        raise ValueError(f"not a column type: {col.sql_type!r}")
    base, args, rest = match.group(1).lower(), match.group(2) or "", match.group(3).lower()
    unsigned = "unsigned" in rest
    nums = [int(x) for x in re.findall(r"\d+", args)] if base not in ("enum", "set") else []
    charset = charset_of(col.charset or table_charset)
    if base in ("integer", "bool", "boolean"):
        base, nums = ("int", []) if base == "integer" else ("tinyint", [1])
    if base in _INTS:
        code, width, _, _ = _INTS[base]
        shown = f"{base}(1)" if base == "tinyint" and nums == [1] else base
        ctype = shown + (" unsigned" if unsigned else "")
        return TypeSpec(base, ctype, code, b"", unsigned, width=width)
    if base in ("decimal", "numeric", "dec"):
        precision, scale = (nums + [10, 0][len(nums) :])[:2] if nums else (10, 0)
        ctype = f"decimal({precision},{scale})" + (" unsigned" if unsigned else "")
        meta = bytes([precision, scale])
        return TypeSpec("decimal", ctype, T_NEWDECIMAL, meta, unsigned, precision, scale)
    if base in ("float", "double", "real"):
        base = "float" if base == "float" else "double"
        code, size = (T_FLOAT, 4) if base == "float" else (T_DOUBLE, 8)
        ctype = base + (f"({nums[0]},{nums[1]})" if len(nums) == 2 else "")
        ctype += " unsigned" if unsigned else ""
        return TypeSpec(base, ctype, code, bytes([size]), unsigned, width=size)
    if base == "bit":
        bits = nums[0] if nums else 1
        return TypeSpec("bit", f"bit({bits})", T_BIT, bytes([bits % 8, bits // 8]), length=bits)
    if base in ("date", "year"):
        return TypeSpec(base, base, T_DATE if base == "date" else T_YEAR, b"")
    if base in _TEMPORAL:
        fsp = nums[0] if nums else 0
        ctype = f"{base}({fsp})" if fsp else base
        return TypeSpec(base, ctype, _TEMPORAL[base], bytes([fsp]), scale=fsp)
    if base in ("char", "binary"):
        n = nums[0] if nums else 1
        cs = "binary" if base == "binary" else charset
        max_bytes = n * CHARSETS[cs][2]
        real = T_STRING ^ ((max_bytes & 0x300) >> 4)
        meta = bytes([real, max_bytes & 0xFF])
        return TypeSpec(base, f"{base}({n})", T_STRING, meta, length=n, max_bytes=max_bytes,
                        charset=None if cs == "binary" else cs)  # fmt: skip
    if base in ("varchar", "varbinary"):
        n = nums[0]
        cs = "binary" if base == "varbinary" else charset
        max_bytes = n * CHARSETS[cs][2]
        return TypeSpec(base, f"{base}({n})", T_VARCHAR, max_bytes.to_bytes(2, "little"),
                        length=n, max_bytes=max_bytes,
                        charset=None if cs == "binary" else cs)  # fmt: skip
    sized = re.fullmatch(r"(tiny|medium|long|)(text|blob)", base)
    if sized:
        width, limit = _SIZES[sized.group(1)]
        text = None if sized.group(2) == "blob" else charset
        return TypeSpec(base, base, T_BLOB, bytes([width]), length=limit, charset=text,
                        width=width)  # fmt: skip
    if base in ("enum", "set"):
        values = quoted_list(args)
        if base == "enum":
            width = 1 if len(values) < 256 else 2
        else:
            width = (len(values) + 7) // 8
            width = 8 if width > 4 else width
        code = T_ENUM if base == "enum" else T_SET
        longest = max((len(v) for v in values), default=0)
        total = sum(len(v) for v in values) + max(len(values) - 1, 0)
        return TypeSpec(base, f"{base}({args})", T_STRING, bytes([code, width]),
                        length=longest if base == "enum" else total, charset=charset,
                        values=values, width=width)  # fmt: skip
    if base == "json":
        return TypeSpec("json", "json", T_JSON, bytes([4]), width=4)
    if base in ("geometry", "point", "linestring", "polygon"):
        return TypeSpec(base, base, T_GEOMETRY, bytes([4]), width=4)
    raise ValueError(f"the MySQL 8 writer does not know the column type {col.sql_type!r}")


def columns_row(col: Column, spec: TypeSpec) -> dict[str, Any]:
    """The ``information_schema.COLUMNS`` fields of ``col`` as MySQL 8.0 reports them."""
    precision: int | None = None
    scale: int | None = None
    max_length: int | None = None
    octets: int | None = None
    dt_precision: int | None = None
    base = spec.base
    if base in _INTS:
        precision, scale = _INTS[base][3 if spec.unsigned else 2], 0
    elif base == "decimal":
        precision, scale = spec.length, spec.scale
    elif base == "float":
        precision = 12
    elif base == "double":
        precision = 22
    elif base == "bit":
        precision = spec.length
    elif base in _TEMPORAL:
        dt_precision = spec.scale
    elif spec.code in (T_STRING, T_VARCHAR, T_BLOB):
        max_length = spec.length
        per_char = CHARSETS[spec.charset][2] if spec.charset else 1
        octets = spec.length if spec.code == T_BLOB else spec.length * per_char
    charset = spec.charset
    return {
        "COLUMN_NAME": col.name,
        "DATA_TYPE": base,
        "COLUMN_TYPE": spec.column_type,
        "IS_NULLABLE": "YES" if col.nullable else "NO",
        "NUMERIC_PRECISION": precision,
        "NUMERIC_SCALE": scale,
        "CHARACTER_MAXIMUM_LENGTH": max_length,
        "CHARACTER_OCTET_LENGTH": octets,
        "DATETIME_PRECISION": dt_precision,
        "CHARACTER_SET_NAME": charset,
        "COLLATION_NAME": CHARSETS[charset][1] if charset else None,
        "COLUMN_KEY": "",
        "EXTRA": "",
        "COLUMN_DEFAULT": None,
    }


@dataclass
class Table:
    """A served table: database, name, columns, primary key (column names in key order), the
    binlog table id and the default character set."""

    db: str
    name: str
    columns: tuple[Column, ...] | list[Column]
    primary_key: tuple[str, ...] | list[str] = ()
    table_id: int = 100
    charset: str = "utf8mb4"
    specs: tuple[TypeSpec, ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.columns = tuple(self.columns)
        self.primary_key = tuple(self.primary_key)
        self.specs = tuple(c.spec(self.charset) for c in self.columns)
        names = [c.name.lower() for c in self.columns]
        unknown = [k for k in self.primary_key if k.lower() not in names]
        if unknown:
            raise ValueError(f"{self.db}.{self.name} has no column {unknown}")

    @property
    def nullable(self) -> tuple[bool, ...]:
        """Per column whether it may hold NULL (primary key columns never do)."""
        keys = {k.lower() for k in self.primary_key}
        return tuple(c.nullable and c.name.lower() not in keys for c in self.columns)

    @property
    def key_indexes(self) -> tuple[int, ...]:
        names = [c.name.lower() for c in self.columns]
        return tuple(names.index(k.lower()) for k in self.primary_key)

    @property
    def collation(self) -> str:
        return CHARSETS[charset_of(self.charset)][1]

    def catalog_rows(self) -> list[dict[str, Any]]:
        """``information_schema.COLUMNS`` rows in ordinal order (with ORDINAL_POSITION)."""
        rows = []
        keys = {k.lower() for k in self.primary_key}
        for i, (col, spec) in enumerate(zip(self.columns, self.specs, strict=True), 1):
            row = columns_row(col, spec)
            row.update(TABLE_SCHEMA=self.db, TABLE_NAME=self.name, ORDINAL_POSITION=i)
            if col.name.lower() in keys:
                row["COLUMN_KEY"], row["IS_NULLABLE"] = "PRI", "NO"
            rows.append(row)
        return rows

    def row_tuple(self, row: Any) -> tuple[Any, ...]:
        """A row given as a dict (by column name) or in column order, as a tuple."""
        if isinstance(row, dict):
            lower = {str(k).lower(): v for k, v in row.items()}
            return tuple(lower.get(c.name.lower()) for c in self.columns)
        values = tuple(row)
        if len(values) != len(self.columns):
            raise ValueError(f"{self.db}.{self.name} has {len(self.columns)} columns, not "
                             f"{len(values)}")  # fmt: skip
        return values
