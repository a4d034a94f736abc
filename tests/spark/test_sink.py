"""The Delta sink under a real local SparkSession: exact types, MERGE semantics, idempotency,
schema evolution and table-emptying DDL."""

from __future__ import annotations

import datetime as dt
from dataclasses import replace
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from sparkcdc.core.errors import SinkError
from sparkcdc.core.event import envelope_schema
from sparkcdc.sinks.delta.commits import OPERATION_KEY
from sparkcdc.sinks.delta.sink import DeltaSink
from sparkcdc.sources.mysql.offset import BinlogOffset
from sparkcdc.sources.mysql.schema.column_types import column
from tests.cases.envelopes import Changes
from tests.cases.schemas import ACCOUNTS, ALL_TYPES, ROW_JSON

pytestmark = pytest.mark.spark

UTC = dt.UTC

EXPECTED: dict[str, Any] = {
    "id": 1, "ti": -128, "tu": 255, "si": -32768, "mi": 16777215, "iu": 4294967295,
    "bi": -9223372036854775808, "bu": Decimal("18446744073709551615"),
    "d": Decimal("1234567890123456789012345678.0123456789"),
    "dwide": "12345678901234567890123456789012345.123456789012345678901234567890",
    "db": 2.2250738585072014e-308, "bits": Decimal("18446744073709551615"), "y": 2155,
    "s": "grüße 🎉",
    "j": '{"k": [1, 2]}', "e": "b", "st": "x,y", "bin": b"\x01\x00\x00\x00",
    "blob": b"\x00\x00\xff\x00", "day": None, "dtm": dt.datetime(9999, 12, 31, 23, 59, 59, 999999),
    "ts": dt.datetime(2038, 1, 19, 3, 14, 7, 999999, tzinfo=UTC), "tm": "-838:59:59.000000",
}  # fmt: skip


def write(spark: Any, sink: DeltaSink, changes: Changes, batch_id: int) -> None:
    table = changes.table()
    assert table.schema.equals(envelope_schema(BinlogOffset))
    sink(spark.createDataFrame(table), batch_id)


def rows(path: Path) -> list[dict[str, Any]]:
    return sorted(DeltaTable(str(path)).to_pyarrow_table().to_pylist(), key=lambda r: r["id"])


def test_every_type_converts_exactly(spark: Any, tmp_path: Path) -> None:
    sink = DeltaSink(str(tmp_path), "test")
    write(spark, sink, Changes().schema(ALL_TYPES).change("c", ALL_TYPES, after=ROW_JSON), 0)
    [replica] = rows(tmp_path / "shop" / "types")
    f = replica.pop("f")
    assert pa.scalar(f, pa.float32()).as_py() == pa.scalar(3.4028235e38, pa.float32()).as_py()
    assert replica == EXPECTED
    schema = DeltaTable(str(tmp_path / "shop" / "types")).schema().to_arrow()
    types = {field.name: str(field.type) for field in pa.schema(schema)}
    assert types["bu"] == "decimal128(20, 0)" and types["dtm"] == "timestamp[us]"
    assert types["ts"] == "timestamp[us, tz=UTC]" and types["day"] == "date32[day]"
    [log] = DeltaTable(str(tmp_path / "shop" / "types__changelog")).to_pyarrow_table().to_pylist()
    assert log["op"] == "c" and log["before"] is None
    assert {k: v for k, v in log["after"].items() if k != "f"} == EXPECTED
    files = list((tmp_path / "_sparkcdc" / "schemas").iterdir())
    assert [p.name for p in files] == [f"shop.types.{ALL_TYPES.schema_id()}.json"]


def test_merge_keeps_the_latest_change_per_key_and_deletes(spark: Any, tmp_path: Path) -> None:
    sink = DeltaSink(str(tmp_path), "test")
    a = ACCOUNTS
    batch = (
        Changes()
        .schema(a)
        .change("c", a, after={"id": 1, "owner": "ann", "balance": "1.00"})
        .change("c", a, after={"id": 2, "owner": "bob", "balance": "2.00"})
        .change("c", a, after={"id": 3, "owner": "cy", "balance": "3.00"})
        .change("u", a, {"id": 1, "owner": "ann", "balance": "1.00"},
                {"id": 1, "owner": "ann", "balance": "1.50"})
        .change("d", a, before={"id": 2, "owner": "bob", "balance": "2.00"})
        .change("u", a, {"id": 3, "owner": "cy", "balance": "3.00"},
                {"id": 30, "owner": "cy", "balance": "3.00"})
    )  # fmt: skip
    write(spark, sink, batch, 0)
    assert rows(tmp_path / "shop" / "accounts") == [
        {"id": 1, "owner": "ann", "balance": Decimal("1.50")},
        {"id": 30, "owner": "cy", "balance": Decimal("3.00")},
    ]
    later = (
        Changes(pos=5000)
        .change("d", a, before={"id": 1, "owner": "ann", "balance": "1.50"})
        .change("c", a, after={"id": 1, "owner": "ann again", "balance": "0.00"})
        .change("d", a, before={"id": 30, "owner": "cy", "balance": "3.00"})
    )
    write(spark, sink, later, 1)
    assert rows(tmp_path / "shop" / "accounts") == [
        {"id": 1, "owner": "ann again", "balance": Decimal("0.00")}
    ]
    log = DeltaTable(str(tmp_path / "shop" / "accounts__changelog")).to_pyarrow_table()
    assert sorted(log.column("op").to_pylist()) == sorted("cccudu" + "dcd")


