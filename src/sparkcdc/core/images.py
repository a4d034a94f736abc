"""Typed row images: the before/after values of log changes as Arrow structs, never as JSON.

A log reader opened with typed images (:meth:`~sparkcdc.sources.port.Source.open_reader`)
decodes each row into a tuple of Python values, one per column of the table's schema, in the
form :func:`column_array` turns into the column's Arrow type (:mod:`sparkcdc.core.types`):

================  ==============================================================
logical type      value in the tuple
================  ==============================================================
int8 .. int64     int
uint64            int (0 .. 2**64 - 1)
float32, float64  float (a FLOAT's value exactly)
decimal(p,s)      str of the exact digits
string            str
binary            bytes
date              int, days since 1970-01-01
timestamp(_ntz)   int, microseconds since 1970-01-01 00:00 (UTC for timestamp)
array<E>          list of E's values as above (None: a NULL element)
================  ==============================================================

None is NULL (and a column the log left out of a minimal row image, as in a JSON image).

The envelope keeps one row per change with its key and ``source``; its ``before``/``after``
text stays null for typed rows, whose images travel beside it in :class:`TypedImages`: per table
and schema version, the changes' ``source.position`` (unique in the log) with their typed
``before`` and ``after``. A consumer finds a change's images by its position
(:func:`images_of`), so slicing the envelope never has to slice the images.
"""

from __future__ import annotations

import base64
import decimal
import functools
import json
import struct
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sparkcdc.core.convert import arrow_schema, cast_struct
from sparkcdc.core.schema import TableSchema
from sparkcdc.core.temporal import date_text, timestamp_text
from sparkcdc.core.types import array_element, array_of, arrow_type

Row = tuple[object, ...]
POSITION = "position"
LOGICAL = "logical"  # the metadata key of an image field: the column's logical type
UNCHANGED_KEY = "\x00unchanged"
"""A JSON after image's reserved key listing the columns a change left out of the log
(PostgreSQL's unchanged TOASTed values), which the Delta sink fills: no column is named so (no
identifier holds a NUL), and JSON decoding passes over it."""
UNCHANGED_PREFIX = "{" + json.dumps(UNCHANGED_KEY) + ":"  # a marked image's text starts so


class ColumnarRows(ABC):
    """The changes of one log record whose typed images a source's decoder keeps in buffers of
    its own, turned into Arrow without a Python object per value (MySQL: ``_rowdecode.c``).
    Every change has the op ``op``; ``keys`` are their key texts. Sliced like a sequence."""

    __slots__ = ()
    op: str
    keys: list[str | None]

    @abstractmethod
    def __len__(self) -> int: ...

    def __getitem__(self, part: slice) -> ColumnarRows:
        lo, hi, _ = part.indices(len(self))
        return self.part(lo, hi)

    @abstractmethod
    def part(self, lo: int, hi: int) -> ColumnarRows:
        """Changes ``lo``..``hi - 1`` of these."""

    @abstractmethod
    def empty(self) -> ColumnarRows:
        """No changes yet, of the same table layout: :meth:`extend` fills it."""

    @abstractmethod
    def owned(self) -> ColumnarRows:
        """These changes in buffers of their own, which :meth:`extend` may grow (themselves
        when they span their buffers whole; the caller hands them over)."""

    @abstractmethod
    def extend(self, other: ColumnarRows) -> None:
        """Append ``other``'s changes (of the same layout)."""

    @property
    @abstractmethod
    def nbytes(self) -> int: ...

    @abstractmethod
    def structs(self, fields: list[pa.Field]) -> tuple[pa.StructArray, pa.StructArray]:
        """The before and after images as structs of ``fields`` (no image: a null struct)."""


@dataclass(frozen=True, slots=True)
class TypedImages:
    """The typed images of some changes of one table in one schema version: ``rows`` has the
    columns ``position`` (the change's ``source.position``), ``before`` and ``after`` (structs
    of the schema's columns, null where the change has no such image)."""

    db: str
    table: str
    schema_id: str
    rows: pa.RecordBatch

    @property
    def nbytes(self) -> int:
        return int(self.rows.get_total_buffer_size())


