"""Pure tests of the core value types: offsets, schemas, the change-event envelope."""

from __future__ import annotations

import pickle

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from sparkcdc.core.envelope import EnvelopeBuilder
from sparkcdc.core.errors import ConfigError, LogPositionGone, SparkCDCError
from sparkcdc.core.event import COMMON_SOURCE_FIELDS, envelope_ddl, envelope_schema
from sparkcdc.core.schema import TableSchema
from sparkcdc.sources.mysql.offset import BinlogOffset, file_sequence
from sparkcdc.sources.mysql.schema.column_types import column

offsets = st.builds(
    BinlogOffset,
    file=st.integers(1, 999999).map(lambda n: f"mysql-bin.{n:06d}"),
    pos=st.integers(4, 2**32),
    gtid=st.sampled_from(["", "0-1-5", "0-1-9,1-2-3"]),
    skip=st.integers(0, 10**6),
)


@given(offsets, offsets)
def test_offset_order_is_file_then_pos_then_skip(a: BinlogOffset, b: BinlogOffset) -> None:
    key_a = (file_sequence(a.file), a.pos, a.skip)
    key_b = (file_sequence(b.file), b.pos, b.skip)
    assert (a < b) == (key_a < key_b)
    assert (a == b) == (a.key == b.key)


@given(offsets)
def test_offset_json_round_trip(a: BinlogOffset) -> None:
    back = BinlogOffset.from_json(a.to_json())
    assert back == a and back.gtid == a.gtid


def test_offset_from_bad_json_names_the_value() -> None:
    with pytest.raises(ValueError, match="not a binlog offset"):
        BinlogOffset.from_json({"pos": 4})
    with pytest.raises(ValueError, match="not a binlog offset"):
        BinlogOffset.from_json({"file": "binlog", "pos": 4})


def test_file_order_is_numeric_not_lexical() -> None:
    assert BinlogOffset("mysql-bin.999999", 4) < BinlogOffset("mysql-bin.1000000", 4)


SCHEMA = TableSchema(
    db="shop",
    table="orders",
    columns=(
        column("id", "bigint", unsigned=True, nullable=False),
        column("price", "decimal", precision=65, scale=30),
        column("small", "decimal", precision=10, scale=2),
        column("status", "enum", values=("new", "it's", "a,b")),
        column("at", "datetime", fsp=6),
        column("ts", "timestamp", fsp=3),
        column("t", "time"),
        column("raw", "varbinary", length=16),
        column("flag", "bit", length=1),
        column("tiny", "tinyint", unsigned=True),
    ),
    primary_key=("id",),
)


def test_type_mapping_is_lossless() -> None:
    assert [c.spark_type() for c in SCHEMA.columns] == [
        "decimal(20,0)",
        "string",
        "decimal(10,2)",
        "string",
        "timestamp_ntz",
        "timestamp",
        "string",
        "binary",
        "bigint",
        "smallint",
    ]


def test_schema_json_round_trip_and_id() -> None:
    back = TableSchema.from_json(SCHEMA.to_json())
    assert back == SCHEMA
    assert back.schema_id() == SCHEMA.schema_id()
    changed = SCHEMA.with_columns(SCHEMA.columns[:-1])
    assert changed.schema_id() != SCHEMA.schema_id()


def test_unknown_type_names_the_column() -> None:
    with pytest.raises(ValueError, match="'g' has type 'geometry'"):
        column("g", "geometry").spark_type()


def test_envelope_builder_builds_the_envelope_schema() -> None:
    b = EnvelopeBuilder(BinlogOffset)
    changes = [("c", f"[{i}]", None, f'{{"id":{i}}}') for i in range(3)]
    b.extend(
        changes, "shop", "orders", "abc", position="0000000001:0000000100", index=0,
        own=(1, "mysql-bin.000001", 100, None, "0-1-7"), ts_ms=5, transaction="0-1-7",
        total_order=1, data_collection_order=1,
    )  # fmt: skip
    batch = b.build()
    assert batch.schema == envelope_schema(BinlogOffset)
    assert batch.num_rows == 3
    source = batch.column("source")
    assert source.field("row").to_pylist() == [0, 1, 2]
    assert source.field("position").to_pylist() == [
        f"0000000001:0000000100:000000000{i}" for i in range(3)
    ]
    assert source.field("db").to_pylist() == ["shop"] * 3
    assert source.field("schema").to_pylist() == [None] * 3
    assert batch.column("transaction").field("id").to_pylist() == ["0-1-7"] * 3
    assert batch.column("transaction").field("total_order").to_pylist() == [1, 2, 3]
    assert pa.Table.from_batches([batch]).column("after").to_pylist()[2] == '{"id":2}'


def test_the_source_struct_is_the_common_fields_then_the_sources_own() -> None:
    names = [f.name for f in envelope_schema(BinlogOffset).field("source").type]
    assert names[: len(COMMON_SOURCE_FIELDS)] == [
        "db",
        "schema",
        "table",
        "ts_ms",
        "snapshot",
        "position",
    ]
    assert names[len(COMMON_SOURCE_FIELDS) :] == ["server_id", "file", "pos", "row", "gtid"]
    assert "`source` STRUCT<`db`: STRING" in envelope_ddl(BinlogOffset)


def test_errors_survive_pickling_with_their_fields() -> None:
    err = LogPositionGone("binlog file x was purged; restart", file="x")
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is LogPositionGone and str(back) == str(err) and back.fields == {"file": "x"}
    assert isinstance(ConfigError("k"), SparkCDCError)


def _record(b: EnvelopeBuilder, first: int, n: int, typed: TableSchema | None) -> None:
    if typed is None:
        changes = [("c", f"[{i}]", None, f'{{"id":{i}}}') for i in range(first, first + n)]
    else:
        changes = [("c", f"[{i}]", None, (i,)) for i in range(first, first + n)]  # type: ignore[misc]
    b.extend(
        changes, "shop", "orders", "abc", position=f"0000000001:{first:010d}", index=0,
        own=(1, "mysql-bin.000001", first, None, "0-1-7"), ts_ms=5, transaction="0-1-7",
        total_order=first + 1, data_collection_order=first + 1, images=typed,
    )  # fmt: skip


def test_a_builder_split_at_a_record_boundary_equals_two_builders() -> None:
    schema = TableSchema("shop", "orders", (column("id", "int"),), ("id",))
    plan = [(0, 2, schema), (2, 3, None), (5, 1, schema), (6, 4, schema), (10, 2, None)]
    whole, head, tail = (EnvelopeBuilder(BinlogOffset) for _ in range(3))
    for first, n, typed in plan:
        _record(whole, first, n, typed)
        _record(head if first < 6 else tail, first, n, typed)
    rest = whole.split(6)
    with pytest.raises(ValueError, match="between two log records"):
        EnvelopeBuilder.split(rest, 1)
    for got, want in ((whole, head), (rest, tail)):
        batch, expected = got.build(), want.build()
        assert batch.equals(expected)
        assert [t.rows.to_pylist() for t in got.typed_images(batch)] == [
            t.rows.to_pylist() for t in want.typed_images(expected)
        ]
