"""Per-column code fragments for the generated row decoder.

A rows event stores each present, non-NULL column value back to back in the column's binlog
encoding (:mod:`sparkcdc.sources.mysql.binlog.values` lists the layouts). For every column this
module produces a :class:`ColumnCode`: either a fixed-width ``struct`` format plus the statements
that turn the unpacked fields into the value's JSON text, or statements that read a variable-width
value at ``p`` and advance ``p``. :mod:`sparkcdc.sources.mysql.binlog.rows` stitches the fragments
into one Python function per table layout, so decoding a row costs no per-value dispatch.

Every fragment assigns its JSON text (or an ``int``/``float`` whose ``str`` is the JSON text)
to the target variable it is given; with ``typed`` it assigns the value's typed form instead
(:mod:`sparkcdc.core.images`, helpers in :mod:`.typedvalues`).
"""

from __future__ import annotations

import binascii
import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sparkcdc.core.errors import SourceError
from sparkcdc.core.schema import Column
from sparkcdc.sources.mysql.binlog import tablemap as tm
from sparkcdc.sources.mysql.binlog import typedvalues as tv
from sparkcdc.sources.mysql.binlog import values as vals
from sparkcdc.sources.mysql.binlog.json_binary import json_text
from sparkcdc.sources.mysql.schema.column_types import BINARY_TYPES, is_binary

Post = Callable[[list[str], str], list[str]]


@dataclass
class ColumnCode:
    """How one column is read: ``fmt`` (struct codes, fixed width) + ``post``, or ``read``."""

    fmt: str = ""
    width: int = 0
    post: Post | None = None
    read: Callable[[str], list[str]] | None = None
    nfields: int = 1


class IntTextCache(dict[int, Any]):
    """An int -> text (or typed value) cache whose hits cost one dictionary subscript (misses
    call ``fn``)."""

    __slots__ = ("fn", "limit")

    def __init__(self, fn: Callable[[int], Any], limit: int = 1 << 16) -> None:
        super().__init__()
        self.fn = fn
        self.limit = limit

    def __missing__(self, key: int) -> Any:
        if len(self) >= self.limit:
            self.clear()
        text = self[key] = self.fn(key)
        return text


@dataclass
class Namespace:
    """The globals of the generated code: helpers and per-column constants."""

    env: dict[str, Any] = field(
        default_factory=lambda: {"_fb": int.from_bytes, "_D3": vals.DIGITS3}
    )

    def add(self, stem: str, value: Any) -> str:
        name = f"_{stem}{len(self.env)}"
        self.env[name] = value
        return name

    def cache(self, stem: str, fn: Callable[[int], Any], limit: int = 1 << 16) -> str:
        """The name of an :class:`IntTextCache` over ``fn``."""
        return self.add(stem, IntTextCache(fn, limit))


_INT_FMT = {tm.T_TINY: "b", tm.T_SHORT: "h", tm.T_LONG: "i", tm.T_LONGLONG: "q"}
_INT_WIDTH = {"b": 1, "h": 2, "i": 4, "q": 8}
_B64 = functools.partial(binascii.b2a_base64, newline=False)

# catalog data types a binlog type code may stand for (a mismatch means a stale schema)
_EXPECTED: dict[int, set[str]] = {
    tm.T_TINY: {"tinyint", "bool", "boolean"},
    tm.T_SHORT: {"smallint"},
    tm.T_INT24: {"mediumint"},
    tm.T_LONG: {"int", "integer"},
    tm.T_LONGLONG: {"bigint"},
    tm.T_FLOAT: {"float"},
    tm.T_DOUBLE: {"double", "real"},
    tm.T_NEWDECIMAL: {"decimal"},
    tm.T_BIT: {"bit"},
    tm.T_YEAR: {"year"},
    tm.T_DATE: {"date"},
    tm.T_NEWDATE: {"date"},
    tm.T_TIME2: {"time"},
    tm.T_TIME: {"time"},
    tm.T_DATETIME2: {"datetime"},
    tm.T_DATETIME: {"datetime"},
    tm.T_TIMESTAMP2: {"timestamp"},
    tm.T_TIMESTAMP: {"timestamp"},
    tm.T_VARCHAR: {"varchar", "varbinary"},
    tm.T_VAR_STRING: {"varchar", "varbinary"},
    tm.T_STRING: {"char", "binary", "enum", "set"},
    tm.T_ENUM: {"enum"},
    tm.T_SET: {"set"},
    tm.T_JSON: {"json"},  # MySQL's binary JSON (MariaDB writes JSON as LONGTEXT)
}
_LOBS = {"tinytext", "text", "mediumtext", "longtext", "json", *BINARY_TYPES} - {
    "binary",
    "varbinary",
}
for _code in (tm.T_BLOB, tm.T_TINY_BLOB, tm.T_MEDIUM_BLOB, tm.T_LONG_BLOB):
    _EXPECTED[_code] = _LOBS
