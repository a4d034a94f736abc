"""Binlog value formats and their JSON text, for the types the row decoder leaves to helpers.

The row decoder (:mod:`sparkcdc.sources.mysql.binlog.rowcode`) inlines the common cases; this module
holds the layout facts and the slower, rarer conversions. Binlog facts relied on:

- DATE: 3 bytes little-endian, ``day | month << 5 | year << 9``.
- DATETIME2: 5 bytes big-endian, ``0x8000000000 +`` ((year*13 + month) << 22 | day << 17 |
  hour << 12 | minute << 6 | second), then ``(fsp + 1) // 2`` big-endian fraction bytes.
- TIMESTAMP2: 4 bytes big-endian seconds since the epoch (UTC), then the fraction bytes.
- TIME2: 3 bytes big-endian, ``0x800000 +`` (hour << 12 | minute << 6 | second), sign in the
  offset, then the fraction bytes (two's complement with the integer part when negative).
- NEWDECIMAL: groups of 9 digits in 4 big-endian bytes, a shorter leading/trailing group for
  the rest; the top bit is set for positive numbers and all bits are inverted for negative ones.
- Zero dates (any zero year/month/day part in DATE/DATETIME, 0 in TIMESTAMP) become null,
  because they are not dates Spark could hold.
"""

from __future__ import annotations

import codecs
import datetime as _dt
import functools
from json.encoder import encode_basestring

from sparkcdc.core.images import float32_text as float32_text  # FLOAT's JSON text

json_str = encode_basestring  # str -> JSON string literal (C-accelerated, no ASCII escaping)

DIGITS3 = tuple(f"{i:03d}" for i in range(1000))  # 0..999 as three digits
MAX_TABLE_SCALE = 4  # DECIMAL scales whose fractions are looked up in a table of digit strings
FRACTION_BYTES = (0, 1, 1, 2, 2, 3, 3)
FRACTION_SCALE = (1, 10000, 10000, 100, 100, 1, 1)
DIG2BYTES = (0, 1, 1, 2, 2, 3, 3, 4, 4, 4)


def _latin1_fallback(err: UnicodeError) -> tuple[str, int]:
    """MySQL's latin1 is cp1252 whose five holes map to the same-numbered control characters."""
    assert isinstance(err, UnicodeDecodeError)
    return err.object[err.start : err.end].decode("latin-1"), err.end


codecs.register_error("sparkcdc-latin1", _latin1_fallback)

# MySQL charset name -> (Python codec, error handler)
_CHARSETS = {
    "utf8mb4": "utf-8",
    "utf8mb3": "utf-8",
    "utf8": "utf-8",
    "ascii": "ascii",
    "ucs2": "utf-16-be",
    "utf16": "utf-16-be",
    "utf16le": "utf-16-le",
    "utf32": "utf-32-be",
    "latin2": "iso8859-2",
    "latin5": "iso8859-9",
    "latin7": "iso8859-13",
    "greek": "iso8859-7",
    "hebrew": "iso8859-8",
    "cp1250": "cp1250",
    "cp1251": "cp1251",
    "cp1256": "cp1256",
    "cp1257": "cp1257",
    "cp850": "cp850",
    "cp852": "cp852",
    "cp866": "cp866",
    "koi8r": "koi8-r",
    "koi8u": "koi8-u",
    "macroman": "mac-roman",
    "macce": "mac-latin2",
    "sjis": "shift_jis",
    "cp932": "cp932",
    "ujis": "euc_jp",
    "eucjpms": "euc_jp",
    "euckr": "euc_kr",
    "gbk": "gbk",
    "gb2312": "gb2312",
    "big5": "big5",
    "tis620": "tis-620",
    "armscii8": "latin-1",
    "dec8": "latin-1",
    "swe7": "latin-1",
    "hp8": "latin-1",
    "keybcs2": "latin-1",
    "geostd8": "latin-1",
}


def python_codec(charset: str | None) -> tuple[str, str]:
    """The Python codec and error handler that decode a MySQL charset's bytes."""
    name = (charset or "utf8mb4").lower()
    if name == "latin1":
        return "cp1252", "sparkcdc-latin1"
    return _CHARSETS.get(name, "utf-8"), "replace"


def date_text(packed: int) -> str:
    """DATE (3 bytes as an integer) -> '"YYYY-MM-DD"' or 'null' for zero dates."""
    day, month, year = packed & 31, packed >> 5 & 15, packed >> 9
    if not (day and month and year):
        return "null"
    return f'"{year:04d}-{month:02d}-{day:02d}"'


def ymd_text(ymd: int) -> str:
    """DATETIME2's date bits (``(year*13 + month) << 5 | day``) -> 'YYYY-MM-DD', '' if zero."""
    ym = ymd >> 5
    year, month, day = ym // 13, ym % 13, ymd & 31
    if not (day and month and year):
        return ""
    return f"{year:04d}-{month:02d}-{day:02d}"


def hms_text(hms: int) -> str:
    """DATETIME2's time bits (``hour << 12 | minute << 6 | second``) -> 'HH:MM:SS'."""
    return f"{hms >> 12:02d}:{hms >> 6 & 63:02d}:{hms & 63:02d}"


