"""The ``array<E>`` logical type (PostgreSQL arrays) and dates of any year, end to end: JSON row
images -> typed Arrow -> JSON again, typed row tuples -> Arrow, and a Delta replica and change
log written and merged by the sink."""

from __future__ import annotations

import base64
import datetime as dt
import json
import re
from dataclasses import replace
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable
from hypothesis import given, settings
from hypothesis import strategies as st

from sparkcdc.core import temporal, types
from sparkcdc.core.chunk import KeyColumn
from sparkcdc.core.convert import cast_struct, decode_images
from sparkcdc.core.errors import ConfigError, SinkError
from sparkcdc.core.images import StructMaker, float32_text, json_values
from sparkcdc.core.schema import Column, TableSchema
from sparkcdc.sinks.delta.sink import DeltaSink
from tests.cases.envelopes import Changes, add

Pair = tuple[object, object]  # (the value in a typed row tuple, the value in a JSON image)
DAY = temporal.DAY_MICROS
INT64 = 1 << 63


# ---------------------------------------------------------------- the type and its texts
def test_array_types_name_their_arrow_spark_and_element_types() -> None:
    assert types.array_of("decimal(12,2)") == "array<decimal(12,2)>"
    assert types.array_element("array<int32>") == "int32"
    assert types.array_element("int32") is None and not types.is_array("string")
    assert types.is_array("array<timestamp_ntz>")
    assert types.check("array<decimal(12,2)>") == "array<decimal(12,2)>"
    assert types.arrow_type("array<decimal(12,2)>") == pa.list_(pa.decimal128(12, 2))
    assert types.arrow_type("array<timestamp>") == pa.list_(pa.timestamp("us", tz="UTC"))
    assert types.spark_type("array<decimal(12,2)>") == "array<decimal(12,2)>"
    assert types.spark_type("array<int16>") == "array<smallint>"
    assert types.spark_type("array<timestamp_ntz>") == "array<timestamp_ntz>"
    column = Column("tags", "_text", logical="array<string>")
    assert column.spark_type() == "array<string>"
    schema = TableSchema("s", "t", (Column("id", "int4", logical="int32"), column), ("id",))
    assert schema.spark_ddl() == "`id` int, `tags` array<string>"


@pytest.mark.parametrize(
    "text", ["array<array<int32>>", "array<>", "array<text>", "array<int32", "list<int32>"]
)
def test_no_nested_or_unknown_arrays(text: str) -> None:
    with pytest.raises(ValueError, match="not a logical type"):
        types.check(text)
    with pytest.raises(ValueError):
        types.arrow_type(text)


def test_array_of_refuses_arrays_and_unknown_elements() -> None:
    with pytest.raises(ValueError, match="one dimension"):
        types.array_of("array<int32>")
    with pytest.raises(ValueError, match="not a logical type"):
        types.array_of("money")


def test_an_array_cannot_be_a_key_column() -> None:
    with pytest.raises(ConfigError, match="'tags' is an array .* cannot be a key column"):
        KeyColumn("tags", "_int4", logical="array<int32>")
    assert KeyColumn("id", "int4", logical="int32").integer


# ---------------------------------------------------------------- values of every element type
def _decimal_text(precision: int, scale: int) -> st.SearchStrategy[str]:
    """Exact digits of decimal(precision, scale), ``scale`` of them after the point."""

    def text(n: int) -> str:
        digits = str(abs(n)).rjust(scale + 1, "0")
        whole, point = digits[: len(digits) - scale], digits[len(digits) - scale :]
        return ("-" if n < 0 else "") + whole + (f".{point}" if scale else "")

    top = 10**precision - 1
    return st.integers(-top, top).map(text)


