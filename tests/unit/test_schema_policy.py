"""``pipeline.schema_changes``: the kinds of change one schema row holds, the replica's columns
each policy plans for them, type widening, and the setting's values."""

from __future__ import annotations

import pyarrow as pa
import pytest

from sparkcdc.config.schema_changes import as_schema_changes
from sparkcdc.core.errors import ConfigError
from sparkcdc.core.existing_rows import ExistingRows
from sparkcdc.core.schema import TableSchema
from sparkcdc.core.schema_policy import SchemaPolicy, column_changes
from sparkcdc.sinks.changes.replica_plan import (
    ChangeRefused,
    common_type,
    plan_replica,
    refuse_changes,
    type_target,
    widens,
)
from sparkcdc.sources.mysql.schema.column_types import column

OLD = TableSchema(
    "shop", "orders",
    (column("id", "int", nullable=False), column("note", "varchar", length=10),
     column("amount", "decimal", precision=10, scale=2), column("gone", "int")),
    primary_key=("id",),
)  # fmt: skip
NEW = TableSchema(
    "shop", "orders",
    (column("id", "bigint", nullable=False), column("remark", "varchar", length=10),
     column("amount", "decimal", precision=10, scale=2, nullable=False), column("tag", "int")),
    primary_key=("id",),
)  # fmt: skip
RENAME = ExistingRows(copy={"remark": "note"})
NONE = ExistingRows()
REPLICA = [pa.field("id", pa.int32()), pa.field("note", pa.string()),
           pa.field("amount", pa.decimal128(10, 2)), pa.field("gone", pa.int32())]  # fmt: skip


def kinds(old: TableSchema, new: TableSchema, existing: ExistingRows = NONE) -> set:
    return {(c.kind, c.column) for c in column_changes(old, new, existing)}


def test_one_alter_is_told_apart_into_its_kinds() -> None:
    assert kinds(OLD, NEW, RENAME) == {
        ("alter_column_type", "id"), ("rename_column", "remark"), ("add_column", "tag"),
        ("drop_column", "gone"), ("alter_column_nullability", "amount"),
    }  # fmt: skip
    rekeyed = TableSchema("shop", "orders", OLD.columns, primary_key=("id", "note"))
    assert kinds(OLD, rekeyed) == {("alter_primary_key", "")}
    assert kinds(OLD, OLD) == set()  # a default, an index: nothing the replica holds
    assert column_changes(None, NEW, ExistingRows()) == []  # a new table


def test_a_swap_of_two_columns_is_two_renames_and_drops_nothing() -> None:
    swapped = ExistingRows(copy={"note": "gone", "gone": "note"})
    assert kinds(OLD, OLD, swapped) == {("rename_column", "note"), ("rename_column", "gone"),
                                        ("alter_column_type", "note"),
                                        ("alter_column_type", "gone")}  # fmt: skip


def test_a_varchar_made_longer_is_a_type_change_the_replica_does_not_see() -> None:
    longer = TableSchema("shop", "orders", (OLD.columns[0], column("note", "varchar", length=99),
                                            *OLD.columns[2:]), primary_key=("id",))  # fmt: skip
    assert kinds(OLD, longer) == {("alter_column_type", "note")}
    plan = plan_replica(REPLICA, longer, column_changes(OLD, longer, ExistingRows()),
                        SchemaPolicy("evolve"))  # fmt: skip
    assert list(plan.columns) == REPLICA and not plan.retyped


def plan(policy: SchemaPolicy) -> tuple[dict[str, pa.DataType], list[str], list[str]]:
    made = plan_replica(REPLICA, NEW, column_changes(OLD, NEW, RENAME), policy)
    return ({f.name: f.type for f in made.columns}, [f.name for f, _ in made.retyped],
            list(made.dropped))  # fmt: skip


def test_evolve_widens_adds_and_drops_what_the_source_dropped_or_renamed() -> None:
    columns, retyped, dropped = plan(SchemaPolicy("evolve"))
    assert columns == {"id": pa.int64(), "note": pa.string(), "amount": pa.decimal128(10, 2),
                       "gone": pa.int32(), "remark": pa.string(), "tag": pa.int32()}  # fmt: skip
    assert retyped == ["id"] and dropped == ["note", "gone"]


def test_lenient_keeps_what_the_source_dropped() -> None:
    columns, retyped, dropped = plan(SchemaPolicy("lenient"))
    assert list(columns) == ["id", "note", "amount", "gone", "remark", "tag"]
    assert columns["id"] == pa.int64() and retyped == ["id"] and dropped == []


def test_ignore_keeps_the_replica_as_it_was() -> None:
    columns, retyped, dropped = plan(SchemaPolicy("ignore"))
    assert columns == {f.name: f.type for f in REPLICA}
    assert retyped == [] and dropped == []


def test_a_kind_of_its_own_overrides_the_default() -> None:
    policy = SchemaPolicy("evolve", {"drop_column": "lenient", "add_column": "ignore"})
    columns, _, dropped = plan(policy)
    assert "tag" not in columns and "remark" in columns and dropped == ["note"]


