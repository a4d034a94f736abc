"""PostgreSQL's text output forms, one value at a time: the slow path beside :mod:`.values`.

pgoutput sends every value in its type's text output form (PostgreSQL docs, chapter 8 "Data
Types", each type's "Output" paragraphs), in the walsender session's settings; sparkcdc's
replication connection sets ``DateStyle=ISO``, ``TimeZone=UTC``, ``IntervalStyle=iso_8601``,
``bytea_output=hex`` and ``extra_float_digits=3``, but every parser here also reads what the
defaults give (any UTC offset, ``postgres`` intervals, ``escape`` bytea).

Dates and timestamps keep every finite value exactly (proleptic Gregorian with astronomical
years, as both PostgreSQL and Arrow/Spark count: ``0044-03-15 BC`` is year -43, and years past
9999 stay); ``infinity``/``-infinity`` become the last/first instant Spark documents
(9999-12-31 23:59:59.999999 / 0001-01-01 00:00), as Debezium maps them to fixed sentinels: a
real value equal to a sentinel cannot be told from infinity.

Arrays (docs 8.15.6 "Array Input and Output Syntax"): ``{1,2,NULL}``, elements in double quotes
with backslash escapes when they hold the delimiter, quotes, backslashes, braces or blanks, are
empty or spell NULL; an optional ``[lo:hi]=`` prefix gives non-default bounds.
"""

from __future__ import annotations

import functools
import re

from sparkcdc.core.temporal import civil_days

DATE_MIN, DATE_MAX = -719_162, 2_932_896  # 0001-01-01 and 9999-12-31, days since 1970-01-01
_DAY = 86_400_000_000
TIMESTAMP_MIN, TIMESTAMP_MAX = DATE_MIN * _DAY, (DATE_MAX + 1) * _DAY - 1
_INT64 = 1 << 63
_DATE = re.compile(r"(\d{4,})-(\d\d)-(\d\d)( BC)?")
_TIMESTAMP = re.compile(
    r"(\d{4,})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)(?:\.(\d{1,6}))?"
    r"(?:([+-])(\d\d)(?::(\d\d))?(?::(\d\d))?)?( BC)?"
)
_INTERVAL = re.compile(
    r"(?:([+-]?\d+) years? ?)?(?:([+-]?\d+) mons? ?)?(?:([+-]?\d+) days? ?)?"
    r"(?:([+-])?(\d+):(\d\d):(\d\d)(?:\.(\d{1,6}))?)?"
)
_BYTEA_ESCAPE = re.compile(rb"\\(\\|[0-7]{3})")
ArrayItems = list["str | None | ArrayItems"]


def date_days(text: str) -> int:
    """A date's text (DateStyle ISO) -> days since 1970-01-01 (infinity: the sentinels)."""
    if text in ("infinity", "-infinity"):
        return DATE_MAX if text == "infinity" else DATE_MIN
    found = _DATE.fullmatch(text)
    if found is None:
        raise ValueError(f"{text!r} is not a date as PostgreSQL writes it with DateStyle ISO")
    year = int(found[1])
    return civil_days(1 - year if found[4] else year, int(found[2]), int(found[3]))


def timestamp_micros(text: str) -> int:
    """A timestamp's or timestamptz's text -> microseconds since 1970-01-01 (UTC: the text's
    offset, hours[:minutes[:seconds]], is applied)."""
    if text in ("infinity", "-infinity"):
        return TIMESTAMP_MAX if text == "infinity" else TIMESTAMP_MIN
    found = _TIMESTAMP.fullmatch(text)
    if found is None:
        raise ValueError(f"{text!r} is not a timestamp as PostgreSQL writes it (DateStyle ISO)")
    year = int(found[1])
    days = civil_days(1 - year if found[12] else year, int(found[2]), int(found[3]))
    seconds = days * 86400 + int(found[4]) * 3600 + int(found[5]) * 60 + int(found[6])
    if found[8]:
        offset = int(found[9]) * 3600 + int(found[10] or 0) * 60 + int(found[11] or 0)
        seconds -= offset if found[8] == "+" else -offset
    micros = seconds * 1_000_000 + int((found[7] or "").ljust(6, "0"))
    if not -_INT64 <= micros < _INT64:
        raise ValueError(f"timestamp {text!r} is out of the range of 64-bit microseconds")
    return micros