def test_the_same_batch_id_again_writes_nothing_twice(spark: Any, tmp_path: Path) -> None:
    a = ACCOUNTS
    batch = Changes().schema(a).change("c", a, after={"id": 7, "owner": "x", "balance": "7.00"})
    first = DeltaSink(str(tmp_path), "pipeline-1")
    write(spark, first, batch, 3)
    replay = DeltaSink(str(tmp_path), "pipeline-1")  # a restarted pipeline replays batch 3
    write(spark, replay, batch, 3)
    assert replay.last_report is not None and replay.last_report.skipped == ["shop.accounts"]
    log = DeltaTable(str(tmp_path / "shop" / "accounts__changelog"))
    assert log.count() == 1 and log.transaction_version("pipeline-1") == 3
    assert len(rows(tmp_path / "shop" / "accounts")) == 1


def test_add_column_evolves_replica_and_change_log(spark: Any, tmp_path: Path) -> None:
    a = ACCOUNTS
    b = a.with_columns((*a.columns, column("note", "text")))
    sink = DeltaSink(str(tmp_path), "test")
    first = {"id": 1, "owner": "o", "balance": "1.00"}
    write(spark, sink, Changes().schema(a).change("c", a, after=first), 0)
    batch = (
        Changes(pos=2000)
        .change("c", a, after={"id": 2, "owner": "p", "balance": "2.00"})
        .schema(b, ddl="ALTER TABLE accounts ADD COLUMN note TEXT")
        .change("c", b, after={"id": 3, "owner": "q", "balance": "3.00", "note": "new"})
    )
    write(spark, sink, batch, 1)
    assert [r["note"] for r in rows(tmp_path / "shop" / "accounts")] == [None, None, "new"]
    log = DeltaTable(str(tmp_path / "shop" / "accounts__changelog")).to_pyarrow_table()
    notes = sorted((r["after"]["note"] or "") for r in log.to_pylist())
    assert notes == ["", "", "new"]


def test_truncate_then_insert_in_one_batch_keeps_only_later_rows(
    spark: Any, tmp_path: Path
) -> None:
    a = ACCOUNTS
    sink = DeltaSink(str(tmp_path), "test")
    first = {"id": 1, "owner": "o", "balance": "1.00"}
    write(spark, sink, Changes().schema(a).change("c", a, after=first), 0)
    batch = (
        Changes(pos=3000)
        .change("c", a, after={"id": 2, "owner": "p", "balance": "2.00"})
        .ddl("shop", "accounts", "TRUNCATE TABLE accounts", a)
        .change("c", a, after={"id": 3, "owner": "q", "balance": "3.00"})
    )
    write(spark, sink, batch, 1)
    assert [r["id"] for r in rows(tmp_path / "shop" / "accounts")] == [3]
    write(spark, sink, Changes(pos=4000).ddl("shop", "accounts", "DROP TABLE accounts"), 2)
    assert rows(tmp_path / "shop" / "accounts") == []
    log = DeltaTable(str(tmp_path / "shop" / "accounts__changelog")).to_pyarrow_table()
    ordered = sorted(log.to_pylist(), key=lambda r: r["source"]["position"])
    assert [r["op"] for r in ordered] == ["c", "c", "t", "c"]  # a DROP leaves no row
    [truncate] = [r for r in ordered if r["op"] == "t"]
    assert truncate["before"] is None and truncate["after"] is None
    assert (truncate["source"]["db"], truncate["source"]["table"]) == ("shop", "accounts")
    assert truncate["transaction"]["id"] == "0-1-1"  # the statement's own