def test_exception_refuses_with_a_sentence_naming_the_setting() -> None:
    changes = column_changes(OLD, NEW, RENAME)
    with pytest.raises(ChangeRefused, match=r"pipeline.schema_changes: exception.*evolve"):
        refuse_changes("shop.orders", changes, SchemaPolicy("exception"), "ALTER …")
    only = SchemaPolicy("lenient", {"drop_column": "exception"})
    with pytest.raises(ChangeRefused, match=r"drop_column: column gone dropped"):
        refuse_changes("shop.orders", changes, only, "ALTER …")
    refuse_changes("shop.orders", changes, SchemaPolicy("lenient"), "ALTER …")


@pytest.mark.parametrize(
    ("old", "new", "widening"),
    [
        (pa.int8(), pa.int16(), True), (pa.int32(), pa.int64(), True),
        (pa.int64(), pa.int32(), False), (pa.uint32(), pa.int64(), True),
        (pa.uint32(), pa.int32(), False), (pa.int32(), pa.uint64(), False),
        (pa.float32(), pa.float64(), True), (pa.float64(), pa.float32(), False),
        (pa.int32(), pa.float64(), True), (pa.int64(), pa.float64(), False),
        (pa.int32(), pa.decimal128(12, 2), True), (pa.int32(), pa.decimal128(10, 2), False),
        (pa.decimal128(10, 2), pa.decimal128(12, 2), True),
        (pa.decimal128(10, 2), pa.decimal128(12, 4), True),
        (pa.decimal128(10, 2), pa.decimal128(11, 4), False),
        (pa.decimal128(10, 2), pa.decimal128(10, 1), False),
        (pa.date32(), pa.timestamp("us"), True), (pa.timestamp("us"), pa.date32(), False),
        (pa.int32(), pa.string(), False),
    ],
)  # fmt: skip
def test_widening(old: pa.DataType, new: pa.DataType, widening: bool) -> None:
    assert widens(old, new) is widening


def test_each_policy_types_a_column_the_source_retyped() -> None:
    wide, narrow = pa.int64(), pa.int32()
    assert [type_target(narrow, wide, p) for p in ("evolve", "try_evolve", "lenient", "ignore")] \
        == [wide, wide, wide, narrow]  # fmt: skip
    assert [type_target(wide, narrow, p) for p in ("evolve", "try_evolve", "lenient", "ignore")] \
        == [narrow, narrow, wide, wide]  # fmt: skip
    assert type_target(pa.int32(), pa.string(), "lenient") == pa.string()
    assert type_target(pa.string(), pa.int32(), "lenient") == pa.string()
    assert type_target(pa.int32(), pa.decimal128(5, 2), "lenient") == pa.decimal128(12, 2)
    assert type_target(pa.int32(), pa.date32(), "lenient") is None
    assert common_type(pa.decimal128(38, 0), pa.decimal128(10, 5)) is None


def test_lenient_refuses_a_type_change_no_type_holds_with_a_sentence() -> None:
    dated = TableSchema("shop", "orders", (OLD.columns[0], column("note", "date"),
                                           *OLD.columns[2:]), primary_key=("id",))  # fmt: skip
    replica = [REPLICA[0], pa.field("note", pa.int32()), *REPLICA[2:]]
    with pytest.raises(ChangeRefused, match="alter_column_type to evolve"):
        plan_replica(replica, dated, column_changes(OLD, dated, ExistingRows()), SchemaPolicy())


def test_a_plan_applied_plans_nothing_more() -> None:
    """A micro-batch replayed after a crash finds the replica as the plan left it."""
    policy = SchemaPolicy("evolve")
    changes = column_changes(OLD, NEW, RENAME)
    first = plan_replica(REPLICA, NEW, changes, policy)
    after = [f for f in first.columns if f.name not in first.dropped]
    again = plan_replica(after, NEW, changes, policy)
    assert not again.retyped and not again.dropped and list(again.columns) == after


def test_the_setting_takes_a_policy_or_kinds() -> None:
    assert as_schema_changes(None) == SchemaPolicy("lenient")
    assert as_schema_changes("Try-Evolve") == SchemaPolicy("try_evolve")
    mixed = as_schema_changes({"default": "evolve", "drop.column": "ignore"})
    assert mixed.of("drop_column") == "ignore" and mixed.of("add_column") == "evolve"
    for bad, key in [("strict", "pipeline.schema_changes"),
                     ({"drop_colum": "ignore"}, "pipeline.schema_changes.drop_colum"),
                     ({"create_table": "ignore"}, "pipeline.schema_changes.create_table"),
                     ({"add_column": "never"}, "pipeline.schema_changes.add_column")]:  # fmt: skip
        with pytest.raises(ConfigError) as found:
            as_schema_changes(bad)
        assert str(found.value).startswith(key + ":")