def time_text(text: str) -> str:
    """A time's text -> 'HH:MM:SS.ffffff' (six fraction digits, as the MySQL path's TIME)."""
    return text.ljust(15, "0") if "." in text else text + ".000000"


def interval_iso(text: str) -> str:
    """An interval's text -> ISO 8601 as PostgreSQL writes it with IntervalStyle iso_8601
    ('P1Y2M3DT4H5M6.5S', 'PT0S'); that text itself and the default ``postgres`` style read."""
    if text.startswith("P"):
        return text
    found = _INTERVAL.fullmatch(text)
    if found is None or not text:
        raise ValueError(f"interval {text!r} is neither ISO 8601 nor IntervalStyle postgres")
    year, month, day = (int(found[i] or 0) for i in (1, 2, 3))
    sign = -1 if found[4] == "-" else 1
    hour, minute, second = (sign * int(found[i] or 0) for i in (5, 6, 7))
    fraction = (found[8] or "").rstrip("0")
    parts = [f"{v}{u}" for v, u in ((year, "Y"), (month, "M"), (day, "D")) if v]
    clock = [f"{v}{u}" for v, u in ((hour, "H"), (minute, "M")) if v]
    if second or fraction:
        shown = f"{abs(second)}.{fraction}" if fraction else str(abs(second))
        clock.append(f"{'-' if sign < 0 else ''}{shown}S")
    if not parts and not clock:
        return "PT0S"
    return "P" + "".join(parts) + ("T" + "".join(clock) if clock else "")


def bytea_bytes(text: bytes) -> bytes:
    """A bytea's text -> its bytes: hex output (``\\x0102``) or escape output (``\\001``)."""
    if text.startswith(b"\\x"):
        return bytes.fromhex(text[2:].decode("ascii"))
    return _BYTEA_ESCAPE.sub(lambda m: b"\\" if m[1] == b"\\" else bytes([int(m[1], 8)]), text)


@functools.lru_cache(maxsize=8)
def _array_token(delimiter: str) -> re.Pattern[str]:
    d = re.escape(delimiter)
    blank = " \t\n\r\v\f"  # array_isspace: ASCII blanks only
    return re.compile(
        rf'[{blank}]*(?:"((?:[^"\\]|\\.)*)"|([{{}}])|({d})|([^{{}}"{d}{blank}]+))[{blank}]*', re.S
    )


_UNESCAPE = re.compile(r"\\(.)", re.S)


def parse_array(text: str, delimiter: str = ",") -> ArrayItems:
    """An array's text -> its elements (str, None for NULL, a list per inner dimension)."""
    if text.startswith("["):  # '[0:1]={...}': bounds other than 1.., dropped
        text = text[text.index("=") + 1 :]
    if not text.startswith("{") or not text.endswith("}"):
        raise ValueError(f"{text[:60]!r} is not an array literal")
    inner = text[1:-1]
    if not any(c in inner for c in '"{}'):  # the common case: plain elements
        return [None if e.upper() == "NULL" else e for e in inner.split(delimiter)] if inner else []
    return _parse_nested(text, delimiter)


def _parse_nested(text: str, delimiter: str) -> ArrayItems:
    token = _array_token(delimiter)
    stack: list[ArrayItems] = []
    pos, done = 0, None
    while pos < len(text) and done is None:
        found = token.match(text, pos)
        if found is None or (not stack and found[2] != "{"):
            raise ValueError(f"array literal {text[:60]!r} is malformed at character {pos}")
        pos = found.end()
        quoted, brace, plain = found[1], found[2], found[4]
        if brace == "{":
            stack.append([])
        elif brace == "}":
            closed = stack.pop()
            if stack:
                stack[-1].append(closed)
            else:
                done = closed
        elif quoted is not None:
            stack[-1].append(_UNESCAPE.sub(r"\1", quoted))
        elif plain is not None:
            stack[-1].append(None if plain.upper() == "NULL" else plain)
    if done is None or pos != len(text):
        raise ValueError(f"array literal {text[:60]!r} is malformed at character {pos}")
    return done
