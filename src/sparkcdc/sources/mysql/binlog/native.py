"""The compiled row decoder (``_rowdecode.c``): typed row images straight into Arrow buffers.

``scripts/setup.sh`` compiles ``_rowdecode.c`` with the system's C compiler next to this module.
:func:`native_layout` describes a table layout to it column by column (the same binlog facts as
:mod:`.rowcode`, and the Arrow type of each column's logical type); the decoded images of a rows
event stay in C buffers (:class:`BufferedRows`) until a store item is built, where they become
Arrow struct arrays without a Python object per value. A layout with a column the C code does
not take (TIME, the pre-5.6 temporal formats) is decoded by the generated Python code, as is
everything when the module is not built or the environment says ``SPARKCDC_NATIVE_ROWS=0``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

import pyarrow as pa

from sparkcdc.core.images import ColumnarRows
from sparkcdc.core.schema import Column, TableSchema
from sparkcdc.core.types import decimal_digits
from sparkcdc.sources.mysql.binlog import tablemap as tm
from sparkcdc.sources.mysql.binlog import values as vals
from sparkcdc.sources.mysql.schema.column_types import is_binary

try:
    from sparkcdc.sources.mysql.binlog import _rowdecode  # type: ignore[attr-defined]
except ImportError:  # not built: the Python decoder runs
    _rowdecode = None

K_INT, K_REAL, K_DECIMAL, K_YEAR, K_BIT, K_DATE, K_DATETIME2, K_TIMESTAMP2 = range(1, 9)
K_STRING, K_ENUM, K_SET = 9, 10, 11
_ARROW = {"int8": 1, "int16": 2, "int32": 3, "int64": 4, "float32": 5, "float64": 6,
          "uint64": 7, "string": 8, "binary": 9, "date": 3, "timestamp": 4,
          "timestamp_ntz": 4}  # fmt: skip
A_DECIMAL = 7
_INT_WIDTH = {tm.T_TINY: 1, tm.T_SHORT: 2, tm.T_INT24: 3, tm.T_LONG: 4, tm.T_LONGLONG: 8}
_BLOBS = (tm.T_BLOB, tm.T_TINY_BLOB, tm.T_MEDIUM_BLOB, tm.T_LONG_BLOB, tm.T_GEOMETRY)

Spec = tuple[int, int, int, Any]


def available() -> bool:
    return _rowdecode is not None and os.environ.get("SPARKCDC_NATIVE_ROWS", "1") != "0"


def _string(prefix: int, col: Column, pad_to: int = 0, binary: bool = False) -> Spec:
    binary = binary or is_binary(col)
    return (K_STRING, prefix, pad_to, None if binary else vals.python_codec(col.charset))


def column_spec(t: int, meta: int, col: Column) -> Spec | None:
    """How the compiled decoder reads a column of binlog type ``t`` (None: it does not)."""
    if t in _INT_WIDTH:
        return (K_INT, _INT_WIDTH[t], int(col.unsigned), None)
    if t in (tm.T_FLOAT, tm.T_DOUBLE):
        return (K_REAL, 4 if t == tm.T_FLOAT else 8, 0, None)
    if t == tm.T_NEWDECIMAL:
        return (K_DECIMAL, meta >> 8, meta & 0xFF, None)
    if t == tm.T_YEAR:
        return (K_YEAR, 1, 0, None)
    if t == tm.T_BIT:
        return (K_BIT, (meta >> 8) + (1 if meta & 0xFF else 0), 0, None)
    if t in (tm.T_DATE, tm.T_NEWDATE):
        return (K_DATE, 3, 0, None)
    if t in (tm.T_DATETIME2, tm.T_TIMESTAMP2) and meta <= 6:
        return (K_DATETIME2 if t == tm.T_DATETIME2 else K_TIMESTAMP2, meta, 0, None)
    if t in (tm.T_VARCHAR, tm.T_VAR_STRING):
        return _string(1 if meta < 256 else 2, col)
    if t in _BLOBS:
        return _string(meta, col, binary=t == tm.T_GEOMETRY)
    if t in (tm.T_STRING, tm.T_ENUM, tm.T_SET):
        real, length = tm.string_type(t, meta)
        if real == tm.T_ENUM:
            return (K_ENUM, length, 0, ("", *col.values))
        if real == tm.T_SET:
            return (K_SET, length, 0, tuple(col.values))
        return _string(1 if length < 256 else 2, col, pad_to=length)
    return None


def _arrow_kind(col: Column) -> int | None:
    if decimal_digits(col.logical) is not None:
        return A_DECIMAL
    return _ARROW.get(col.logical)


def native_layout(
    table_map: tm.TableMap,
    schema: TableSchema,
    key: Sequence[int],
    key_text: Sequence[Callable[[object], str] | None],
) -> Any:
    """The compiled decoder's description of one table layout, or None (module docstring)."""
    if not available():
        return None
    specs = []
    for t, meta, col in zip(
        table_map.column_types, table_map.column_meta, schema.columns, strict=True
    ):
        spec, arrow = column_spec(t, meta, col), _arrow_kind(col)
        if spec is None or arrow is None:
            return None
        specs.append((*spec, arrow))
    return _rowdecode.Layout(tuple(specs), tuple((i, key_text[i]) for i in key))