_EXPECTED[tm.T_GEOMETRY] = {"geometry", "point", "linestring", "polygon", "multipoint",
                            "multilinestring", "multipolygon", "geometrycollection",
                            "geomcollection"}  # fmt: skip
_KNOWN = set().union(*_EXPECTED.values())


def plain(srcs: list[str], v: str) -> list[str]:
    return [f"{v} = {srcs[0]}"]


def _fixed(fmt: str, width: int, post: Post = plain, nfields: int = 1) -> ColumnCode:
    return ColumnCode(fmt=fmt, width=width, post=post, nfields=nfields)


def _integer(t: int, col: Column) -> ColumnCode:
    if t == tm.T_INT24:
        fmt = "HB" if col.unsigned else "Hb"
        return _fixed(fmt, 3, lambda s, v: [f"{v} = {s[0]} | {s[1]} << 16"], 2)
    code = _INT_FMT[t]
    return _fixed(code.upper() if col.unsigned else code, _INT_WIDTH[code])


def _decimal(meta: int, ns: Namespace, typed: bool) -> ColumnCode:
    """NEWDECIMAL(precision, scale): its exact text; a value with more integer or fraction
    digits than the column has (damaged bytes) raises ValueError."""
    layout = vals.DecimalLayout(meta >> 8, meta & 0xFF)
    top = 1 << (8 * layout.size - 1)
    invert = ((1 << (8 * layout.size)) - 1) ^ top
    ipart, fpart = layout.expressions("d")
    body = "{di}"
    if layout.scale and layout.scale <= vals.MAX_TABLE_SCALE:
        body += f".{{{ns.add('frac', vals.fraction_digits(layout.scale))}[df]}}"
    elif layout.scale:
        body += f".{{df:0{layout.scale}d}}"
    quote = "" if typed else '\\"'
    too_long = f"a DECIMAL({layout.precision},{layout.scale}) value holds more digits than that"
    limits = f"di >= {10 ** (layout.precision - layout.scale)} or df >= {10**layout.scale}"

    def post(s: list[str], v: str) -> list[str]:
        return [
            f"d = _fb({s[0]}, 'big')",
            f"if d & {top}:",
            f"    d ^= {top}",
            "    ds = ''",
            "else:",
            f"    d ^= {invert}",
            "    ds = '-'",
            f"di = {ipart}",
            f"df = {fpart}",
            f"if {limits}:",
            f"    raise ValueError({too_long!r})",
            f"{v} = f'{quote}{{ds}}{body}{quote}'",
        ]

    return _fixed(f"{layout.size}s", layout.size, post)


def _temporal(t: int, meta: int, ns: Namespace, typed: bool) -> ColumnCode:
    nfrac = vals.FRACTION_BYTES[meta] if meta <= 6 else 0
    scale = vals.FRACTION_SCALE[meta] if meta <= 6 else 1
    mask = (1 << (8 * nfrac)) - 1
    micros = ["us = 0"]
    if nfrac:
        micros = [f"us = (w & {mask})" + (f" * {scale}" if scale > 1 else "")]
    text = "{_D3[us // 1000]}{_D3[us % 1000]}"
    if t == tm.T_DATETIME2:
        if typed:
            ymd, hms = ns.cache("ymd", tv.ymd_days), ns.cache("hms", tv.hms_seconds, 1 << 17)
            value = "None if t is None else (t * 86400 + u) * 1000000 + us"
        else:
            ymd, hms = ns.cache("ymd", vals.ymd_text), ns.cache("hms", vals.hms_text, 1 << 17)
            value = f"f'\"{{t}}T{{u}}.{text}\"' if t else 'null'"

        def post_dt(s: list[str], v: str) -> list[str]:
            return [
                f"w = _fb({s[0]}, 'big')",
                f"t = {ymd}[(w >> {8 * nfrac + 17}) - 4194304]",
                f"u = {hms}[w >> {8 * nfrac} & 131071]",
                *micros,
                f"{v} = {value}",
            ]

        return _fixed(f"{5 + nfrac}s", 5 + nfrac, post_dt)
    if t == tm.T_TIMESTAMP2:
        day, sec = ns.cache("day", vals.epoch_day_text), ns.cache("sec", vals.day_seconds_text)
        if typed:
            value = "x * 1000000 + us if x else None"
        else:
            value = f"f'\"{{{day}[x // 86400]}}T{{{sec}[x % 86400]}}.{text}Z\"' if x else 'null'"

        def post_ts(s: list[str], v: str) -> list[str]:
            return [f"w = _fb({s[0]}, 'big')", f"x = w >> {8 * nfrac}", *micros, f"{v} = {value}"]

        return _fixed(f"{4 + nfrac}s", 4 + nfrac, post_ts)
    # TIME2
    fn = ns.add("time", functools.partial(_time2, fsp=meta, typed=typed))
    return _fixed(f"{3 + nfrac}s", 3 + nfrac, lambda s, v: [f"{v} = {fn}({s[0]})"])


