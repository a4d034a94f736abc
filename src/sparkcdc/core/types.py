"""Logical types: the neutral column types every source maps its own column types to.

A source describes each column in its own vocabulary (MySQL's ``bigint unsigned``, PostgreSQL's
``numeric(12,2)``) and names the logical type the column's values take on their way to the
lake (:attr:`sparkcdc.core.schema.Column.logical`). Everything past the source (snapshot
algorithms, the stream, the sinks) knows only these:

================  =====================  ===============  ================================
logical           Arrow                  Spark / Delta    row-image JSON value
================  =====================  ===============  ================================
int8, int16       int8, int16            tinyint,         number
int32, int64      int32, int64           smallint, int,
                                         bigint
uint64            decimal128(20, 0)      decimal(20,0)    number (0 .. 2**64 - 1)
float32           float32                float            number (read as a double)
float64           float64                double           number
boolean           bool                   boolean          true / false
decimal(p,s)      decimal128(p, s)       decimal(p,s)     string of the exact digits
                  (p <= 38)
string            string                 string           string
binary            binary                 binary           string, base64
date              date32                 date             "YYYY-MM-DD"
timestamp         timestamp(us, UTC)     timestamp        "YYYY-MM-DDTHH:MM:SS.ffffffZ"
timestamp_ntz     timestamp(us)          timestamp_ntz    "YYYY-MM-DDTHH:MM:SS.ffffff"
array<E>          list<E's Arrow type>   array<E's Spark  JSON array of E's JSON values,
                  (elements nullable)    type>            null elements null
================  =====================  ===============  ================================

Dates and timestamps are proleptic Gregorian with astronomical years (1 BC is year 0, 44 BC is
year -43). Years 1 .. 9999 are written with four digits, as above; any other year in ISO 8601's
expanded form: its sign and at least four digits (``"-0043-03-15"``, ``"+0000-01-01"``,
``"+10000-01-01T00:00:00.000000Z"``). Arrow's date32 and timestamp(us) hold them exactly
(int32 days, int64 microseconds since 1970-01-01).

``E`` of ``array<E>`` is any logical type above but an array (arrays have one dimension); its
text is exactly ``array<`` E ``>``, e.g. ``array<decimal(12,2)>``. Arrays cannot be key columns.
"""

from __future__ import annotations

import re

import pyarrow as pa

MAX_DECIMAL_DIGITS = 38  # Spark's and Delta's widest decimal

_ARROW: dict[str, pa.DataType] = {
    "int8": pa.int8(),
    "int16": pa.int16(),
    "int32": pa.int32(),
    "int64": pa.int64(),
    "uint64": pa.decimal128(20, 0),
    "float32": pa.float32(),
    "float64": pa.float64(),
    "boolean": pa.bool_(),
    "string": pa.string(),
    "binary": pa.binary(),
    "date": pa.date32(),
    "timestamp": pa.timestamp("us", tz="UTC"),
    "timestamp_ntz": pa.timestamp("us"),
}
_SPARK = {
    "int8": "tinyint",
    "int16": "smallint",
    "int32": "int",
    "int64": "bigint",
    "uint64": "decimal(20,0)",
    "float32": "float",
    "float64": "double",
    "boolean": "boolean",
    "string": "string",
    "binary": "binary",
    "date": "date",
    "timestamp": "timestamp",
    "timestamp_ntz": "timestamp_ntz",
}
INTEGERS = frozenset({"int8", "int16", "int32", "int64", "uint64"})
_DECIMAL = re.compile(r"decimal\((\d+),(\d+)\)")
_ARRAY_OPEN = "array<"


def decimal(precision: int, scale: int) -> str:
    """The logical type of exact decimals of ``precision`` digits, ``scale`` after the point."""
    if not 0 < precision <= MAX_DECIMAL_DIGITS or not 0 <= scale <= precision:
        raise ValueError(f"decimal({precision},{scale}) is not a logical type")
    return f"decimal({precision},{scale})"


def decimal_digits(logical: str) -> tuple[int, int] | None:
    """(precision, scale) of a decimal logical type, None for any other."""
    match = _DECIMAL.fullmatch(logical)
    return None if match is None else (int(match.group(1)), int(match.group(2)))


def array_of(element: str) -> str:
    """The logical type of one-dimensional arrays of ``element`` (a scalar logical type)."""
    if is_array(check(element)):
        raise ValueError(f"array<{element}> is not a logical type: arrays have one dimension")
    return f"{_ARRAY_OPEN}{element}>"


def array_element(logical: str) -> str | None:
    """The element logical type of an array logical type, None for any other."""
    if logical.startswith(_ARRAY_OPEN) and logical.endswith(">"):
        return logical[len(_ARRAY_OPEN) : -1]
    return None


def is_array(logical: str) -> bool:
    return array_element(logical) is not None


def check(logical: str) -> str:
    """``logical`` if it is a logical type (ValueError naming it otherwise)."""
    element = array_element(logical)
    scalar = logical if element is None else element
    if scalar in _ARROW or decimal_digits(scalar) is not None:
        return logical
    raise ValueError(f"{logical!r} is not a logical type")


def arrow_type(logical: str) -> pa.DataType:
    """The Arrow type of ``logical`` (ValueError for a text that is none)."""
    found = _ARROW.get(logical)
    if found is not None:
        return found
    element = array_element(check(logical))
    if element is not None:
        return pa.list_(arrow_type(element))
    digits = decimal_digits(logical)
    assert digits is not None
    return pa.decimal128(*digits)


def spark_type(logical: str) -> str:
    """The Spark SQL type (DDL text) of ``logical``."""
    found = _SPARK.get(logical)
    if found is not None:
        return found
    element = array_element(check(logical))
    return logical if element is None else f"array<{spark_type(element)}>"


def is_integer(logical: str) -> bool:
    return logical in INTEGERS


def is_exact_number(logical: str) -> bool:
    """Integers and decimals: ordered the same way in Python as in any database."""
    return logical in INTEGERS or decimal_digits(logical) is not None
