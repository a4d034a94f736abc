"""PostgreSQL rows as row-image JSON text, built a column at a time inside Arrow.

The log reader writes a row image from pgoutput's text values, one value at a time through
:func:`~sparkcdc.sources.postgres.pgoutput.values.json_value`, as ``json.dumps`` writes the dict
of them (compact, non-ASCII kept): :func:`image_text` and :func:`key_text` are that encoding,
the reference. A snapshot chunk comes as the same text values (COPY's text output, in the
session settings pgoutput uses), and :func:`fragments` makes the JSON of a whole column at
once, byte for byte the reference's:

=====================  ======================================================================
logical type           JSON text of a column's values
=====================  ======================================================================
int16, int32, int64    the text itself
decimal(p,s)           the text quoted; NaN null
boolean                true / false
float64                Python's repr of the double read from the text (per value)
string                 the text (time and interval normalised by ``values.convert``), quoted
                       in Arrow; values holding control characters escaped per value
binary                 base64 of the bytes (hex decoded by ``values.convert``, base64 in numpy)
date, timestamp(_ntz)  the ISO text made by Arrow from the exact typed values, for years
                       1..9999 written the plain way; any other value per value
float32, arrays        per value
=====================  ======================================================================
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from json.encoder import encode_basestring

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sparkcdc.core import types as core_types
from sparkcdc.core.json_value import JSONValue
from sparkcdc.core.schema import Column
from sparkcdc.sources.postgres.pgoutput.types import BOOLEAN
from sparkcdc.sources.postgres.pgoutput.values import convert, json_value

_BASE64 = np.frombuffer(
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", np.uint8
)
_PLAIN_DATE = r"^\d{4}-\d\d-\d\d$"
_PLAIN_TIMESTAMP = r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d{1,6})?([+-]\d\d(:\d\d)?)?$"
_PLAIN_UTC = r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d{1,6})?\+00$"
_PLAIN_NAIVE = r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d{1,6})?$"
_FIRST, _LAST = -62_135_596_800_000_000, 253_402_300_799_999_999  # 0001-01-01 .. 9999-12-31
_INTEGERS = frozenset({"int16", "int32", "int64"})


def value_text(value: JSONValue) -> str:
    """One value's JSON text in a row image (NaN and Infinity as JSON's extension tokens)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def image_text(columns: Sequence[Column], texts: Sequence[str | None]) -> str:
    """The row image ``{"name":value,...}`` of one row's text values (the reference)."""
    parts = [
        f"{value_text(c.name)}:{value_text(json_value(t, c.data_type, c.logical))}"
        for c, t in zip(columns, texts, strict=True)
    ]
    return "{" + ",".join(parts) + "}"


def key_text(columns: Sequence[Column], texts: Sequence[str | None]) -> str:
    """The key ``[v1,v2]`` of one row's key column text values (the reference)."""
    values = [json_value(t, c.data_type, c.logical) for c, t in zip(columns, texts, strict=True)]
    return "[" + ",".join(map(value_text, values)) + "]"


def object_text(names: Sequence[str], parts: Sequence[pa.Array], rows: int) -> pa.Array:
    """Row images from the columns' JSON :func:`fragments`."""
    if not parts:
        return pa.array(["{}"] * rows, pa.string())
    pieces: list[object] = []
    for i, (name, part) in enumerate(zip(names, parts, strict=True)):
        pieces += [("{" if i == 0 else ",") + value_text(name) + ":", part]
    return pc.binary_join_element_wise(*pieces, "}", "")


def array_text(parts: Sequence[pa.Array]) -> pa.Array:
    """Keys ``[v1,v2]`` from the key columns' JSON :func:`fragments`."""
    inner = [x for i, p in enumerate(parts) for x in ([p] if i == 0 else [",", p])]
    return pc.binary_join_element_wise("[", *inner, "]", "")


def fragments(texts: pa.Array, column: Column) -> pa.Array:
    """The JSON text of each of a column's text values (``null`` for NULL), as
    :func:`value_text` of :func:`json_value` writes it."""
    logical = column.logical
    if not logical:
        column.spark_type()  # the sentence for a type sparkcdc does not map
    strings = pc.cast(texts, pa.string())
    if logical in _INTEGERS:
        out = strings
    elif core_types.decimal_digits(logical) is not None:
        out = pc.if_else(pc.equal(strings, "NaN"), pa.scalar(None, pa.string()), _quoted(strings))
    elif logical == BOOLEAN:
        out = pc.if_else(pc.equal(strings, "t"), "true", "false")
    elif logical == "float64":
        numbers = pc.cast(strings, pa.float64()).to_pylist()
        out = pa.array([None if v is None else _float(v) for v in numbers], pa.string())
    elif logical == "binary":
        out = _quoted(base64_text(convert(strings, column.data_type, logical)))
    elif logical == "date":
        return _per_value(_quoted(strings), unusual(strings, None), strings, column)
    elif logical in ("timestamp", "timestamp_ntz"):
        return _timestamps(strings, column)
    elif logical == "string":
        return _strings(convert(strings, column.data_type, logical))
    else:  # float32, arrays
        return _per_value(strings, pc.is_valid(strings), strings, column)
    return pc.fill_null(out, "null")


def _float(value: float) -> str:
    if math.isfinite(value):
        return repr(value)
    return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")