def _pairs(logical: str) -> st.SearchStrategy[Pair]:
    """(typed tuple value, JSON value) of one non-null value of ``logical``."""
    same: dict[str, st.SearchStrategy[Any]] = {
        "int16": st.integers(-(2**15), 2**15 - 1),
        "int32": st.integers(-(2**31), 2**31 - 1),
        "int64": st.integers(-(2**63), 2**63 - 1),
        "float64": st.floats(allow_nan=False, allow_infinity=False),
        "boolean": st.booleans(),
        "string": st.text(st.characters(exclude_categories=["Cs"]), max_size=12),
    }
    if logical in same:
        return same[logical].map(lambda v: (v, v))
    if logical == "float32":
        floats = st.floats(width=32, allow_nan=False, allow_infinity=False)
        return floats.map(lambda v: (v, float(float32_text(v))))
    digits = types.decimal_digits(logical)
    if digits is not None:
        return _decimal_text(*digits).map(lambda v: (v, v))
    if logical == "binary":
        return st.binary(max_size=10).map(lambda b: (b, base64.b64encode(b).decode()))
    if logical == "date":  # every day date32 holds
        days = st.integers(-(2**31), 2**31 - 1) | st.integers(-800_000, 3_000_000)
        return days.map(lambda d: (d, temporal.date_text(d)))
    zone = "Z" if logical == "timestamp" else ""
    micros = st.integers(-INT64, INT64 - 1) | st.integers(-800_000 * DAY, 3_000_000 * DAY)
    return micros.map(lambda m: (m, temporal.timestamp_text(m, zone)))


ELEMENTS = [
    "int16", "int32", "int64", "float32", "float64", "boolean", "decimal(12,2)",
    "decimal(38,10)", "decimal(5,0)", "decimal(3,3)", "string", "binary", "date", "timestamp",
    "timestamp_ntz",
]  # fmt: skip


def _lists(logical: str) -> st.SearchStrategy[Pair | None]:
    """(typed list, JSON list) of one array value, None for a NULL array."""

    def split(items: list[Pair | None]) -> Pair:
        typed = [None if x is None else x[0] for x in items]
        return typed, [None if x is None else x[1] for x in items]

    return st.none() | st.lists(st.none() | _pairs(logical), max_size=5).map(split)


def _schema(logical: str) -> TableSchema:
    columns = (
        Column("id", "int4", logical="int32"),
        Column("xs", "_x", logical=types.array_of(logical)),
        Column("x", "x", logical=logical),
    )
    return TableSchema("pg", "t", columns, ("id",))


@pytest.mark.parametrize("logical", ELEMENTS)
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_json_images_round_trip_through_typed_arrays(logical: str, data: st.DataObject) -> None:
    schema = _schema(logical)
    rows = data.draw(st.lists(st.tuples(_lists(logical), st.none() | _pairs(logical)), max_size=8))
    images, tuples, expected = [], [], []
    for i, (xs, scalar) in enumerate(rows):
        image = {"id": i, "xs": None if xs is None else xs[1]}
        image["x"] = None if scalar is None else scalar[1]
        images.append(json.dumps(image))
        tuples.append((i, None if xs is None else xs[0], None if scalar is None else scalar[0]))
        expected.append([image["id"], image["xs"], image["x"]])
    maker = StructMaker(schema)
    decoded = cast_struct(decode_images(pa.array(images, pa.string()), schema, True), maker.fields)
    assert decoded.type.field("xs").type == pa.list_(types.arrow_type(logical))
    made = maker(tuples)
    assert decoded.equals(made)
    assert json_values(decoded, ["id", "xs", "x"]) == expected
    assert json_values(made, ["xs"]) == [[e[1]] for e in expected]


def test_null_images_null_arrays_null_elements_and_empty_arrays() -> None:
    schema = _schema("decimal(12,2)")
    images = pa.array(['{"id": 1, "xs": ["1.50", null, "-3.00"]}', None, '{"id": 2, "xs": []}',
                       '{"id": 3, "xs": null}', '{"id": 4}'])  # fmt: skip
    decoded = decode_images(images, schema)
    assert decoded.is_null().to_pylist() == [False, True, False, False, False]
    assert decoded.field("xs").to_pylist() == [
        [Decimal("1.50"), None, Decimal("-3.00")],
        None,
        [],
        None,
        None,
    ]
    typed = StructMaker(schema)([(1, ["1.50", None, "-3.00"], None), None, (2, [], None)])
    assert json_values(typed, ["xs"]) == [[["1.50", None, "-3.00"]], None, [[]]]


def test_a_sliced_list_column_keeps_its_own_lists() -> None:
    schema = _schema("date")
    images = pa.array([f'{{"id": {i}, "xs": ["200{i}-01-0{i + 1}"]}}' for i in range(5)])
    decoded = decode_images(images.slice(2, 2), schema)
    assert json_values(decoded, ["xs"]) == [[["2002-01-03"]], [["2003-01-04"]]]


