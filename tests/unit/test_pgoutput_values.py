"""pgoutput values without a server: the array literal parser, PostgreSQL's text forms and the
column-wise conversion to Arrow (round trips through the texts PostgreSQL writes)."""

from __future__ import annotations

import datetime as dt
import math
import struct
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparkcdc.core import temporal
from sparkcdc.sources.postgres.pgoutput import literals
from sparkcdc.sources.postgres.pgoutput import messages as m
from sparkcdc.sources.postgres.pgoutput.types import (
    TYPES,
    PgType,
    column,
    numeric_logical,
    resolve_type,
)
from sparkcdc.sources.postgres.pgoutput.values import convert, json_value

_BLANKS = " \t\n\r\v\f"


def _element(text: str | None, delimiter: str) -> str:
    """An element as ``array_out`` writes it (quoted where PostgreSQL quotes)."""
    if text is None:
        return "NULL"
    special = '{}"\\' + delimiter + _BLANKS
    if text == "" or text.upper() == "NULL" or any(c in special for c in text):
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return text


def _literal(items: list, delimiter: str = ",") -> str:  # type: ignore[type-arg]
    return "{" + delimiter.join(
        _literal(i, delimiter) if isinstance(i, list) else _element(i, delimiter) for i in items
    ) + "}"  # fmt: skip


_TEXTS = st.one_of(st.none(), st.text(), st.sampled_from(["NULL", "null", "", " ", "a,b", '"']))


@given(st.lists(_TEXTS), st.sampled_from([",", ";"]))
def test_array_literal_round_trip(items: list[str | None], delimiter: str) -> None:
    assert literals.parse_array(_literal(items, delimiter), delimiter) == items


@given(st.integers(1, 4).flatmap(lambda n: st.lists(st.lists(_TEXTS, min_size=n, max_size=n))))
def test_two_dimensional_array_round_trip(rows: list[list[str | None]]) -> None:
    assert literals.parse_array(_literal(rows)) == rows


def test_array_literal_forms() -> None:
    assert literals.parse_array("{}") == []
    assert literals.parse_array("{1,2,NULL}") == ["1", "2", None]
    assert literals.parse_array('{"NULL",NULL,""}') == ["NULL", None, ""]
    assert literals.parse_array("[0:2]={7,8,9}") == ["7", "8", "9"]
    assert literals.parse_array("[1:2][1:1]={{1},{2}}") == [["1"], ["2"]]
    assert literals.parse_array('{"a\\\\b","c\\"d"}') == ["a\\b", 'c"d']
    assert literals.parse_array("{(1,1),(0,0);(2,2),(1,1)}", ";") == ["(1,1),(0,0)", "(2,2),(1,1)"]
    assert literals.parse_array("{\u2003x}") == ["\u2003x"]  # only ASCII blanks are quoted
    for bad in ("", "1,2", "{1,2", '{"a}', "{{1}", "{1}}"):
        with pytest.raises(ValueError):
            literals.parse_array(bad)


def _one(text: str | None, data_type: str, logical: str) -> object:
    return convert(pa.array([text], pa.string()), data_type, logical).to_pylist()[0]


@given(st.integers(-(2**63), 2**63 - 1))
def test_integer_texts(value: int) -> None:
    for logical, bits in (("int16", 16), ("int32", 32), ("int64", 64)):
        if -(2 ** (bits - 1)) <= value < 2 ** (bits - 1):
            assert _one(str(value), "int8", logical) == value
            assert json_value(str(value), "int8", logical) == value


@given(st.data(), st.integers(1, 38))
def test_numeric_texts_are_exact(data: st.DataObject, precision: int) -> None:
    scale = data.draw(st.integers(0, precision))
    unscaled = data.draw(st.integers(-(10**precision) + 1, 10**precision - 1))
    value = Decimal(f"{unscaled}e-{scale}")  # exact (scaleb would round to 28 digits)
    text = f"{value:f}"  # as numeric_out writes it
    logical = f"decimal({precision},{scale})"
    assert _one(text, "numeric", logical) == value
    assert json_value(text, "numeric", logical) == text
    assert _one("NaN", "numeric", logical) is None


