"""The statistics of the sink's own data files (:mod:`sparkcdc.sinks.delta.file_stats`), read
back by delta-rs: a filter on any column finds exactly the rows an in-memory filter finds."""

from __future__ import annotations

import datetime
import decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pytest
from deltalake import DeltaTable, write_deltalake
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sparkcdc.sinks import storage
from sparkcdc.sinks.delta import data_files, log_commit
from sparkcdc.sinks.delta.file_stats import STRING_PREFIX, file_stats

UTC = datetime.UTC
TYPES = {
    "id": pa.int64(),
    "owner": pa.string(),
    "active": pa.bool_(),
    "score": pa.float64(),
    "price": pa.decimal128(10, 2),
    "big": pa.decimal128(20, 0),
    "born": pa.date32(),
    "seen": pa.timestamp("us", "UTC"),
    "local": pa.timestamp("us"),
    "blob": pa.binary(),
    "tags": pa.list_(pa.int32()),
}
MOMENT = datetime.datetime(2026, 1, 2, 3, 4, 5, 999999)


def table_of(path: Path, rows: pa.Table) -> DeltaTable:
    """``rows`` as one data file of a new Delta table, committed by the sink's own commit."""
    write_deltalake(str(path), rows.schema.empty_table())
    kept = DeltaTable(str(path))
    add = data_files.write_data_file(storage.at(str(path)), str(path), rows)
    log_commit.commit(str(path), kept, [add], [], ("app", 1))
    return DeltaTable(str(path))


def sample() -> pa.Table:
    long_text = "m" * (STRING_PREFIX + 10)
    columns = {
        "id": [1, 2, 3],
        "owner": ["dan", long_text, None],
        "active": [True, None, False],
        "score": [1.5, float("nan"), None],
        "price": [decimal.Decimal("1.25"), decimal.Decimal("-0.10"), None],
        "big": [decimal.Decimal(2**64 - 1), decimal.Decimal(7), None],
        "born": [datetime.date(1, 1, 1), datetime.date(9999, 12, 31), None],
        "seen": [MOMENT.replace(tzinfo=UTC), datetime.datetime(1970, 1, 1, tzinfo=UTC), None],
        "local": [MOMENT, None, datetime.datetime(9999, 12, 31, 23, 59, 59, 999999)],
        "blob": [b"x", None, b"y"],
        "tags": [[1], None, [2, 3]],
    }
    return pa.table({n: pa.array(v, TYPES[n]) for n, v in columns.items()})


def found(table: DeltaTable, condition: ds.Expression) -> int:
    return table.to_pyarrow_dataset().to_table(filter=condition).num_rows


def assert_every_value_found(table: DeltaTable, rows: pa.Table) -> None:
    for name in rows.column_names:
        if name == "tags":
            continue
        column = rows.column(name)
        for value in column.to_pylist():
            if value is None:
                expected = column.null_count
                assert found(table, ds.field(name).is_null()) == expected, name
                continue
            if isinstance(value, float) and value != value:
                continue  # NaN equals nothing
            expected = pc.sum(pc.fill_null(pc.equal(column, pa.scalar(value, column.type)),
                                           False).cast(pa.int64())).as_py()  # fmt: skip
            assert found(table, ds.field(name) == pa.scalar(value, column.type)) == expected, (
                name, value)  # fmt: skip


def test_a_filter_on_a_text_column_finds_rows_of_the_sink_s_own_files(tmp_path: Path) -> None:
    """The defect: bounds of integer columns only made delta-rs skip the file for any other."""
    rows = sample()
    table = table_of(tmp_path / "t", rows)
    assert found(table, ds.field("owner") == "dan") == 1
    assert_every_value_found(table, rows)
    lows = file_stats(rows)["minValues"]
    assert isinstance(lows, dict) and set(lows) == set(TYPES) - {"blob", "tags"}


def test_bounds_are_widened_where_they_are_cut(tmp_path: Path) -> None:
    stats = file_stats(sample())
    lows, highs = stats["minValues"], stats["maxValues"]
    assert isinstance(lows, dict) and isinstance(highs, dict)
    assert highs["owner"] == "m" * STRING_PREFIX + "\U0010ffff"
    assert highs["seen"] == "2026-01-02T03:04:06.000Z"  # .999999 rounded up
    assert lows["local"] == "2026-01-02 03:04:05.999" and lows["born"] == "0001-01-01"
    assert highs["big"] == 2**64 - 1  # a whole decimal exactly
    assert isinstance(lows["price"], float) and lows["price"] <= -0.1
    assert highs["score"] == 1.5  # NaN bounds nothing


def test_a_far_moment_with_a_part_of_a_millisecond_is_found(tmp_path: Path) -> None:
    """Found by the property below: a maximum cut to 6537-01-01 00:00:00.002 hid .002001 from
    delta-rs's filter; rounded up, every such moment is found."""
    moments = [datetime.datetime(6537, 1, 1, 0, 0, 0, 2001, tzinfo=UTC),
               datetime.datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)]  # fmt: skip
    for i, moment in enumerate(moments):
        rows = pa.table({"seen": pa.array([moment], TYPES["seen"])})
        assert found(table_of(tmp_path / str(i), rows), ds.field("seen") == rows["seen"][0]) == 1


def test_a_value_without_a_json_bound_leaves_the_file_without_bounds(tmp_path: Path) -> None:
    rows = pa.table({"id": pa.array([1, 2], pa.int64()), "score": [float("inf"), 0.5],
                     "owner": ["a", "b"]})  # fmt: skip
    stats = file_stats(rows)
    assert "minValues" not in stats and stats["nullCount"] == {"id": 0, "score": 0, "owner": 0}
    table = table_of(tmp_path / "t", rows)
    assert found(table, ds.field("score") == float("inf")) == 1
    assert found(table, ds.field("owner") == "b") == 1


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    texts=st.lists(st.one_of(st.none(), st.text(max_size=80)), min_size=1, max_size=6),
    moments=st.lists(
        st.one_of(st.none(), st.datetimes(timezones=st.just(UTC))), min_size=6, max_size=6
    ),  # fmt: skip
)
def test_any_text_or_moment_is_found(
    tmp_path_factory: pytest.TempPathFactory, texts: list[str | None],
    moments: list[datetime.datetime | None],
) -> None:  # fmt: skip
    rows = pa.table({
        "owner": pa.array(texts, pa.string()),
        "seen": pa.array(moments[: len(texts)], pa.timestamp("us", "UTC")),
    })  # fmt: skip
    table = table_of(tmp_path_factory.mktemp("t") / "t", rows)
    assert_every_value_found(table, rows)