# ---------------------------------------------------------------- strictness
@pytest.mark.parametrize(
    "image",
    [
        '{"id": 1, "xs": 5}',  # a number where the array goes
        '{"id": 1, "xs": ["1.00", 2]}',  # elements of two kinds
        '{"id": 1, "xs": [["1.00"]]}',  # two dimensions
        '{"id": 1, "xs": ["1.005"]}',  # more digits than the scale keeps
        '{"id": 1, "xs": ["1.00"], "x": ["1.00"]}',  # an array where a scalar goes
        '{"id": 1, "xs": [], "other": 1}',  # a column the schema lacks (strict)
    ],
)
def test_decode_images_refuses_what_the_types_cannot_hold(image: str) -> None:
    with pytest.raises(pa.ArrowInvalid):
        decode_images(pa.array([image]), _schema("decimal(12,2)"), strict=True)


def test_lists_of_the_wrong_shape_are_refused_by_the_struct_maker() -> None:
    with pytest.raises(TypeError, match="is a list"):
        StructMaker(_schema("int32"))([(1, 5, None)])


def test_a_column_changed_between_array_and_scalar_is_no_cast() -> None:
    fields = [pa.field("xs", pa.string())]
    lists = pa.StructArray.from_arrays([pa.array([["a"]])], names=["xs"])
    with pytest.raises(pa.ArrowInvalid, match="'xs' is list<item: string> here"):
        cast_struct(lists, fields)
    scalars = pa.StructArray.from_arrays([pa.array([1])], names=["xs"])
    with pytest.raises(pa.ArrowInvalid, match="'xs' is int64 here"):
        cast_struct(scalars, [pa.field("xs", pa.list_(pa.int64()))])
    widened = cast_struct(lists, [pa.field("xs", pa.list_(pa.large_string()))])
    assert widened.field("xs").to_pylist() == [["a"]]


# ---------------------------------------------------------------- dates of any year
EXPANDED = [
    ("-0043-03-15", (-43, 3, 15)),
    ("-4713-11-24", (-4713, 11, 24)),
    ("+0000-01-01", (0, 1, 1)),
    ("+0000-02-29", (0, 2, 29)),  # year 0 (1 BC) is a leap year
    ("+10000-01-01", (10000, 1, 1)),
    ("+5874897-12-31", (5874897, 12, 31)),
]


@pytest.mark.parametrize(("text", "date"), EXPANDED)
def test_dates_outside_years_1_to_9999_round_trip_exactly(
    text: str, date: tuple[int, int, int]
) -> None:
    schema = _schema("date")
    days = temporal.civil_days(*date)
    decoded = decode_images(pa.array([json.dumps({"id": 1, "x": text, "xs": [text]})]), schema)
    assert decoded.field("x").cast(pa.int32()).to_pylist() == [days]
    assert json_values(decoded, ["x", "xs"]) == [[text, [text]]]
    assert temporal.civil_date(days) == date


def test_timestamps_outside_years_1_to_9999_round_trip_exactly() -> None:
    texts = ["-0043-03-15T12:30:00.250000Z", "+10000-01-01T00:00:00.000000Z",
             "+0000-12-31T23:59:59.999999Z", "+294247-01-10T04:00:54.775807Z"]  # fmt: skip
    schema = _schema("timestamp")
    images = pa.array([json.dumps({"id": i, "x": t, "xs": [t, None]}) for i, t in enumerate(texts)])
    decoded = decode_images(images, schema)
    assert decoded.field("x").null_count == 0
    assert decoded.field("x").cast(pa.int64())[3].as_py() == INT64 - 1
    assert json_values(decoded, ["x", "xs"]) == [[t, [t, None]] for t in texts]
    micros = (temporal.civil_days(-43, 3, 15) * 86_400 + 45_000) * 1_000_000 + 250_000
    assert decoded.field("x").cast(pa.int64())[0].as_py() == micros