_EPOCH_ORDINAL = _dt.date(1970, 1, 1).toordinal()


def epoch_day_text(days: int) -> str:
    """Days since 1970-01-01 -> 'YYYY-MM-DD'."""
    return _dt.date.fromordinal(_EPOCH_ORDINAL + days).isoformat()


def day_seconds_text(seconds: int) -> str:
    """Seconds since midnight -> 'HH:MM:SS'."""
    return f"{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


def timestamp_text(seconds: int) -> str:
    """Seconds since the epoch -> 'YYYY-MM-DDTHH:MM:SS' (UTC)."""
    days, rem = divmod(seconds, 86400)
    return f"{epoch_day_text(days)}T{day_seconds_text(rem)}"


def fraction(raw: bytes, fsp: int) -> int:
    """The big-endian fraction bytes of a temporal value, in microseconds."""
    return int.from_bytes(raw, "big") * FRACTION_SCALE[fsp] if fsp else 0


def time2_text(raw: bytes, fsp: int) -> str:
    """TIME2 -> '"[-]HH:MM:SS.ffffff"' (hours 2 or 3 digits, always 6 fraction digits)."""
    nfrac = FRACTION_BYTES[fsp]
    if nfrac == 3:
        packed = int.from_bytes(raw[:6], "big") - 0x800000000000
    else:
        intpart = int.from_bytes(raw[:3], "big") - 0x800000
        frac = int.from_bytes(raw[3 : 3 + nfrac], "big") if nfrac else 0
        if intpart < 0 and frac:
            intpart += 1
            frac -= 1 << (8 * nfrac)
        packed = (intpart << 24) + frac * FRACTION_SCALE[fsp]
    sign = "-" if packed < 0 else ""
    packed = abs(packed)
    hms, micros = packed >> 24, packed & 0xFFFFFF
    hour, minute, second = hms >> 12 & 0x3FF, hms >> 6 & 63, hms & 63
    return f'"{sign}{hour:02d}:{minute:02d}:{second:02d}.{micros:06d}"'


def old_datetime_text(packed: int) -> str:
    """Pre-5.6 DATETIME (8-byte integer YYYYMMDDhhmmss) -> JSON text."""
    d, t = divmod(packed, 1000000)
    year, md = divmod(d, 10000)
    month, day = divmod(md, 100)
    if not (year and month and day):
        return "null"
    h, ms = divmod(t, 10000)
    return f'"{year:04d}-{month:02d}-{day:02d}T{h:02d}:{ms // 100:02d}:{ms % 100:02d}.000000"'


def old_time_text(packed: int) -> str:
    """Pre-5.6 TIME (3-byte signed integer HHMMSS) -> JSON text."""
    sign = "-" if packed < 0 else ""
    h, ms = divmod(abs(packed), 10000)
    return f'"{sign}{h:02d}:{ms // 100:02d}:{ms % 100:02d}.000000"'


def set_text(mask: int, members: tuple[str, ...]) -> str:
    """SET bitmask -> JSON string of the member names joined by ','."""
    return json_str(",".join(m for i, m in enumerate(members) if mask >> i & 1))


class DecimalLayout:
    """Where the digit groups of a NEWDECIMAL(precision, scale) sit in its big-endian bytes."""

    def __init__(self, precision: int, scale: int) -> None:
        intg = precision - scale
        self.precision, self.scale = precision, scale
        self.int_full, self.int_lead = divmod(intg, 9)
        self.frac_full, self.frac_tail = divmod(scale, 9)
        self.size = (
            DIG2BYTES[self.int_lead]
            + 4 * self.int_full
            + 4 * self.frac_full
            + DIG2BYTES[self.frac_tail]
        )

    def expressions(self, var: str) -> tuple[str, str]:
        """Python expressions for the integer part and the fraction (as an integer) of the
        unsigned magnitude held in ``var`` (the bytes as one big-endian integer, sign removed).
        """
        shift = 0
        frac_terms: list[str] = []
        digits = 0
        if self.frac_tail:
            width = 8 * DIG2BYTES[self.frac_tail]
            frac_terms.append(f"({var} & {(1 << width) - 1})")
            shift, digits = width, self.frac_tail
        for _ in range(self.frac_full):
            frac_terms.append(f"({var} >> {shift} & 4294967295){_times(digits)}")
            shift += 32
            digits += 9
        int_terms: list[str] = []
        digits = 0
        for _ in range(self.int_full):
            int_terms.append(f"({var} >> {shift} & 4294967295){_times(digits)}")
            shift += 32
            digits += 9
        if self.int_lead:
            int_terms.append(f"({var} >> {shift}){_times(digits)}")
        return " + ".join(int_terms) or "0", " + ".join(frac_terms) or "0"


@functools.cache
def fraction_digits(scale: int) -> tuple[str, ...]:
    """Every fraction of a DECIMAL with ``scale`` <= MAX_TABLE_SCALE digits, zero-padded."""
    return tuple(f"{i:0{scale}d}" for i in range(10**scale))


def _times(digits: int) -> str:
    return f" * {10**digits}" if digits else ""