def _via(storage: pa.DataType, target: pa.DataType) -> Callable[[Sequence[object]], pa.Array]:
    def convert(values: Sequence[object]) -> pa.Array:
        return pa.array(values, storage).cast(target)

    return convert


def _lists(element: str) -> Callable[[Sequence[object]], pa.Array]:
    """The function turning lists of ``element`` values (or None) into a list array."""
    convert = column_array(element)
    target = arrow_type(array_of(element))

    def lists(values: Sequence[object]) -> pa.Array:
        items: list[object] = []
        lengths = np.zeros(len(values) + 1, np.int32)
        for i, value in enumerate(values):
            if value is None:
                continue
            if not isinstance(value, list | tuple):
                raise TypeError(f"a value of array<{element}> is a list, not {value!r}")
            items.extend(value)
            lengths[i + 1] = len(value)
        offsets = pa.array(np.cumsum(lengths, dtype=np.int32))
        nulls = [v is None for v in values]
        mask = pa.array(nulls, pa.bool_()) if any(nulls) else None
        return pa.ListArray.from_arrays(offsets, convert(items), type=target, mask=mask)

    return lists


def column_array(logical: str) -> Callable[[Sequence[object]], pa.Array]:
    """The function turning a column's values (the module table's forms) into Arrow."""
    target = arrow_type(logical)
    element = array_element(logical)
    if element is not None:
        return _lists(element)
    if logical == "uint64":
        return _via(pa.uint64(), target)
    if pa.types.is_decimal(target):
        return _via(pa.string(), target)
    if pa.types.is_date32(target):
        return _via(pa.int32(), target)
    if pa.types.is_timestamp(target):
        return _via(pa.int64(), target)
    return lambda values: pa.array(values, target)


class StructMaker:
    """Builds struct arrays of one schema from row tuples (None: no image)."""

    __slots__ = ("fields", "columns")

    def __init__(self, schema: TableSchema) -> None:
        self.fields = [
            f.with_metadata({LOGICAL: c.logical})
            for f, c in zip(arrow_schema(schema), schema.columns, strict=True)
        ]
        self.columns = [column_array(c.logical) for c in schema.columns]

    def __call__(self, rows: Sequence[Row | None]) -> pa.StructArray:
        n = len(rows)
        present = [r is not None for r in rows]
        if not any(present):
            return _null_structs(n, self.fields)
        mask = None
        full: Sequence[Row | None] = rows
        if not all(present):
            filler: Row = (None,) * len(self.fields)
            full = [filler if r is None else r for r in rows]
            mask = pa.array([not p for p in present], pa.bool_())
        values = zip(*full, strict=True)
        arrays = [convert(v) for convert, v in zip(self.columns, values, strict=True)]
        return pa.StructArray.from_arrays(arrays, fields=self.fields, mask=mask)


@functools.lru_cache(maxsize=256)
def struct_maker(schema: TableSchema) -> StructMaker:
    """The (shared) :class:`StructMaker` of ``schema``."""
    return StructMaker(schema)


def _null_structs(n: int, fields: list[pa.Field]) -> pa.StructArray:
    arrays = [pa.nulls(n, f.type) for f in fields]
    mask = pa.array([True] * n, pa.bool_())
    return pa.StructArray.from_arrays(arrays, fields=fields, mask=mask)


def images_batch(
    positions: pa.Array, before: pa.StructArray, after: pa.StructArray
) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays(
        [positions, before, after], names=[POSITION, "before", "after"]
    )