def test_offsets_and_zones_of_expanded_timestamps_read_as_arrow_reads_four_digit_years() -> None:
    xs = ["+10000-01-01T00:00:00.000000", "-0001-01-01T00:00:00Z", "2020-01-01T00:00:00Z"]
    image = {"id": 1, "x": "+10000-01-01 05:30:00+05:30", "xs": xs}
    got = decode_images(pa.array([json.dumps(image)]), _schema("timestamp"))
    # the offset applied; no zone where the type has one: null, as for a four-digit year
    assert json_values(got, ["x", "xs"]) == [
        ["+10000-01-01T00:00:00.000000Z",
         [None, "-0001-01-01T00:00:00.000000Z", "2020-01-01T00:00:00.000000Z"]]
    ]  # fmt: skip
    ntz = decode_images(pa.array([json.dumps(image)]), _schema("timestamp_ntz"))
    assert json_values(ntz, ["x", "xs"]) == [[None, ["+10000-01-01T00:00:00.000000", None, None]]]


def test_zero_and_invalid_dates_stay_null_beside_expanded_years() -> None:
    texts = ["0000-00-00", "-0043-03-15", "2020-02-30", "-0043-13-01", "+2020-02-30", "1999-12-31",
             "+99999999-01-01"]  # fmt: skip
    schema = _schema("date")
    decoded = decode_images(pa.array([json.dumps({"id": 1, "x": t}) for t in texts]), schema)
    assert json_values(decoded, ["x"]) == [
        [None],
        ["-0043-03-15"],
        [None],
        [None],
        [None],
        ["1999-12-31"],
        [None],
    ]


@settings(max_examples=300, deadline=None)
@given(st.integers(-(2**31), 2**31 - 1))
def test_date_texts_agree_with_python_and_read_back(days: int) -> None:
    text = temporal.date_text(days)
    year, month, day = temporal.civil_date(days)
    if 1 <= year <= 9999:
        assert dt.date(year, month, day) == dt.date(1970, 1, 1) + dt.timedelta(days=days)
        assert text == dt.date(year, month, day).isoformat()
    else:
        assert re.fullmatch(r"[+-]\d{4,}-\d\d-\d\d", text), text
        assert temporal.expanded_days(text) == days


# ---------------------------------------------------------------- base64, in bulk
@settings(max_examples=200, deadline=None)
@given(st.lists(st.none() | st.binary(max_size=9), max_size=20), st.integers(0, 3))
def test_binary_columns_decode_in_bulk_as_per_value(values: list[bytes | None], cut: int) -> None:
    schema = TableSchema("pg", "t", (Column("b", "bytea", logical="binary"),))
    images = pa.array(
        [json.dumps({"b": None if v is None else base64.b64encode(v).decode()}) for v in values]
    )
    decoded = decode_images(images.slice(min(cut, len(values))), schema).field("b")
    assert decoded.to_pylist() == values[min(cut, len(values)) :]


def test_binary_not_in_canonical_base64_goes_value_by_value() -> None:
    schema = TableSchema("pg", "t", (Column("b", "bytea", logical="binary"),))
    images = pa.array(['{"b": "AAE="}', '{"b": "AA\\nE="}', '{"b": ""}'])
    assert decode_images(images, schema).field("b").to_pylist() == [b"\0\1", b"\0\1", b""]


# ---------------------------------------------------------------- the Delta sink
COLUMNS = (
    Column("id", "int4", logical="int32"),
    Column("amounts", "_numeric", logical="array<decimal(12,2)>"),
    Column("tags", "_text", logical="array<string>"),
    Column("days", "_date", logical="array<date>"),
    Column("seen", "_timestamptz", logical="array<timestamp>"),
    Column("raw", "_bytea", logical="array<binary>"),
    Column("n", "int4", logical="int32"),
)
ARRAYS = TableSchema("pg", "arr", COLUMNS, ("id",))
ROW_1 = {"id": 1, "amounts": ["1.50", None], "tags": ["a", "b"], "days": ["-0043-03-15"],
         "seen": ["2024-01-02T03:04:05.000006Z"], "raw": ["AAE="], "n": 1}  # fmt: skip
ROW_2 = {"id": 2, "amounts": [], "tags": None, "days": [None], "seen": [], "raw": [], "n": 2}


def _replica(path: Path) -> list[list[object] | None]:
    """The replica's rows in JSON image form (sorted by id): dates of any year compare."""
    table = DeltaTable(str(path / "pg" / "arr")).to_pyarrow_table().sort_by("id")
    fields = [f.with_metadata({"logical": c.logical}) for f, c in
              zip(table.schema, COLUMNS, strict=True)]  # fmt: skip
    columns = [c.combine_chunks() for c in table.columns]
    return json_values(pa.StructArray.from_arrays(columns, fields=fields), table.column_names)