def _time2(raw: bytes, fsp: int, typed: bool) -> str:
    text = vals.time2_text(raw, fsp)
    return tv.unquoted(text) if typed else text


def _old_temporal(
    t: int, meta: int, col: Column, where: str, ns: Namespace, typed: bool
) -> ColumnCode:
    """Pre-5.6 TIMESTAMP/DATETIME/TIME; MariaDB's old fractional variants carry no metadata,
    only the schema's fsp tells them apart."""
    if meta or col.fsp:
        raise SourceError(
            f"column {col.name} of {where} uses MariaDB's pre-10.3 fractional-second format; "
            "rebuild the table with mysql56_temporal_format=ON (ALTER TABLE ... FORCE)"
        )
    if t == tm.T_TIMESTAMP:
        if typed:
            return _fixed("I", 4, lambda s, v: [f"{v} = {s[0]} * 1000000 if {s[0]} else None"])
        fn = ns.add("ts", vals.timestamp_text)
        return _fixed(
            "I", 4, lambda s, v: [f"{v} = f'\"{{{fn}({s[0]})}}.000000Z\"' if {s[0]} else 'null'"]
        )
    if t == tm.T_DATETIME:
        fn = ns.add("odt", tv.old_datetime_micros if typed else vals.old_datetime_text)
        return _fixed("Q", 8, lambda s, v: [f"{v} = {fn}({s[0]})"])
    text_fn = vals.old_time_text
    fn = ns.add("otime", (lambda p: tv.unquoted(text_fn(p))) if typed else text_fn)
    return _fixed("Hb", 3, lambda s, v: [f"{v} = {fn}({s[0]} | {s[1]} << 16)"], 2)


def _length_prefix(nbytes: int, v: str) -> list[str]:
    if nbytes == 1:
        return ["n = buf[p]", "p += 1"]
    if nbytes == 2:
        return ["n = buf[p] | buf[p + 1] << 8", "p += 2"]
    return [f"n = _fb(buf[p:p + {nbytes}], 'little')", f"p += {nbytes}"]


def _variable(
    prefix: int, col: Column, ns: Namespace, typed: bool, pad_to: int = 0, binary: bool = False
) -> ColumnCode:
    """A length-prefixed string or byte string."""
    binary = binary or is_binary(col)
    if binary:
        b64 = ns.add("b64", _B64)
        pad = [f"if n < {pad_to}: b += bytes({pad_to} - n)"] if pad_to else []
        value = "b" if typed else f"'\"' + {b64}(b).decode('ascii') + '\"'"

        def read_bin(v: str) -> list[str]:
            return [
                *_length_prefix(prefix, v),
                "b = buf[p:p + n]",
                *pad,
                f"{v} = {value}",
                "p += n",
            ]

        return ColumnCode(read=read_bin)
    codec, errors = vals.python_codec(col.charset)
    decoded = f"buf[p:p + n].decode({codec!r}, {errors!r})"
    if not typed:
        decoded = f"{ns.add('js', vals.json_str)}({decoded})"

    def read_text(v: str) -> list[str]:
        return [
            *_length_prefix(prefix, v),
            f"{v} = {decoded}",
            "p += n",
        ]

    return ColumnCode(read=read_text)


def _enum_or_set(real: int, size: int, col: Column, ns: Namespace, typed: bool) -> ColumnCode:
    fmt = {1: "B", 2: "H", 4: "I", 8: "Q"}.get(size, f"{size}s")
    raw = "{0}" if len(fmt) == 1 else "_fb({0}, 'little')"
    if real == tm.T_ENUM:
        members = ("", *col.values) if typed else tuple(map(vals.json_str, ("", *col.values)))
        names, empty = ns.add("enum", members), ns.add("empty", members[0])
        n = len(col.values) + 1

        def post_enum(s: list[str], v: str) -> list[str]:
            x = raw.format(s[0])
            return [f"x = {x}", f"{v} = {names}[x] if x < {n} else {empty}"]

        return _fixed(fmt, size, post_enum)
    fn = ns.add("set", functools.partial(_set_text, members=col.values, typed=typed))
    return _fixed(fmt, size, lambda s, v: [f"{v} = {fn}({raw.format(s[0])})"])


