"""What each DDL does to the rows a table holds: the parser's DEFAULT literals, the MySQL/MariaDB
decision per ALTER (fill, copy, nulls, resnapshot), the type changes that keep every value,
the incremental snapshot a schema change queues, and the sink's composition of effects."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from sparkcdc.core.chunk import KeyColumn
from sparkcdc.core.envelope import EnvelopeBuilder
from sparkcdc.core.errors import SinkError
from sparkcdc.core.existing_rows import ExistingRows
from sparkcdc.core.schema import Column, TableSchema
from sparkcdc.core.type_change import type_change, value_preserving
from sparkcdc.sinks.changes.effects import Const, Effect, IfNull, Ref, compose
from sparkcdc.snapshot.incremental import IncrementalState, Request, Run, resnapshot
from sparkcdc.snapshot.splitter import SplitterState
from sparkcdc.sources.mysql.ddl.parser import parse
from sparkcdc.sources.mysql.ddl.statements import AlterTable, Default
from sparkcdc.sources.mysql.offset import BinlogOffset
from sparkcdc.sources.mysql.schema.column_types import column
from sparkcdc.sources.mysql.schema.tracker import SchemaTracker
from sparkcdc.spark.incremental.window_events import rewritten
from sparkcdc.verify.replica import compare_type, in_types, read_replica

TABLE = (
    "CREATE TABLE t (id INT PRIMARY KEY, a INT, m DECIMAL(10,3), s VARCHAR(10), n INT NULL,"
    " e ENUM('x','y'), c CHAR(4) CHARACTER SET latin1, ts TIMESTAMP(3) NULL, d DATE NULL,"
    " b BINARY(3) NULL, j JSON NULL)"
)


def defaults(sql: str) -> list[Default | None]:
    stmt = parse(f"ALTER TABLE t {sql}", "d")
    assert isinstance(stmt, AlterTable)
    return [a.column.default for a in stmt.actions if a.column is not None]


@pytest.mark.parametrize(
    ("clause", "default"),
    [
        ("ADD a INT DEFAULT -7", Default("number", "-7")),
        ("ADD a DOUBLE DEFAULT -1.5e-3 CHECK (a < 0)", Default("number", "-1.5e-3")),
        ("ADD a VARCHAR(9) DEFAULT 'it''s' 'x' COMMENT 'c'", Default("string", "it'sx")),
        ("ADD a VARCHAR(9) DEFAULT _utf8mb4'x' NOT NULL", Default("string", "x")),
        ("ADD a DATE DEFAULT DATE '2024-02-29'", Default("string", "2024-02-29")),
        ("ADD a BIT(3) DEFAULT b'101'", Default("bits", bits=b"\x05")),
        ("ADD a BINARY(2) DEFAULT x'ff00'", Default("bits", bits=b"\xff\x00")),
        ("ADD a INT DEFAULT 0x1F", Default("bits", bits=b"\x1f")),
        ("ADD a CHAR(2) DEFAULT _latin1 x'4142'", Default("bits", "latin1", b"AB")),
        ("ADD a BOOL DEFAULT TRUE", Default("boolean", "1")),
        ("ADD a INT DEFAULT NULL", Default("null")),
        ("ADD a TEXT DEFAULT ('abc')", Default("string", "abc")),
        ("ADD a INT DEFAULT (1 + 2)", Default("expression", "(1 + 2)")),
        ("ADD a INT DEFAULT 1 + 1 NOT NULL", Default("expression", "1 + 1")),
        ("ADD a CHAR(36) DEFAULT uuid()", Default("expression", "uuid()")),
        ("ADD a DATETIME(6) DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6)",
         Default("expression", "CURRENT_TIMESTAMP(6)")),
        ("ADD a INT", None),
    ],
)  # fmt: skip
def test_the_parser_keeps_each_default(clause: str, default: Default | None) -> None:
    assert defaults(clause) == [default]


def test_generated_and_auto_increment_columns_are_told_apart() -> None:
    stmt = parse("ALTER TABLE t ADD g INT AS (a * 2) STORED, ADD h INT GENERATED ALWAYS AS "
                 "(a) VIRTUAL, ADD i BIGINT NOT NULL AUTO_INCREMENT, ADD k INT", "d")  # fmt: skip
    assert isinstance(stmt, AlterTable)
    cols = [a.column for a in stmt.actions if a.column is not None]
    assert [(c.generated, c.auto_increment) for c in cols] == [
        (True, False), (True, False), (False, True), (False, False)]  # fmt: skip


def effect(*alters: str) -> dict[str, Any]:
    t = SchemaTracker({})
    t.apply_ddl("d", TABLE)
    found: dict[str, Any] = {}
    for sql in alters:
        [change] = t.apply_ddl("d", sql)
        found = change.existing.to_json()
    return found


@pytest.mark.parametrize(
    ("alter", "expected"),
    [
        ("ADD pts INT NOT NULL DEFAULT 7, ADD tag VARCHAR(10) DEFAULT 'x'",
         {"fill": {"pts": 7, "tag": "x"}}),
        ("ADD z DECIMAL(6,2) DEFAULT 2.456, ADD y DECIMAL(6,1) DEFAULT '-0.04'",
         {"fill": {"z": "2.46", "y": "0.0"}}),
        ("ADD z DATETIME(3) DEFAULT '2024-01-02 03:04:05.5', ADD y DATE DEFAULT '0000-00-00'",
         {"fill": {"z": "2024-01-02T03:04:05.500000"}}),
        ("ADD z CHAR(4) DEFAULT 'ab  ', ADD y SET('p','q','r') DEFAULT 'r,P'",
         {"fill": {"z": "ab", "y": "p,r"}}),
        ("ADD z BINARY(3) DEFAULT 'a', ADD y TIME DEFAULT '-1:02:03'",
         {"fill": {"z": "YQAA", "y": "-01:02:03.000000"}}),
        ("ADD z INT NOT NULL, ADD y ENUM('q','r') NOT NULL, ADD x VARCHAR(3) NOT NULL,"
         " ADD w BINARY(2) NOT NULL, ADD v DATE NOT NULL",
         {"fill": {"z": 0, "y": "q", "x": "", "w": "AAA="}}),
        ("ADD z INT NULL, ADD y INT DEFAULT NULL", {}),
        ("ADD z DATETIME DEFAULT CURRENT_TIMESTAMP", "resnapshot"),
        ("ADD z INT DEFAULT (1 + 1)", "resnapshot"),
        ("ADD z CHAR(36) DEFAULT uuid()", "resnapshot"),
        ("ADD z TIMESTAMP DEFAULT '2024-01-01 00:00:00'", "resnapshot"),  # the session's zone
        ("ADD z TIMESTAMP", "resnapshot"),  # explicit_defaults_for_timestamp decides
        ("ADD z INT AS (a + 1) VIRTUAL", "resnapshot"),
        ("ADD z BIGINT NOT NULL AUTO_INCREMENT UNIQUE", "resnapshot"),
        ("RENAME COLUMN a TO a2", {"copy": {"a2": "a"}}),
        ("CHANGE a a2 BIGINT", {"copy": {"a2": "a"}}),
        ("CHANGE a a2 TINYINT", "resnapshot"),
        ("MODIFY a BIGINT, MODIFY s VARCHAR(20), MODIFY m DECIMAL(12,3), MODIFY n INT NULL", {}),
        ("MODIFY m DECIMAL(10,1)", "resnapshot"),
        ("MODIFY s VARCHAR(4)", "resnapshot"),
        ("MODIFY s INT", "resnapshot"),
        ("MODIFY c CHAR(4) CHARACTER SET utf8mb4", {}),
        ("MODIFY s VARCHAR(10) CHARACTER SET latin1", "resnapshot"),
        ("MODIFY ts TIMESTAMP(0) NULL", "resnapshot"),
        ("MODIFY n INT NOT NULL, MODIFY e ENUM('x','y','z') NOT NULL, MODIFY b BINARY(3) NOT NULL",
         {"nulls": {"n": 0, "e": "", "b": "AAAA"}}),
        ("MODIFY d DATE NOT NULL", {}),
        ("MODIFY ts TIMESTAMP(3) NOT NULL", "resnapshot"),
        ("RENAME COLUMN a TO x, RENAME COLUMN n TO a, RENAME COLUMN x TO n",
         {"copy": {"a": "n", "n": "a"}}),
        ("ADD COLUMN z INT DEFAULT 5, RENAME COLUMN z TO w", {"fill": {"w": 5}}),
        ("ADD INDEX (a), ALTER COLUMN a SET DEFAULT 3, ENGINE=InnoDB", None),
    ],
)  # fmt: skip
def test_each_alter_says_what_it_did_to_existing_rows(alter: str, expected: Any) -> None:
    if expected is None:
        t = SchemaTracker({})
        t.apply_ddl("d", TABLE)
        assert t.apply_ddl("d", f"ALTER TABLE t {alter}") == []  # the schema stays: no change
        return
    found = effect(f"ALTER TABLE t {alter}")
    if expected == "resnapshot":
        assert set(found) <= {"resnapshot", "fill"} and found["resnapshot"], found
    else:
        assert found == expected


def test_a_resnapshot_names_what_the_change_may_do() -> None:
    found = effect("ALTER TABLE t MODIFY m DECIMAL(10,1), ADD at DATETIME DEFAULT NOW()")
    assert found["resnapshot"] == (
        "column m: decimal(10,3) to decimal(10,1) may round, truncate or convert values; "
        "column at: DEFAULT NOW() gives each row a value the log does not hold"
    )


def test_a_renamed_table_and_a_statement_not_followed_are_read_again() -> None:
    t = SchemaTracker({}, loader=lambda db, table: column_schema(db, table))
    t.apply_ddl("d", TABLE)
    [renamed] = t.apply_ddl("d", "RENAME TABLE t TO u")
    assert renamed.kind == "rename" and renamed.existing.resnapshot == (
        "the table was renamed from d.t"
    )
    [unknown] = t.apply_ddl("d", "ALTER TABLE u FROB THE COLUMNS")
    assert unknown.kind == "unknown" and unknown.existing.resnapshot


def column_schema(db: str, table: str) -> Any:
    return TableSchema(db, table, (column("id", "int", nullable=False),), primary_key=("id",))


@pytest.mark.parametrize(
    ("old", "new", "kept"),
    [
        (column("a", "int"), column("a", "bigint"), True),
        (column("a", "int", unsigned=True), column("a", "int"), False),
        (column("a", "int", unsigned=True), column("a", "bigint"), True),
        (column("a", "mediumint"), column("a", "int"), True),
        (column("a", "int"), column("a", "mediumint"), False),
        (column("a", "int"), column("a", "decimal", precision=10, scale=0), True),
        (column("a", "int"), column("a", "decimal", precision=11, scale=2), False),
        (column("a", "int"), column("a", "double"), True),
        (column("a", "bigint"), column("a", "double"), False),
        (column("a", "bit", length=3), column("a", "bit", length=8), True),
        (column("a", "decimal", precision=10, scale=2),
         column("a", "decimal", precision=12, scale=3), True),
        (column("a", "decimal", precision=10, scale=3),
         column("a", "decimal", precision=10, scale=1), False),
        (column("a", "float"), column("a", "double"), True),
        (column("a", "double"), column("a", "float"), False),
        (column("a", "varchar", length=10, charset="utf8mb4"),
         column("a", "varchar", length=20, charset="utf8mb4"), True),
        (column("a", "varchar", length=10, charset="utf8mb4"),
         column("a", "char", length=10, charset="utf8mb4"), False),
        (column("a", "char", length=10, charset="utf8mb4"),
         column("a", "varchar", length=10, charset="utf8mb4"), True),
        (column("a", "varchar", length=100, charset="utf8mb4"),
         column("a", "tinytext", length=255, charset="utf8mb4"), False),
        (column("a", "varchar", length=60, charset="utf8mb4"),
         column("a", "tinytext", length=255, charset="utf8mb4"), True),
        (column("a", "varchar", length=10, charset="latin1"),
         column("a", "varchar", length=10, charset="utf8mb4"), True),
        (column("a", "varchar", length=10, charset="utf8mb4"),
         column("a", "varchar", length=10, charset="latin1"), False),
        (column("a", "enum", values=("x", "y"), charset="utf8mb4"),
         column("a", "enum", values=("y", "x", "z"), charset="utf8mb4"), True),
        (column("a", "set", values=("x", "y"), charset="utf8mb4"),
         column("a", "set", values=("y", "x"), charset="utf8mb4"), False),
        (column("a", "enum", values=("xx", "y"), charset="utf8mb4"),
         column("a", "varchar", length=2, charset="utf8mb4"), True),
        (column("a", "binary", length=4), column("a", "varbinary", length=4), True),
        (column("a", "binary", length=4), column("a", "binary", length=8), False),
        (column("a", "varbinary", length=4), column("a", "blob", length=65535), True),
        (column("a", "datetime", fsp=0), column("a", "datetime", fsp=3), True),
        (column("a", "datetime", fsp=3), column("a", "datetime", fsp=0), False),
        (column("a", "datetime"), column("a", "timestamp"), False),
        (column("a", "date"), column("a", "datetime"), False),
        (column("a", "json"), column("a", "longtext", length=4294967295, charset="utf8mb4"),
         False),
    ],
)  # fmt: skip
def test_type_changes_that_keep_every_value(old: Any, new: Any, kept: bool) -> None:
    assert value_preserving(old, new) is kept, type_change(old, new)


def test_postgresql_types_follow_the_same_rule() -> None:
    def pg(data_type: str, logical: str, **attrs: Any) -> Any:
        return Column("a", data_type, logical=logical, **attrs)

    assert value_preserving(pg("int4", "int32"), pg("int8", "int64"))
    assert not value_preserving(pg("int8", "int64"), pg("int4", "int32"))
    assert value_preserving(pg("varchar", "string", length=5), pg("text", "string"))
    assert not value_preserving(pg("text", "string"), pg("varchar", "string", length=5))
    assert not value_preserving(pg("bpchar", "string", length=2), pg("bpchar", "string", length=4))
    assert value_preserving(pg("numeric", "decimal(10,2)", precision=10, scale=2),
                            pg("numeric", "string"))  # fmt: skip
    assert not value_preserving(pg("numeric", "string"), pg("numeric", "decimal(38,10)",
                                precision=38, scale=10))  # fmt: skip


def running(table: str) -> Run:
    key = KeyColumn("id", "int", logical="int32")
    return Run(Request(table, "id > 3", "s0"), (key,), (9,), SplitterState(), rows=40)


def test_a_schema_change_queues_the_table_and_restarts_its_run() -> None:
    state = resnapshot(IncrementalState(queue=(Request("shop.b"),)), "shop.a", "m rounded")
    assert [r.table for r in state.queue] == ["shop.b", "shop.a"]
    assert state.queue[1].origin == "schema-change" and "m rounded" in str(state.queue[1].reason)
    assert [(n[1], n[2]["type"]) for n in state.notices] == [("a", "queued")]
    again = resnapshot(state.settled(), "shop.a", "later")  # queued, not started: once
    assert [r.table for r in again.queue] == ["shop.b", "shop.a"]
    busy = IncrementalState(run=running("shop.a"), queue=(Request("shop.b"),))
    restarted = resnapshot(busy, "shop.a", "m rounded")
    assert restarted.run is None and [r.table for r in restarted.queue] == ["shop.a", "shop.b"]
    assert [n[2]["type"] for n in restarted.notices] == ["stopped", "queued"]
    saved = IncrementalState.from_json(restarted.to_json())
    assert saved.queue == restarted.queue  # the reason rides in the offset


def test_the_stream_reader_finds_the_schema_changes_that_rewrote_rows() -> None:
    builder = EnvelopeBuilder(BinlogOffset)
    for i, (table, existing) in enumerate(
        [("t", ExistingRows(fill={"a": 1})), ("u", ExistingRows(resnapshot="m rounded"))]
    ):
        change = json.dumps({"kind": "alter", "existing": existing.to_json()})
        builder.extend([("s", None, None, change)], "d", table, "x", position=f"{i:020d}",
                       index=0, own=(1, "f", i, None, ""), ts_ms=0, transaction="",
                       total_order=1, data_collection_order=1)  # fmt: skip
    assert rewritten([builder.build()]) == [("d.u", "m rounded")]


def test_effects_compose_in_log_order() -> None:
    seven = Const(pa.array([7], pa.int32()))
    zero = Const(pa.array([0], pa.int32()))
    fill_then_rename = [Effect(("d", "t"), 1, {"x": seven}), Effect(("d", "t"), 2, {"y": Ref("x")})]
    assert compose(fill_then_rename) == {"x": seven, "y": seven}
    swap = [Effect(("d", "t"), 1, {"a": Ref("b"), "b": Ref("a")})]
    assert compose(swap + swap) == {}  # swapped twice: every column as it was
    nulls = [Effect(("d", "t"), 1, {"b": Ref("a")}), Effect(("d", "t"), 2, {"b": IfNull(Ref("b"),
             zero)})]  # fmt: skip
    assert compose(nulls) == {"b": IfNull(Ref("a"), zero)}


def test_verify_compares_a_retyped_column_in_a_type_that_holds_both(tmp_path: Path) -> None:
    held = pa.table({"id": pa.array([1], pa.int32()), "m": pa.array([Decimal("2.500")],
                     pa.decimal128(10, 3)), "s": ["abcd"]})  # fmt: skip
    write_deltalake(str(tmp_path), held)
    now = TableSchema("d", "t", (column("id", "bigint"), column("m", "decimal", precision=10,
                      scale=1), column("s", "varchar", length=4)), ("id",))  # fmt: skip
    replica = read_replica(DeltaTable(str(tmp_path)).to_pyarrow_table(), now, str(tmp_path))
    assert [str(f.type) for f in replica.schema] == ["int64", "decimal128(12, 3)", "string"]
    source = pa.table({"id": pa.array([1], pa.int64()), "m": pa.array([Decimal("2.5")],
                       pa.decimal128(10, 1)), "s": ["abcd"]})  # fmt: skip
    assert in_types(source, replica.schema).equals(replica)
    assert compare_type(pa.decimal128(10, 1), pa.decimal128(10, 3)) == pa.decimal128(12, 3)
    assert compare_type(pa.int64(), pa.decimal128(5, 2)) == pa.decimal128(21, 2)
    assert compare_type(pa.timestamp("us"), pa.date32()) is None
    wrong = TableSchema("d", "t", (column("id", "bigint"), column("m", "date"),
                        column("s", "varchar")), ("id",))  # fmt: skip
    with pytest.raises(SinkError, match=r"d\.t\.m is decimal128\(10, 3\) .* cannot be compared"):
        read_replica(DeltaTable(str(tmp_path)).to_pyarrow_table(), wrong, str(tmp_path))