def decode_event(
    layout: Any, kind: str, v2: bool, data: bytes, start: int, end: int
) -> tuple[BufferedRows, int]:
    """The changes of the rows event whose body is ``data[start:end]``, their images in C
    buffers; where the decoding stopped (ValueError: the event does not fit ``layout``)."""
    rows = _rowdecode.Rows(layout)
    n, keys, stop = rows.decode_event(kind, v2, data, start, end)
    return BufferedRows(rows, kind, keys, 0, n), stop


class BufferedRows(ColumnarRows):
    """Rows ``lo``..``hi`` of a C ``Rows`` (:class:`~sparkcdc.core.images.ColumnarRows`)."""

    __slots__ = ("rows", "op", "keys", "lo", "hi")

    def __init__(self, rows: Any, op: str, keys: list[str | None], lo: int, hi: int) -> None:
        self.rows, self.op, self.keys, self.lo, self.hi = rows, op, keys, lo, hi

    def __len__(self) -> int:
        return self.hi - self.lo

    def part(self, lo: int, hi: int) -> BufferedRows:
        return BufferedRows(self.rows, self.op, self.keys[lo:hi], self.lo + lo, self.lo + hi)

    def empty(self) -> BufferedRows:
        return BufferedRows(_rowdecode.Rows(self.rows.layout), self.op, [], 0, 0)

    def owned(self) -> BufferedRows:
        if self.lo == 0 and self.hi == len(self.rows):
            return self
        copy = self.empty()
        copy.extend(self)
        copy.keys = self.keys
        return copy

    def extend(self, other: ColumnarRows) -> None:
        assert isinstance(other, BufferedRows) and self.lo == 0 and self.hi == len(self.rows)
        self.rows.extend(other.rows, other.lo, other.hi)
        self.hi = len(self.rows)

    @property
    def nbytes(self) -> int:
        return int(self.rows.nbytes)

    def structs(self, fields: list[pa.Field]) -> tuple[pa.StructArray, pa.StructArray]:
        assert self.lo == 0 and self.hi == len(self.rows)
        n, sides = self.rows.buffers()
        out = []
        for valid, columns in sides:
            children = [
                pa.Array.from_buffers(
                    f.type, n,
                    [pa.py_buffer(v), *([] if o is None else [pa.py_buffer(o)]), pa.py_buffer(d)],
                )
                for f, (v, o, d) in zip(fields, columns, strict=True)
            ]  # fmt: skip
            row = pa.struct(fields)
            out.append(pa.Array.from_buffers(row, n, [pa.py_buffer(valid)], children=children))
        return out[0], out[1]
