"""One column of pgoutput text values -> a ``pyarrow.Array`` of the column's logical type.

The fast path keeps the values in Arrow: the texts become one binary array, and
``pyarrow.compute`` casts it (string -> int / float / decimal128 / date32 / timestamp parse
exactly: no float detour for numerics, microseconds kept, UTC offsets applied). What Arrow's
parser does not read (BC, years past 9999, ``infinity``, offsets with seconds, bytea in escape
form, intervals in the postgres style) goes value by value through :mod:`.literals`, only for
those values. Arrays are parsed per value and their elements converted as one column.

:func:`json_value` is the slow path: one value in the form its row-image JSON holds it
(:mod:`sparkcdc.core.types`; ``boolean`` true/false, arrays JSON arrays, float NaN/Infinity
as JSON's NaN/Infinity tokens, which Arrow's and Spark's JSON readers accept).

Values are ``bytes`` (text as sent) or None; a caller resolves :data:`.messages.UNCHANGED`
(from the old row) before converting a column.
"""

from __future__ import annotations

import base64
import binascii
import datetime as _dt
from collections.abc import Callable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sparkcdc.core import temporal
from sparkcdc.core import types as core_types
from sparkcdc.core.images import float32_text
from sparkcdc.core.json_value import JSONValue
from sparkcdc.core.schema import Column
from sparkcdc.sources.postgres.pgoutput import literals
from sparkcdc.sources.postgres.pgoutput.types import BOOLEAN, array_element

Convert = Callable[[pa.Array], pa.Array]
_DATE_FORM = r"^\d{4}-\d\d-\d\d$"
_TIMESTAMP_FORM = r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d{1,6})?([+-]\d\d(:\d\d)?)?$"


def arrow_type(logical: str) -> pa.DataType:
    """The Arrow type of a logical type, arrays (:data:`.types.NEEDED_LOGICAL_TYPES`)
    included."""
    element = array_element(logical)
    return pa.list_(arrow_type(element)) if element else core_types.arrow_type(logical)


def to_arrow(texts: Sequence[bytes | None], column: Column) -> pa.Array:
    """The values of ``column`` (texts as sent, None for NULL) as one Arrow array."""
    return convert(pa.array(texts, pa.binary()), column.data_type, column.logical)


def convert(texts: pa.Array, data_type: str, logical: str) -> pa.Array:
    """Text values (a binary or string array) of a column of PostgreSQL type ``data_type``
    (typname) in the Arrow type of ``logical``."""
    element = array_element(logical)
    if element is not None:
        return _array(texts, data_type.removeprefix("_"), element)
    if data_type in _BY_TYPE:
        return _BY_TYPE[data_type](texts)
    if logical in _BY_LOGICAL:
        return _BY_LOGICAL[logical](texts)
    if core_types.decimal_digits(logical) is not None:
        strings = pc.cast(texts, pa.string())
        not_nan = pc.if_else(pc.equal(strings, "NaN"), pa.scalar(None, pa.string()), strings)
        return pc.cast(not_nan, arrow_type(logical))  # numeric(p,s)'s NaN: null
    return pc.cast(texts, arrow_type(logical))  # ints, floats, text


def _mixed(texts: pa.Array, target: pa.DataType, form: str, slow: Callable[[str], int]) -> pa.Array:
    """``texts`` cast to ``target`` by Arrow where they match the regex ``form``, by ``slow``
    (text -> Arrow's integer storage) one by one where they do not."""
    strings = pc.cast(texts, pa.string())
    try:
        return pc.cast(strings, target)
    except pa.ArrowInvalid:
        pass
    usual = pc.fill_null(pc.match_substring_regex(strings, form), True)
    fast = pc.cast(pc.if_else(usual, strings, pa.scalar(None, pa.string())), target)
    odd = pc.invert(usual)
    storage = pa.int32() if pa.types.is_date32(target) else pa.int64()
    others = [slow(t) for t in strings.filter(odd).to_pylist()]
    return pc.replace_with_mask(fast, odd, pa.array(others, storage).cast(target))


def _date(texts: pa.Array) -> pa.Array:
    return _mixed(texts, pa.date32(), _DATE_FORM, literals.date_days)


def _timestamp(target: pa.DataType) -> Convert:
    return lambda texts: _mixed(texts, target, _TIMESTAMP_FORM, literals.timestamp_micros)


def _boolean(texts: pa.Array) -> pa.Array:
    return pc.equal(pc.cast(texts, pa.binary()), pa.scalar(b"t", pa.binary()))