def _set_text(mask: int, members: tuple[str, ...], typed: bool) -> str:
    if typed:
        return ",".join(m for i, m in enumerate(members) if mask >> i & 1)
    return vals.set_text(mask, members)


def column_code(
    t: int, meta: int, col: Column, where: str, ns: Namespace, typed: bool = False
) -> ColumnCode:
    """The code fragment for a column of binlog type ``t`` with table-map metadata ``meta``
    (``typed``: assigning the typed value instead of JSON text)."""
    if col.data_type not in _KNOWN and t != tm.T_GEOMETRY:
        raise SourceError(
            f"column {col.name} of {where} has type {col.data_type}, which sparkcdc does not "
            "decode yet; leave the table out of source.tables",
            table=where,
        )
    expected = _EXPECTED.get(t)
    if expected is not None and col.data_type not in expected:
        raise SourceError(
            f"the binlog describes column {col.name} of {where} as type code {t} but the tracked "
            f"schema says {col.data_type}; the schema is out of date",
            table=where,
        )
    if t in _INT_FMT or t == tm.T_INT24:
        return _integer(t, col)
    if t == tm.T_FLOAT:  # typed: the float itself; JSON: its shortest text
        f32 = ns.add("f32", vals.float32_text)
        return _fixed("f", 4, plain if typed else lambda s, v: [f"{v} = {f32}({s[0]})"])
    if t == tm.T_DOUBLE:
        return _fixed("d", 8)
    if t == tm.T_NEWDECIMAL:
        return _decimal(meta, ns, typed)
    if t == tm.T_YEAR:
        return _fixed("B", 1, lambda s, v: [f"{v} = {s[0]} + 1900 if {s[0]} else 0"])
    if t == tm.T_BIT:
        nbytes = (meta >> 8) + (1 if meta & 0xFF else 0)
        if nbytes == 1:
            return _fixed("B", 1)
        return _fixed(f"{nbytes}s", nbytes, lambda s, v: [f"{v} = _fb({s[0]}, 'big')"])
    if t in (tm.T_DATE, tm.T_NEWDATE):
        dates = ns.cache("date", tv.date_days if typed else vals.date_text)
        return _fixed("HB", 3, lambda s, v: [f"{v} = {dates}[{s[0]} | {s[1]} << 16]"], 2)
    if t in (tm.T_DATETIME2, tm.T_TIMESTAMP2, tm.T_TIME2):
        return _temporal(t, meta, ns, typed)
    if t in (tm.T_TIMESTAMP, tm.T_DATETIME, tm.T_TIME):
        return _old_temporal(t, meta, col, where, ns, typed)
    if t in (tm.T_VARCHAR, tm.T_VAR_STRING):
        return _variable(1 if meta < 256 else 2, col, ns, typed)
    if t in (tm.T_BLOB, tm.T_TINY_BLOB, tm.T_MEDIUM_BLOB, tm.T_LONG_BLOB, tm.T_GEOMETRY):
        return _variable(meta, col, ns, typed, binary=t == tm.T_GEOMETRY)
    if t in (tm.T_STRING, tm.T_ENUM, tm.T_SET):
        real, length = tm.string_type(t, meta)
        if real in (tm.T_ENUM, tm.T_SET):
            return _enum_or_set(real, length, col, ns, typed)
        return _variable(1 if length < 256 else 2, col, ns, typed, pad_to=length)
    if t == tm.T_JSON:
        return _binary_json(meta, ns, typed)
    raise SourceError(
        f"column {col.name} of {where} has binlog type code {t}, which sparkcdc cannot decode "
        "yet (the legacy DECIMAL format is not supported)",
        table=where,
    )


def _binary_json(prefix: int, ns: Namespace, typed: bool) -> ColumnCode:
    """MySQL's binary JSON (a length-prefixed document): its JSON text, as a string value."""
    text = ns.add("jtext", json_text)
    value = (
        f"{text}(buf[p:p + n])" if typed else f"{ns.add('js', vals.json_str)}({text}(buf[p:p + n]))"
    )

    def read(v: str) -> list[str]:
        return [*_length_prefix(prefix, v), f"{v} = {value}", "p += n"]

    return ColumnCode(read=read)