def images_of(
    positions: pa.Array, found: Sequence[TypedImages], fields: list[pa.Field]
) -> tuple[pa.Array, pa.StructArray, pa.StructArray]:
    """For changes at ``positions``: the index of each among ``found``'s rows (null: not
    typed), and ``found``'s before and after images as structs of ``fields``, concatenated."""
    if not found:
        nothing = _null_structs(0, fields)
        return pa.nulls(len(positions), pa.int32()), nothing, nothing
    befores = [cast_struct(t.rows.column(1), fields) for t in found]
    afters = [cast_struct(t.rows.column(2), fields) for t in found]
    keys = pa.concat_arrays([t.rows.column(0) for t in found])
    index = pc.index_in(positions, value_set=keys)
    before = pa.concat_arrays(befores)
    after = pa.concat_arrays(afters)
    assert isinstance(before, pa.StructArray) and isinstance(after, pa.StructArray)
    return index, before, after


def fill_untyped(
    index: pa.Array,
    typed: tuple[pa.StructArray, pa.StructArray],
    decoded: tuple[pa.StructArray, pa.StructArray],
) -> tuple[pa.StructArray, pa.StructArray]:
    """Before and after images per change: the ``typed`` ones where ``index`` (what
    :func:`images_of` found) names one, else the next of ``decoded`` (the images of the changes
    ``index`` leaves null, in order)."""
    missing = pc.is_null(index)
    ranks = pc.subtract(pc.cumulative_sum(pc.cast(missing, pa.int64())), 1)
    where = pc.if_else(missing, pc.add(ranks, len(typed[0])), index.cast(pa.int64()))
    before = pa.concat_arrays([typed[0], decoded[0]]).take(where)
    after = pa.concat_arrays([typed[1], decoded[1]]).take(where)
    assert isinstance(before, pa.StructArray) and isinstance(after, pa.StructArray)
    return before, after


def json_values(images: pa.StructArray, names: Sequence[str]) -> list[list[object] | None]:
    """The values of the columns ``names`` of each image (None: no image) as its JSON image
    holds them (:mod:`sparkcdc.core.types`): numbers, or text for exact decimals, dates,
    date-times and base64 bytes, lists for arrays."""
    kinds = {images.type.field(i).name: images.type.field(i) for i in range(images.type.num_fields)}
    columns = [_json_column(images.field(n), _logical(kinds[n])) for n in names]
    rows = zip(*columns, strict=True)
    valid = images.is_valid().to_pylist()
    return [list(row) if ok else None for ok, row in zip(valid, rows, strict=True)]


def _logical(f: pa.Field) -> str:
    return str((f.metadata or {}).get(LOGICAL.encode(), b"").decode())


def _json_column(values: pa.Array, logical: str) -> list[object]:
    """One column's values in their JSON image form (dates and timestamps of any year)."""
    t = values.type
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return _json_lists(values, array_element(logical) or "")
    if pa.types.is_date32(t):
        return [None if d is None else date_text(d) for d in values.cast(pa.int32()).to_pylist()]
    if pa.types.is_timestamp(t):
        zone = "Z" if t.tz is not None else ""
        micros = values.cast(pa.timestamp("us", t.tz)).cast(pa.int64()).to_pylist()
        return [None if m is None else timestamp_text(m, zone) for m in micros]
    return [_json_value(v, logical) for v in values.to_pylist()]


def _json_lists(values: pa.Array, element: str) -> list[object]:
    """Lists' values in JSON image form: their elements converted as one column."""
    items = _json_column(values.flatten(), element)
    lengths = pc.fill_null(pc.list_value_length(values), 0).to_pylist()
    out: list[object] = []
    at = 0
    for ok, n in zip(values.is_valid().to_pylist(), lengths, strict=True):
        out.append(items[at : at + n] if ok else None)
        at += n
    return out


def _json_value(value: object, logical: str) -> object:
    if value is None:
        return None
    if logical == "uint64":
        return int(value)  # type: ignore[call-overload]
    if logical == "float32":
        return float(float32_text(value))  # type: ignore[arg-type]
    if isinstance(value, decimal.Decimal):
        return f"{value:f}"
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    return value


def float32_text(value: float) -> str:
    """The shortest text that reads back as the same float32 (as JSON images hold FLOATs)."""
    packed = struct.pack("<f", value)
    for digits in range(6, 10):
        text = f"{value:.{digits}g}"
        if struct.pack("<f", float(text)) == packed:
            return text
    return repr(value)