def _pg_float(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    return {math.inf: "Infinity", -math.inf: "-Infinity"}.get(value, repr(value))


@given(st.floats())
def test_float_texts(value: float) -> None:
    got = _one(_pg_float(value), "float8", "float64")
    assert struct.pack("<d", got) == struct.pack("<d", value) or math.isnan(value)
    with np.errstate(over="ignore"):
        single = float(np.float32(value))
    got32 = _one(_pg_float(single), "float4", "float32")
    assert struct.pack("<f", got32) == struct.pack("<f", single) or math.isnan(value)


def test_booleans_and_nulls() -> None:
    texts = pa.array([b"t", b"f", None], pa.binary())
    assert convert(texts, "bool", "boolean").to_pylist() == [True, False, None]
    assert json_value("f", "bool", "boolean") is False
    for logical in ("int32", "boolean", "date", "timestamp", "binary", "array<int32>"):
        assert convert(pa.array([None, None], pa.binary()), "x", logical).null_count == 2


@given(st.lists(st.one_of(st.none(), st.binary())))
def test_bytea_hex_and_escape(values: list[bytes | None]) -> None:
    hexed = [None if v is None else b"\\x" + v.hex().encode() for v in values]
    assert convert(pa.array(hexed, pa.binary()), "bytea", "binary").to_pylist() == values
    escaped = [None if v is None else _bytea_escape(v) for v in values]
    if any(e and not e.startswith(b"\\x") for e in escaped):
        assert convert(pa.array(escaped, pa.binary()), "bytea", "binary").to_pylist() == values


def _bytea_escape(value: bytes) -> bytes:
    return b"".join(
        b"\\\\" if b == 92 else bytes([b]) if 32 <= b < 127 else b"\\%03o" % b for b in value
    )


def test_bytea_hex_refuses_bad_digits() -> None:
    with pytest.raises(ValueError, match="not hex digits"):
        convert(pa.array([b"\\x0g"], pa.binary()), "bytea", "binary")
    with pytest.raises(ValueError, match="odd number"):
        convert(pa.array([b"\\x0", b"\\x1"], pa.binary()), "bytea", "binary")
    sliced = pa.array([b"\\x00", None, b"\\x0102", b"\\xff"], pa.binary())[1:]
    assert convert(sliced, "bytea", "binary").to_pylist() == [None, b"\x01\x02", b"\xff"]


@given(st.dates())
def test_dates_match_python(day: dt.date) -> None:
    days = day.toordinal() - dt.date(1970, 1, 1).toordinal()
    assert literals.date_days(day.isoformat()) == days
    assert temporal.date_text(days) == day.isoformat()
    assert _one(day.isoformat(), "date", "date") == day


@given(st.integers(-(10**9), 10**9))
def test_civil_days_round_trip(days: int) -> None:
    year, month, day = temporal.civil_date(days)
    assert temporal.civil_days(year, month, day) == days
    text = f"{abs(year - 1) if year <= 0 else year:04d}-{month:02d}-{day:02d}"
    text += " BC" if year <= 0 else ""
    got = convert(pa.array([text]), "date", "date") if -(2**31) <= days < 2**31 else None
    assert got is None or got.cast(pa.int32()).to_pylist() == [days]


def test_date_and_timestamp_specials() -> None:
    texts = ["infinity", "-infinity", "0001-01-01 BC", "2000-02-29", None]
    days = convert(pa.array(texts), "date", "date").cast(pa.int32()).to_pylist()
    assert days == [literals.DATE_MAX, literals.DATE_MIN, -719_528, 11_016, None]
    stamps = ["infinity", "-infinity", "1999-12-31 23:00:00-01", "0001-12-31 23:59:59.5 BC"]
    micros = convert(pa.array(stamps), "timestamptz", "timestamp").cast(pa.int64()).to_pylist()
    assert micros == [
        literals.TIMESTAMP_MAX,
        literals.TIMESTAMP_MIN,
        946_684_800_000_000,
        -719_162 * 86_400_000_000 - 500_000,
    ]
    assert json_value("infinity", "date", "date") == "9999-12-31"
    assert json_value("0044-03-15 BC", "date", "date") == "-0043-03-15"
    assert json_value("-infinity", "timestamptz", "timestamp") == "0001-01-01T00:00:00.000000Z"
    with pytest.raises(ValueError, match="range"):
        literals.timestamp_micros("294276-12-31 23:59:59.999999")


_OFFSETS = st.integers(-15 * 3600 - 59 * 60 - 59, 15 * 3600 + 59 * 60 + 59)


@given(st.datetimes(dt.datetime(1, 1, 2), dt.datetime(9999, 12, 30)), _OFFSETS)
@settings(max_examples=300)
def test_timestamptz_offsets(local: dt.datetime, offset: int) -> None:
    sign = "-" if offset < 0 else "+"
    h, rest = divmod(abs(offset), 3600)
    zone = (
        f"{sign}{h:02d}"
        + (f":{rest // 60:02d}" if rest else "")
        + (f":{rest % 60:02d}" if rest % 60 else "")
    )
    fraction = f".{local.microsecond:06d}".rstrip("0").rstrip(".")
    text = f"{local.year:04d}-{local:%m-%d %H:%M:%S}{fraction}{zone}"
    epoch = dt.datetime(1970, 1, 1)
    want = (local - epoch) // dt.timedelta(microseconds=1) - offset * 1_000_000
    assert literals.timestamp_micros(text) == want
    got = convert(pa.array([text, "infinity"]), "timestamptz", "timestamp")
    assert got.cast(pa.int64()).to_pylist() == [want, literals.TIMESTAMP_MAX]
    assert json_value(text, "timestamptz", "timestamp") == temporal.timestamp_text(want, "Z")


def test_time_and_interval_texts() -> None:
    times = pa.array(["12:00:00", "23:59:59.5", "24:00:00", "00:00:00.000001", None])
    assert convert(times, "time", "string").to_pylist() == [
        "12:00:00.000000", "23:59:59.500000", "24:00:00.000000", "00:00:00.000001", None
    ]  # fmt: skip
    assert json_value("01:02:03.4", "time", "string") == "01:02:03.400000"
    cases = {
        "00:00:00": "PT0S",
        "1 year 2 mons 3 days 04:05:06.789": "P1Y2M3DT4H5M6.789S",
        "-1 years -2 mons +3 days -04:05:06.5": "P-1Y-2M3DT-4H-5M-6.5S",
        "1 day": "P1D",
        "-00:00:00.5": "PT-0.5S",
        "100:00:00": "PT100H",
        "1 mon -1 days": "P1M-1D",
        "P1Y": "P1Y",
    }
    assert convert(pa.array(list(cases)), "interval", "string").to_pylist() == list(cases.values())
    with pytest.raises(ValueError, match="IntervalStyle"):
        literals.interval_iso("@ 1 year")


def test_arrays_of_types() -> None:
    texts = pa.array(['{"2020-01-01 00:00:00+01",NULL}', "{}", None])
    got = convert(texts, "_timestamptz", "array<timestamp>")
    assert got.type == pa.list_(pa.timestamp("us", tz="UTC"))
    assert got.cast(pa.list_(pa.int64())).to_pylist() == [[1_577_833_200_000_000, None], [], None]
    assert convert(pa.array(['{"\\\\x01ff",NULL}']), "_bytea", "array<binary>").to_pylist() == [
        [b"\x01\xff", None]
    ]
    assert json_value("{t,NULL}", "_bool", "array<boolean>") == [True, None]
    with pytest.raises(ValueError, match="more than one dimension"):
        json_value("{{1},{2}}", "_int4", "array<int32>")


def test_type_mapping() -> None:
    def typmod(p: int, s: int) -> int:
        return ((p << 16) | (s & 0x7FF)) + 4

    assert numeric_logical(-1) == "string"
    assert numeric_logical(typmod(12, 2)) == "decimal(12,2)"
    assert numeric_logical(typmod(38, 10)) == "decimal(38,10)"
    assert numeric_logical(typmod(39, 0)) == "string"
    assert numeric_logical(typmod(5, -2)) == "decimal(7,0)"
    assert numeric_logical(typmod(2, 5)) == "decimal(5,5)"
    assert resolve_type(1231, typmod(10, 2)) == ("_numeric", "array<decimal(10,2)>")
    assert resolve_type(99999, -1) == ("", "")
    enum = PgType(70000, "mood", "public", kind="e")
    arr = PgType(70001, "_mood", "public", kind="b", element=70000)
    resolve = {70000: enum, 70001: arr}.get
    assert resolve_type(70001, -1, resolve) == ("_mood", "array<string>")
    assert column("v", 1043, 24).length == 20
    assert column("t", 1083, 3).fsp == 3 and column("i", 1186, -1).fsp == 6
    assert all(name and logical for name, logical, _ in TYPES.values())


def test_decoder_tracks_stream_blocks() -> None:
    insert = b"I" + (7).to_bytes(4) + b"N" + (1).to_bytes(2) + b"t" + (1).to_bytes(4) + b"5"
    streamed = insert[:1] + (42).to_bytes(4) + insert[1:]
    decoder = m.Decoder()
    assert decoder(insert) == m.Insert(None, 7, [b"5"])
    assert decoder(b"S" + (42).to_bytes(4) + b"\x01") == m.StreamStart(42, True)
    assert decoder(streamed) == m.Insert(42, 7, [b"5"])
    assert decoder(b"E") == m.StreamStop()
    assert decoder(insert) == m.Insert(None, 7, [b"5"])
    assert m.decode(b"A" + (42).to_bytes(4) + (43).to_bytes(4)) == m.StreamAbort(42, 43)
    kinds = b"I" + (7).to_bytes(4) + b"N" + (3).to_bytes(2) + b"nub" + (1).to_bytes(4) + b"\x00"
    assert m.decode(kinds).new == [None, m.UNCHANGED, m.BinaryValue(b"\x00")]  # type: ignore[union-attr]
    with pytest.raises(m.PgoutputError, match="column kind 'x'"):
        m.decode(insert[:8] + b"x")
    delete = b"D" + (7).to_bytes(4) + b"X" + (0).to_bytes(2)
    with pytest.raises(m.PgoutputError, match=r"'X' where a tuple \(K/O\) starts"):
        m.decode(delete)
