"""``pipeline.schema_changes`` in the Delta sink where the source cannot show it: a narrowing
whose new type cannot hold a value the replica has (MySQL outside strict mode clamps it; the
replica still holds the old value until the table is read again). ``evolve`` stops with a
sentence, ``try_evolve`` keeps the type with a warning and goes on, ``lenient`` keeps it."""

from __future__ import annotations

import logging
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from sparkcdc.core.errors import SinkError
from sparkcdc.core.schema import TableSchema
from sparkcdc.core.schema_policy import SchemaPolicy
from sparkcdc.sinks.delta.sink import DeltaSink
from sparkcdc.sources.mysql.schema.column_types import column
from tests.cases.envelopes import Changes

BIG = 2**40
WIDE = TableSchema("shop", "n", (column("id", "int"), column("v", "bigint")), primary_key=("id",))
NARROW = TableSchema("shop", "n", (column("id", "int"), column("v", "int")), primary_key=("id",))


def replica(lake: Path) -> pa.Table:
    return DeltaTable(str(lake / "shop" / "n")).to_pyarrow_table()


def narrowed(lake: Path, policy: str) -> DeltaSink:
    sink = DeltaSink(str(lake), "p", schema_changes=SchemaPolicy(policy))
    sink.write(Changes().schema(WIDE).change("c", WIDE, after={"id": 1, "v": BIG}).table(), 0)
    return sink


def test_evolve_stops_where_the_new_type_cannot_hold_a_value(tmp_path: Path) -> None:
    sink = narrowed(tmp_path, "evolve")
    batch = Changes(pos=2000).alter(WIDE, NARROW, "ALTER TABLE n MODIFY v INT").table()
    with pytest.raises(SinkError, match=r"cannot take a column's new type .*try_evolve"):
        sink.write(batch, 1)
    assert replica(tmp_path).schema.field("v").type == pa.int64()


def test_try_evolve_keeps_the_type_with_a_warning_and_goes_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    sink = narrowed(tmp_path, "try_evolve")
    batch = (Changes(pos=2000).alter(WIDE, NARROW, "ALTER TABLE n MODIFY v INT")
             .change("c", NARROW, after={"id": 2, "v": 5}))  # fmt: skip
    with caplog.at_level(logging.WARNING, "sparkcdc.sink"):
        sink.write(batch.table(), 1)
    assert "keeps its column types" in caplog.text and "try_evolve" in caplog.text
    table = replica(tmp_path)
    assert table.schema.field("v").type == pa.int64()
    assert sorted(table.column("v").to_pylist()) == [5, BIG]


@pytest.mark.parametrize("policy", ["lenient", "ignore"])
def test_lenient_and_ignore_keep_the_wider_type(tmp_path: Path, policy: str) -> None:
    sink = narrowed(tmp_path, policy)
    sink.write(Changes(pos=2000).alter(WIDE, NARROW, "ALTER TABLE n MODIFY v INT").table(), 1)
    assert replica(tmp_path).schema.field("v").type == pa.int64()


def test_evolve_narrows_where_every_value_fits(tmp_path: Path) -> None:
    sink = DeltaSink(str(tmp_path), "p", schema_changes=SchemaPolicy("evolve"))
    sink.write(Changes().schema(WIDE).change("c", WIDE, after={"id": 1, "v": 7}).table(), 0)
    sink.write(Changes(pos=2000).alter(WIDE, NARROW, "ALTER TABLE n MODIFY v INT").table(), 1)
    table = replica(tmp_path)
    assert table.schema.field("v").type == pa.int32() and table.column("v").to_pylist() == [7]
