"""Dates and timestamps as row images write them, for every year Arrow's types hold.

Row images write dates ``"YYYY-MM-DD"`` and timestamps ``"YYYY-MM-DDTHH:MM:SS.ffffff"`` (plus
``Z`` for ``timestamp``); a year outside 1 .. 9999 in ISO 8601's expanded form, its sign and at
least four digits (:mod:`sparkcdc.core.types`). Years are astronomical (1 BC is year 0) on the
proleptic Gregorian calendar, as in PostgreSQL, Arrow and Spark. Arrow's own parser reads the
four-digit years; :func:`expanded_days` and :func:`expanded_micros` read the others, one text at
a time (few values have them). Values are Arrow's storage: days (date32) or microseconds
(timestamp(us)) since 1970-01-01.
"""

from __future__ import annotations

import datetime as _dt
import re

DAY_MICROS = 86_400_000_000
_EPOCH_ORDINAL = _dt.date(1970, 1, 1).toordinal()
_MAX_ORDINAL = _dt.date.max.toordinal()
_INT32 = 1 << 31
_INT64 = 1 << 63
_DATE = re.compile(r"([+-]\d{4,})-(\d\d)-(\d\d)")
_TIMESTAMP = re.compile(
    r"([+-]\d{4,})-(\d\d)-(\d\d)[T ](\d\d):(\d\d):(\d\d)(?:\.(\d{1,6}))?"
    r"(Z|[+-]\d\d(?::?\d\d)?)?"
)
_MONTH_DAYS = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
EXPANDED = r"^[+-]\d"  # the regex of a text with an expanded year


def civil_days(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date (any astronomical year)."""
    year -= month <= 2
    era = year // 400
    year_of_era = year - era * 400
    day_of_year = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    days_of_era = year_of_era * 365 + year_of_era // 4 - year_of_era // 100 + day_of_year
    return era * 146_097 + days_of_era - 719_468


def civil_date(days: int) -> tuple[int, int, int]:
    """The (astronomical year, month, day) of ``days`` since 1970-01-01."""
    days += 719_468
    era = days // 146_097
    day_of_era = days - era * 146_097
    year_of_era = day_of_era - day_of_era // 1460 + day_of_era // 36524 - day_of_era // 146096
    year_of_era //= 365
    day_of_year = day_of_era - (365 * year_of_era + year_of_era // 4 - year_of_era // 100)
    month_index = (5 * day_of_year + 2) // 153
    day = day_of_year - (153 * month_index + 2) // 5 + 1
    month = month_index + 3 if month_index < 10 else month_index - 9
    return year_of_era + era * 400 + (month <= 2), month, day


def date_text(days: int) -> str:
    """The row-image text of a date: ``"2024-03-15"``, ``"-0043-03-15"``, ``"+10000-01-01"``."""
    ordinal = days + _EPOCH_ORDINAL
    if 0 < ordinal <= _MAX_ORDINAL:
        return _dt.date.fromordinal(ordinal).isoformat()
    year, month, day = civil_date(days)
    return f"{year:+05d}-{month:02d}-{day:02d}"


def timestamp_text(micros: int, zone: str = "") -> str:
    """The row-image text of a timestamp: ``"YYYY-MM-DDTHH:MM:SS.ffffff"`` + ``zone``."""
    days, rest = divmod(micros, DAY_MICROS)
    seconds, fraction = divmod(rest, 1_000_000)
    minutes, second = divmod(seconds, 60)
    hour, minute = divmod(minutes, 60)
    return f"{date_text(days)}T{hour:02d}:{minute:02d}:{second:02d}.{fraction:06d}{zone}"


def _days(year: str, month: str, day: str) -> int | None:
    """Days since 1970-01-01 of a date's parts, None for no such date."""
    y, m, d = int(year), int(month), int(day)
    if not 1 <= m <= 12:
        return None
    leap = y % 4 == 0 and (y % 100 != 0 or y % 400 == 0)
    longest = 29 if m == 2 and leap else _MONTH_DAYS[m - 1]
    return civil_days(y, m, d) if 1 <= d <= longest else None


def expanded_days(text: str) -> int | None:
    """Days since 1970-01-01 of a date with an expanded year (``"-0043-03-15"``); None for
    any other text, an invalid date, or one beyond date32 (int32 days)."""
    found = _DATE.fullmatch(text)
    days = None if found is None else _days(found[1], found[2], found[3])
    return days if days is not None and -_INT32 <= days < _INT32 else None


def expanded_micros(text: str, zoned: bool) -> int | None:
    """Microseconds since 1970-01-01 of a timestamp with an expanded year; ``zoned``: the text
    must end in a UTC offset (``Z``, ``+05:30``, applied), else it must have none, as Arrow
    reads four-digit years. None for any other text, an invalid date or time, or one beyond
    timestamp(us) (int64 microseconds)."""
    found = _TIMESTAMP.fullmatch(text)
    if found is None or (found[8] is not None) != zoned:
        return None
    days = _days(found[1], found[2], found[3])
    hour, minute, second = int(found[4]), int(found[5]), int(found[6])
    if days is None or hour > 23 or minute > 59 or second > 59:
        return None
    seconds = days * 86_400 + hour * 3600 + minute * 60 + second - _offset(found[8] or "Z")
    micros = seconds * 1_000_000 + int((found[7] or "").ljust(6, "0"))
    return micros if -_INT64 <= micros < _INT64 else None


def _offset(zone: str) -> int:
    """Seconds east of UTC of ``Z``, ``±HH``, ``±HHMM`` or ``±HH:MM``."""
    if zone == "Z":
        return 0
    digits = zone[1:].replace(":", "")
    seconds = int(digits[:2]) * 3600 + int(digits[2:] or 0) * 60
    return seconds if zone[0] == "+" else -seconds