def _quoted(strings: pa.Array) -> pa.Array:
    return pc.binary_join_element_wise('"', strings, '"', "")


def _strings(strings: pa.Array) -> pa.Array:
    """JSON string literals: backslash and quote escaped in Arrow, values holding control
    characters escaped one by one (``json.dumps`` writes ``\\n``, ``\\u001f``...)."""
    escaped = pc.replace_substring(strings, "\\", "\\\\")
    escaped = _quoted(pc.replace_substring(escaped, '"', '\\"'))
    controls = pc.fill_null(pc.match_substring_regex(strings, "[\\x00-\\x1f]"), False)
    if pc.any(controls).as_py():
        slow = [encode_basestring(v) for v in strings.filter(controls).to_pylist()]
        escaped = pc.replace_with_mask(escaped, controls, pa.array(slow, pa.string()))
    return pc.fill_null(escaped, "null")


def _timestamps(strings: pa.Array, column: Column) -> pa.Array:
    """``YYYY-MM-DDTHH:MM:SS.ffffff[Z]`` cut from the text where it has the plain form
    (``2024-02-29 12:34:56.5+00``: a timestamptz is written in the session's UTC), per value
    elsewhere."""
    utc = column.logical == "timestamp"
    plain = pc.match_substring_regex(strings, _PLAIN_UTC if utc else _PLAIN_NAIVE)
    body = pc.utf8_slice_codeunits(strings, 0, -3) if utc else strings
    whole = pc.if_else(
        pc.equal(pc.utf8_length(body), 19),
        pc.binary_join_element_wise(body, ".000000", ""),
        pc.utf8_rpad(body, width=26, padding="0"),
    )
    iso = pc.utf8_replace_slice(whole, 10, 11, "T")
    out = pc.binary_join_element_wise('"', iso, 'Z"' if utc else '"', "")
    return _per_value(out, pc.invert(plain), strings, column)


def unusual(strings: pa.Array, timestamps: pa.Array | None) -> pa.Array:
    """Which date texts (``timestamps`` None) or timestamp texts (with their typed values) are
    not written the plain way: BC, years past 9999, infinities, offsets with seconds, or a
    UTC value outside years 1..9999. Their JSON is made per value."""
    if timestamps is None:
        return pc.fill_null(pc.invert(pc.match_substring_regex(strings, _PLAIN_DATE)), False)
    micros = timestamps.cast(pa.int64())
    odd = pc.or_(
        pc.invert(pc.match_substring_regex(strings, _PLAIN_TIMESTAMP)),
        pc.or_(pc.less(micros, _FIRST), pc.greater(micros, _LAST)),
    )
    return pc.fill_null(odd, False)


def _per_value(out: pa.Array, odd: pa.Array, strings: pa.Array, column: Column) -> pa.Array:
    """``out`` with the ``odd`` values' JSON made one by one (:func:`json_value`)."""
    odd = pc.and_(pc.fill_null(odd, False), pc.is_valid(strings))
    if pc.any(odd).as_py():
        slow = [
            value_text(json_value(t, column.data_type, column.logical))
            for t in strings.filter(odd).to_pylist()
        ]
        out = pc.replace_with_mask(out, odd, pa.array(slow, pa.string()))
    return pc.fill_null(out, "null")


def base64_text(values: pa.Array) -> pa.Array:
    """Base64 (RFC 4648, padded) of each binary value, NULL kept: Arrow pads every value with
    zero bytes to whole 3-byte groups, numpy looks each group up as 4 characters, and the
    characters standing for pad bytes become '='."""
    lengths = pc.fill_null(pc.binary_length(values), 0).to_numpy(zero_copy_only=False)
    rest = lengths % 3
    pads = pa.array([b"", b"\0\0", b"\0"], pa.binary()).take(pa.array(rest))
    padded = pc.binary_join_element_wise(pc.fill_null(values, b""), pads, b"")
    padded = pa.concat_arrays([padded]).cast(pa.large_binary())
    n = len(padded)
    offsets = np.frombuffer(padded.buffers()[1], np.int64)[padded.offset : padded.offset + n + 1]
    data = padded.buffers()[2]
    raw = np.frombuffer(data, np.uint8) if data else np.zeros(0, np.uint8)
    triples = raw[offsets[0] : offsets[-1]].reshape(-1, 3)
    first, second, third = triples[:, 0], triples[:, 1], triples[:, 2]
    quads = np.empty((len(triples), 4), np.uint8)
    quads[:, 0] = _BASE64[first >> 2]
    quads[:, 1] = _BASE64[(first & 3) << 4 | second >> 4]
    quads[:, 2] = _BASE64[(second & 15) << 2 | third >> 6]
    quads[:, 3] = _BASE64[third & 63]
    chars = quads.reshape(-1)
    out_offsets = (offsets - offsets[0]) // 3 * 4
    ends = out_offsets[1:]
    chars[ends[rest > 0] - 1] = ord("=")
    chars[ends[rest == 1] - 2] = ord("=")
    text = pa.Array.from_buffers(
        pa.large_string(), n, [None, pa.py_buffer(out_offsets), pa.py_buffer(chars)]
    ).cast(pa.string())
    if values.null_count == 0:
        return text
    return pc.if_else(pc.is_valid(values), text, pa.scalar(None, pa.string()))