def test_a_truncate_alone_is_one_t_row_written_once(spark: Any, tmp_path: Path) -> None:
    """A batch holding nothing of the table but its TRUNCATE empties the replica and writes
    the ``t`` row; the batch again (a replay) writes neither twice."""
    a = ACCOUNTS
    sink = DeltaSink(str(tmp_path), "test")
    first = {"id": 1, "owner": "o", "balance": "1.00"}
    write(spark, sink, Changes().schema(a).change("c", a, after=first), 0)
    truncate = Changes(pos=3000).ddl("shop", "accounts", "TRUNCATE TABLE accounts", a)
    for _ in range(2):
        write(spark, sink, truncate, 1)
    assert rows(tmp_path / "shop" / "accounts") == []
    log = DeltaTable(str(tmp_path / "shop" / "accounts__changelog")).to_pyarrow_table()
    assert sorted(log.column("op").to_pylist()) == ["c", "t"]


def test_inserts_of_new_keys_are_appended_and_others_merged(spark: Any, tmp_path: Path) -> None:
    """A batch of inserts whose keys no replica file can hold is appended (no MERGE), still once
    per batch id; inserts into the replica's key range, and updates, are merged."""
    a = ACCOUNTS
    sink = DeltaSink(str(tmp_path), "p")
    replica = tmp_path / "shop" / "accounts"
    history = lambda: [  # noqa: E731  (a MERGE done as a copy-on-write counts as MERGE)
        h.get(OPERATION_KEY, h["operation"]) for h in reversed(DeltaTable(str(replica)).history())
    ]
    first = Changes().schema(a)
    for i in range(1, 4):
        first.change("c", a, after={"id": i, "owner": f"o{i}", "balance": "1.00"})
    write(spark, sink, first, 0)
    write(spark, DeltaSink(str(tmp_path), "p"), first, 0)  # replayed: nothing twice
    assert history()[-1] == "WRITE" and "MERGE" not in history()
    inside = Changes(pos=5000).change("c", a, after={"id": 2, "owner": "again", "balance": "2.00"})
    write(spark, sink, inside, 1)  # a key in the replica's range: merged (upserts)
    assert history()[-1] == "MERGE"
    beyond = Changes(pos=6000).change("c", a, after={"id": 9, "owner": "n", "balance": "0"})
    write(spark, sink, beyond, 2)
    assert history()[-1] == "WRITE"
    assert [r["id"] for r in rows(replica)] == [1, 2, 3, 9] and rows(replica)[1]["owner"] == "again"


def test_a_change_without_images_stops_the_batch(spark: Any, tmp_path: Path) -> None:
    """An insert whose image is neither JSON text nor among the batch's typed images (a lost
    image file) is an error, not a replica row of nulls."""
    a = ACCOUNTS
    batch = Changes().schema(a).change("c", a, after={"id": 1, "owner": "x", "balance": "1.00"})
    table = batch.table()
    at = table.schema.get_field_index("after")
    ops, afters = table.column("op").to_pylist(), table.column("after").to_pylist()
    lost = pa.array([None if op == "c" else v for op, v in zip(ops, afters, strict=True)])
    broken = table.set_column(at, "after", lost)
    sink = DeltaSink(str(tmp_path), "p")
    with pytest.raises(SinkError, match="1 changes to shop.accounts .* neither JSON nor typed"):
        sink.write(broken, 0)
    assert rows(tmp_path / "shop" / "accounts") == []  # announced, created, nothing in it


def test_a_failing_table_stops_the_batch_once_the_other_tables_are_written(tmp_path: Path) -> None:
    """Tables of a batch are written several at a time: one table's error stops the batch, the
    other tables' commits stand, and the batch again (fixed) writes the failed table only."""
    tables = [replace(ACCOUNTS, table=f"accounts_{i}") for i in range(6)]
    good = Changes()
    for i, t in enumerate(tables):
        good.schema(t).change("c", t, after={"id": i, "owner": f"o{i}", "balance": "1.00"})
    table = good.table()
    at = table.schema.get_field_index("after")
    names, afters = table.column("table").to_pylist(), table.column("after").to_pylist()
    lost = pa.array([None if n == "accounts_3" else v for n, v in zip(names, afters, strict=True)])
    sink = DeltaSink(str(tmp_path), "p")
    with pytest.raises(SinkError, match="accounts_3"):
        sink.write(table.set_column(at, "after", lost), 0)
    replica = tmp_path / "shop"
    assert [len(rows(replica / t.table)) for t in tables] == [1, 1, 1, 0, 1, 1]
    report = DeltaSink(str(tmp_path), "p").write(table, 0)
    assert report.tables == ["shop.accounts_3"] and len(report.skipped) == 5
    assert [len(rows(replica / t.table)) for t in tables] == [1] * 6