def test_the_sink_writes_and_merges_array_columns(tmp_path: Path) -> None:
    sink = DeltaSink(str(tmp_path), "test")
    first = Changes().schema(ARRAYS).change("c", ARRAYS, after=ROW_1)
    sink.write(first.change("c", ARRAYS, after=ROW_2).table(), 0)
    replica = DeltaTable(str(tmp_path / "pg" / "arr"))
    kinds = {f.name: f.type for f in pa.schema(replica.schema().to_arrow())}
    assert kinds["amounts"] == pa.list_(pa.decimal128(12, 2))
    assert kinds["days"] == pa.list_(pa.date32()) and kinds["raw"] == pa.list_(pa.binary())
    assert kinds["seen"] == pa.list_(pa.timestamp("us", tz="UTC"))
    assert _replica(tmp_path) == [list(ROW_1.values()), list(ROW_2.values())]
    updated = {**ROW_1, "amounts": ["9.99"], "tags": [], "days": None}
    later = Changes(pos=5000).change("u", ARRAYS, ROW_1, updated).change("d", ARRAYS, before=ROW_2)
    sink.write(later.table(), 1)
    assert _replica(tmp_path) == [list(updated.values())]
    log = DeltaTable(str(tmp_path / "pg" / "arr__changelog")).to_pyarrow_table()
    assert sorted(log.column("op").to_pylist()) == ["c", "c", "d", "u"]
    assert log.schema.field("after").type.field("tags").type == pa.list_(pa.string())


def test_typed_array_images_reach_the_replica_as_json_ones_do(tmp_path: Path) -> None:
    from sparkcdc.core.envelope import EnvelopeBuilder
    from sparkcdc.core.offset import position_text
    from sparkcdc.sources.mysql.offset import BinlogOffset, file_sequence

    builder = EnvelopeBuilder(BinlogOffset)
    add(builder, [("s", None, None, None)], "pg", "arr", ARRAYS.schema_id(), pos=10,
        schema=json.dumps(ARRAYS.to_json()))  # fmt: skip
    days = temporal.civil_days(-43, 3, 15)
    row = (3, ["1.50", None], ["x"], [days, None], [0], [b"\x00\x01"], 3)
    builder.extend(
        [("c", "[3]", None, row)], "pg", "arr", ARRAYS.schema_id(),
        position=position_text(file_sequence("mysql-bin.000001"), 20), index=0,
        own=(1, "mysql-bin.000001", 20, None, ""), ts_ms=0, transaction="", total_order=1,
        data_collection_order=1, images=ARRAYS,
    )  # fmt: skip
    batch = builder.build()
    sink = DeltaSink(str(tmp_path), "test")
    sink.write(pa.Table.from_batches([batch]), 0, images=builder.typed_images(batch))
    assert _replica(tmp_path) == [
        [3, ["1.50", None], ["x"], ["-0043-03-15", None], ["1970-01-01T00:00:00.000000Z"],
         ["AAE="], 3]
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("column", "logical", "value"), [("n", "array<int32>", [5]), ("tags", "string", "plain")]
)
def test_a_column_changed_between_array_and_scalar_stops_the_batch(
    tmp_path: Path, column: str, logical: str, value: object
) -> None:
    sink = DeltaSink(str(tmp_path), "test")
    sink.write(Changes().schema(ARRAYS).change("c", ARRAYS, after=ROW_1).table(), 0)
    changed = ARRAYS.with_columns(
        tuple(replace(c, logical=logical) if c.name == column else c for c in COLUMNS)
    )
    batch = Changes(pos=5000).schema(changed).change("c", changed, after={"id": 9, column: value})
    with pytest.raises(SinkError, match=f"column {column} of pg.arr changed from .*no type holds"):
        sink.write(batch.table(), 1)
    assert _replica(tmp_path) == [list(ROW_1.values())]


def test_an_array_key_stops_the_batch_with_a_sentence(tmp_path: Path) -> None:
    keyed = replace(ARRAYS, primary_key=("tags",))
    batch = Changes().schema(keyed).change("c", keyed, after=ROW_1)
    with pytest.raises(SinkError, match="'tags' of pg.arr is an array"):
        DeltaSink(str(tmp_path), "test").write(batch.table(), 0)
