"""Binlog values in their typed form (:mod:`sparkcdc.core.images`), and keys back to JSON text.

The typed row decoder gives dates as days and date-times as microseconds since 1970-01-01;
zero and impossible dates (``2024-02-30`` with ALLOW_INVALID_DATES) become None, as their JSON
images become null in the sink. The key of a typed change is still JSON text, the same text the
JSON decoder writes (:func:`key_text`), since the hand-off filter and the incremental snapshots
compare keys as text with the snapshot's.
"""

from __future__ import annotations

import base64
import datetime as _dt
from collections.abc import Callable

from sparkcdc.core.schema import Column
from sparkcdc.core.types import decimal_digits
from sparkcdc.sources.mysql.binlog import values as vals

_EPOCH_ORDINAL = _dt.date(1970, 1, 1).toordinal()
_MICROS = 1_000_000


def days(year: int, month: int, day: int) -> int | None:
    """Days since 1970-01-01 of a date, None if it has a zero part or does not exist."""
    if not (year and month and day):
        return None
    try:
        return _dt.date(year, month, day).toordinal() - _EPOCH_ORDINAL
    except ValueError:
        return None


def date_days(packed: int) -> int | None:
    """DATE (3 bytes as an integer) -> days."""
    return days(packed >> 9, packed >> 5 & 15, packed & 31)


def ymd_days(ymd: int) -> int | None:
    """DATETIME2's date bits (``(year*13 + month) << 5 | day``) -> days."""
    ym = ymd >> 5
    return days(ym // 13, ym % 13, ymd & 31)


def hms_seconds(hms: int) -> int:
    """DATETIME2's time bits (``hour << 12 | minute << 6 | second``) -> seconds of the day."""
    return (hms >> 12) * 3600 + (hms >> 6 & 63) * 60 + (hms & 63)


def old_datetime_micros(packed: int) -> int | None:
    """Pre-5.6 DATETIME (8-byte integer YYYYMMDDhhmmss) -> microseconds."""
    d, t = divmod(packed, 1000000)
    year, md = divmod(d, 10000)
    day_number = days(year, *divmod(md, 100))
    if day_number is None:
        return None
    h, ms = divmod(t, 10000)
    return (day_number * 86400 + h * 3600 + (ms // 100) * 60 + ms % 100) * _MICROS


def unquoted(text: str) -> str:
    """A JSON string literal the JSON helpers make for TIME values, without its quotes."""
    return text[1:-1]


def _timestamp_text(micros: int, zone: str) -> str:
    seconds, us = divmod(micros, _MICROS)
    day, rest = divmod(seconds, 86400)
    return f'"{vals.epoch_day_text(day)}T{vals.day_seconds_text(rest)}.{us:06d}{zone}"'


def key_text(column: Column) -> Callable[[object], str] | None:
    """How the typed value of a key column becomes the JSON decoder's text for it; None when
    ``str`` of the value is that text (integers and doubles of a NOT NULL column)."""
    logical = column.logical
    text: Callable[[object], str]
    if logical in ("int8", "int16", "int32", "int64", "uint64", "float64"):
        if not column.nullable:
            return None
        text = str
    elif logical == "float32":
        text = vals.float32_text  # type: ignore[assignment]
    elif decimal_digits(logical) is not None:
        text = lambda v: f'"{v}"'  # noqa: E731
    elif logical == "binary":
        text = lambda v: f'"{base64.b64encode(v).decode("ascii")}"'  # type: ignore[arg-type]  # noqa: E731
    elif logical == "date":
        text = lambda v: f'"{vals.epoch_day_text(v)}"'  # type: ignore[arg-type]  # noqa: E731
    elif logical in ("timestamp", "timestamp_ntz"):
        zone = "Z" if logical == "timestamp" else ""
        text = lambda v: _timestamp_text(v, zone)  # type: ignore[arg-type]  # noqa: E731
    else:
        text = vals.json_str  # type: ignore[assignment]
    return lambda v: "null" if v is None else text(v)