def _bytea(texts: pa.Array) -> pa.Array:
    """Hex output (``\\x0a0b``) decoded for the whole column at once: Arrow slices the prefixes
    off into one buffer of digits, which one ``a2b_hex`` call decodes."""
    binary = pc.cast(texts, pa.binary())
    if pc.all(pc.starts_with(binary, pattern="\\x")).as_py() is False:
        return _per_value(binary, pa.binary(), literals.bytea_bytes)  # escape output
    longest = pc.max(pc.binary_length(binary)).as_py() or 2  # no stop: pyarrow overflows
    digits = pa.concat_arrays([pc.binary_slice(binary, 2, longest)])
    n = len(digits)
    offsets = np.frombuffer(digits.buffers()[1], np.int32, n + 1, 4 * digits.offset)
    if (np.diff(offsets) % 2).any():
        raise ValueError("a bytea value's hex output has an odd number of digits")
    data = digits.buffers()[2]
    try:
        out = binascii.a2b_hex(memoryview(data)[offsets[0] : offsets[-1]] if data else b"")
    except binascii.Error as e:
        raise ValueError(f"a bytea value's hex output is not hex digits ({e})") from e
    nulls = None if digits.null_count == 0 else digits.is_valid().buffers()[1]
    buffers = [
        nulls,
        pa.py_buffer(((offsets - offsets[0]) // 2).astype(np.int32)),
        pa.py_buffer(out),
    ]
    return pa.Array.from_buffers(pa.binary(), n, buffers, digits.null_count)


def _per_value(texts: pa.Array, target: pa.DataType, fn: Callable[[bytes], object]) -> pa.Array:
    values = pc.cast(texts, pa.binary()).to_pylist()
    return pa.array([None if v is None else fn(v) for v in values], target)


def _time(texts: pa.Array) -> pa.Array:
    """'HH:MM:SS[.f]' -> 'HH:MM:SS.ffffff' (the MySQL path's TIME text)."""
    strings = pc.cast(texts, pa.string())
    padded = pc.utf8_rpad(strings, width=15, padding="0")
    whole = pc.binary_join_element_wise(strings, ".000000", "")
    return pc.if_else(pc.match_substring(strings, "."), padded, whole)


def _interval(texts: pa.Array) -> pa.Array:
    strings = pc.cast(texts, pa.string())
    if pc.all(pc.starts_with(strings, "P")).as_py() is not False:
        return strings
    return pa.array([None if t is None else literals.interval_iso(t) for t in strings.to_pylist()])


def _array(texts: pa.Array, element_type: str, element: str) -> pa.Array:
    """Array texts -> a list array; elements converted as one column. A value of more than
    one dimension stops the conversion (Spark's array type here has one)."""
    delimiter = ";" if element_type == "box" else ","
    offsets, items, nulls = [0], [], []
    for text in pc.cast(texts, pa.string()).to_pylist():
        nulls.append(text is None)
        if text is not None:
            parsed = literals.parse_array(text, delimiter)
            if any(isinstance(e, list) for e in parsed):
                raise ValueError(f"array {text[:60]!r} has more than one dimension")
            items.extend(parsed)
        offsets.append(len(items))
    values = convert(pa.array(items, pa.string()), element_type, element)
    mask = pa.array(nulls, pa.bool_()) if any(nulls) else None
    return pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), values, mask=mask)


_BY_TYPE: dict[str, Convert] = {"time": _time, "interval": _interval}
_BY_LOGICAL: dict[str, Convert] = {
    BOOLEAN: _boolean,
    "binary": _bytea,
    "date": _date,
    "timestamp": _timestamp(pa.timestamp("us", tz="UTC")),
    "timestamp_ntz": _timestamp(pa.timestamp("us")),
}


def _json_timestamp(text: str, zone: str) -> str:
    """'YYYY-MM-DDTHH:MM:SS.ffffff[Z]': Python's parser for years 1..9999, else ours."""
    try:
        t = _dt.datetime.fromisoformat(text)
        offset = t.utcoffset()
        if offset:
            t -= offset
    except (ValueError, OverflowError):  # BC, years past 9999, infinity
        return temporal.timestamp_text(literals.timestamp_micros(text), zone)
    clock = f"{t.hour:02d}:{t.minute:02d}:{t.second:02d}.{t.microsecond:06d}"
    return f"{t.year:04d}-{t.month:02d}-{t.day:02d}T{clock}{zone}"


def json_value(text: str | None, data_type: str, logical: str) -> JSONValue:
    """One value's text in its row-image JSON form (the slow path)."""
    if text is None:
        return None
    element = array_element(logical)
    if element is not None:
        items = literals.parse_array(text, ";" if data_type == "_box" else ",")
        if any(isinstance(e, list) for e in items):
            raise ValueError(f"array {text[:60]!r} has more than one dimension")
        base = data_type.removeprefix("_")
        return [json_value(e, base, element) for e in items]  # type: ignore[arg-type]
    if logical in ("int8", "int16", "int32", "int64"):
        return int(text)
    if logical == "float32":  # the shortest text of the float32 (any extra_float_digits)
        return float(float32_text(float(np.float32(text))))
    if logical == "float64":
        return float(text)  # 'NaN', 'Infinity', '-Infinity' read as such
    if logical == BOOLEAN:
        return text == "t"
    if logical == "binary":
        return base64.b64encode(literals.bytea_bytes(text.encode())).decode("ascii")
    if logical == "date":
        return temporal.date_text(literals.date_days(text))
    if logical in ("timestamp", "timestamp_ntz"):
        return _json_timestamp(text, "Z" if logical == "timestamp" else "")
    if core_types.decimal_digits(logical) is not None:
        return None if text == "NaN" else text
    if data_type == "time":
        return literals.time_text(text)
    return literals.interval_iso(text) if data_type == "interval" else text
