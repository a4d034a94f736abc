"""Delta file statistics of the data files the sink writes itself: row count, null counts, and
bounds (``minValues``/``maxValues``) of every column a reader may skip files by.

Bounds must cover every column of a type that has them or none: delta-rs's dataset reads a
column missing from ``minValues`` as a file of nulls only, so ``owner = 'dan'`` skipped every
file whose statistics named integer columns alone. The bounds follow delta-rs's own writer:
strings as their first :data:`STRING_PREFIX` characters (the maximum then followed by the
largest code point, so it stays a bound), timestamps in milliseconds (a maximum rounded up),
decimals exact when whole, else as the nearest floats outside them. Binary, list and struct
columns have none, as in delta-rs. Where a value has no bound JSON can hold (infinity, a date
beyond year 9999), the file gets no bounds at all: a reader then reads it.
"""

from __future__ import annotations

import datetime
import decimal
import json
import math
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from sparkcdc.core.json_value import JSONObject, JSONValue

STRING_PREFIX = 64  # characters of a string bound (delta-rs's)
_LAST_CODE_POINT = "\U0010ffff"


class _NoBound(Exception):
    """A value no JSON bound holds (module docstring)."""


def stats_text(stats: JSONObject) -> str:
    """``stats`` as an add action's ``stats`` text: UTF-8 as it is (delta-rs reads a character
    outside the Basic Multilingual Plane escaped as two surrogates as no match)."""
    return json.dumps(stats, separators=(",", ":"), ensure_ascii=False)


def file_stats(table: pa.Table) -> JSONObject:
    """The statistics of ``table``'s rows as one data file (module docstring); top-level
    columns only."""
    nulls: JSONObject = {}
    stats: JSONObject = {"numRecords": table.num_rows, "nullCount": nulls}
    lows: JSONObject = {}
    highs: JSONObject = {}
    bounded = True
    for f, column in zip(table.schema, table.columns, strict=True):
        if pa.types.is_struct(f.type):
            continue
        nulls[f.name] = column.null_count
        if column.null_count == len(column) or not bounded:
            continue
        try:
            found = _bounds(f.type, column)
        except (_NoBound, OverflowError, ValueError, pa.ArrowInvalid):
            bounded = False
            continue
        if found is not None:
            lows[f.name], highs[f.name] = found
    if bounded and lows:
        stats["minValues"], stats["maxValues"] = lows, highs
    return stats


def _bounds(kind: pa.DataType, column: pa.ChunkedArray) -> tuple[JSONValue, JSONValue] | None:
    """The lower and upper bound of ``column``'s values (some not null); None for a type
    without bounds."""
    if pa.types.is_integer(kind) or pa.types.is_boolean(kind):
        low, high = _min_max(column)
        return low, high
    if pa.types.is_floating(kind):
        return _float_bounds(column)
    if pa.types.is_decimal(kind):
        low, high = _min_max(column)
        return _decimal_bound(low, -1), _decimal_bound(high, 1)
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        low, high = _min_max(column)
        return low[:STRING_PREFIX], _string_upper(high)
    if pa.types.is_date32(kind):
        low, high = _min_max(column)
        return low.isoformat(), high.isoformat()
    if pa.types.is_timestamp(kind):
        return _timestamp_bounds(kind, column)
    return None


def _min_max(column: pa.ChunkedArray) -> tuple[Any, Any]:
    """The least and greatest value (nulls left out), as Python values of the column's type."""
    bounds = pc.min_max(column)
    return bounds["min"].as_py(), bounds["max"].as_py()


def _float_bounds(column: pa.ChunkedArray) -> tuple[JSONValue, JSONValue]:
    """NaN bounds nothing (a comparison with it is false); infinities have no JSON."""
    numbers = pc.filter(column, pc.invert(pc.is_nan(column)))
    if numbers.null_count == len(numbers):
        raise _NoBound
    low, high = _min_max(numbers)
    assert isinstance(low, float) and isinstance(high, float)
    if math.isinf(low) or math.isinf(high):
        raise _NoBound
    return low, high


def _decimal_bound(value: object, direction: int) -> JSONValue:
    """A whole decimal as its integer; any other as the nearest float past it."""
    assert isinstance(value, decimal.Decimal)
    if value == value.to_integral_value():
        return int(value)
    near = float(value)
    if (direction < 0 and decimal.Decimal(near) > value) or (
        direction > 0 and decimal.Decimal(near) < value
    ):
        near = math.nextafter(near, direction * math.inf)
    return near


def _string_upper(value: object) -> str:
    assert isinstance(value, str)
    if len(value) <= STRING_PREFIX:
        return value
    return value[:STRING_PREFIX] + _LAST_CODE_POINT


def _timestamp_bounds(kind: pa.TimestampType, column: pa.ChunkedArray) -> tuple[str, str]:
    """Milliseconds, as delta-rs writes them (``2020-01-01T00:00:00.123Z`` with a zone, else
    ``2020-01-01 00:00:00.123``): the minimum cut to the millisecond, the maximum rounded up to
    it (delta-rs's allowance for a cut maximum misses values past year 6536), except where that
    passes year 9999: cut there, which delta-rs reads right."""
    low, high = _min_max(column)
    assert isinstance(low, datetime.datetime) and isinstance(high, datetime.datetime)
    separator, zone = (" ", "") if kind.tz is None else ("T", "Z")
    return _text(low, separator, zone), _text(_up_to_millisecond(high), separator, zone)


def _up_to_millisecond(moment: datetime.datetime) -> datetime.datetime:
    rest = moment.microsecond % 1000
    if not rest:
        return moment
    try:
        return moment + datetime.timedelta(microseconds=1000 - rest)
    except OverflowError:
        return moment


def _text(moment: datetime.datetime, separator: str, zone: str) -> str:
    if moment.year > 9999:
        raise _NoBound
    m = moment
    return (f"{m.year:04d}-{m.month:02d}-{m.day:02d}{separator}{m.hour:02d}:{m.minute:02d}:"
            f"{m.second:02d}.{m.microsecond // 1000:03d}{zone}")  # fmt: skip
