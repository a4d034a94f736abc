"""The Iceberg sink's replica and change log retyped and the replica's columns dropped
(sinks/iceberg/reshape.py) against the embedded SQL catalog: promotions a metadata commit, other
changes a rewrite of every row, a value that does not fit refused with nothing committed, the
batch marks kept, and a table that has the change already left without a commit."""

from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.table import Table

from sparkcdc.config.model import SinkConfig
from sparkcdc.core.table_name import TableName
from sparkcdc.sinks.iceberg.catalog import open_catalog
from sparkcdc.sinks.iceberg.reshape import RESHAPE_KEY
from sparkcdc.sinks.iceberg.tables import (
    IcebergTables,
    append_once,
    changelog_id,
    committed,
    marks,
    plain_fields,
    replica_id,
)

NAME = TableName("shop", "items")
SOURCE = pa.struct([("position", pa.string())])
APP = "pipeline-1"
BATCH = 7


def opened(tmp_path: Path) -> IcebergTables:
    return IcebergTables(open_catalog(SinkConfig(path=str(tmp_path / "lake"), type="iceberg")))


def filled(tmp_path: Path, columns: list[pa.Field], rows: list[dict[str, Any]]) -> IcebergTables:
    """The replica of ``NAME`` holding ``rows`` and its change log one insert per row and a
    delete of the first, both committed as batch ``BATCH``."""
    tables = opened(tmp_path)
    tables.evolve(NAME, columns, SOURCE)
    replica, log = stored(tables, replica_id(NAME)), stored(tables, changelog_id(NAME))
    props = marks(APP, BATCH, "p1")
    assert append_once(replica, pa.Table.from_pylist(rows, pa.schema(columns)), props)
    changes = [{"op": "c", "after": r} for r in rows] + [{"op": "d", "before": rows[0]}]
    assert append_once(log, pa.Table.from_pylist(changes, pa.schema(plain_fields(log))), props)
    return tables


def stored(tables: IcebergTables, ident: tuple[str, str]) -> Table:
    found = tables.table(ident)
    assert found is not None
    return found


def fresh(tmp_path: Path, ident: tuple[str, str]) -> Table:
    """The table as the catalog has it now (not the object ``IcebergTables`` keeps)."""
    return stored(opened(tmp_path), ident)


def data_files(table: Table) -> set[str]:
    return {task.file.file_path for task in table.scan().plan_files()}


def types(fields: list[pa.Field]) -> dict[str, pa.DataType]:
    return {f.name: f.type for f in fields}


def after_types(table: Table) -> dict[str, pa.DataType]:
    return types(list(plain_fields(table)[2].type))


def values(table: Table, column: str) -> list[Any]:
    return sorted(table.scan().to_arrow().column(column).to_pylist(), key=repr)


def images(table: Table, column: str, image: str = "after") -> list[Any]:
    """The values of ``column`` in the change log's ``image`` rows (those that have one)."""
    rows = table.scan().to_arrow().column(image).to_pylist()
    return sorted((r[column] for r in rows if r is not None), key=repr)


ROWS = [
    {"id": 1, "v": 10, "note": "a"},
    {"id": 2, "v": -(2**31), "note": None},
    {"id": 3, "v": None, "note": "c"},
]
INT_COLUMNS = [pa.field("id", pa.int64()), pa.field("v", pa.int32()), pa.field("note", pa.string())]


@pytest.mark.parametrize(
    ("old", "new", "held"),
    [
        (pa.int32(), pa.int64(), [10, -(2**31), None]),
        (pa.float32(), pa.float64(), [0.5, float("inf"), None]),
        (
            pa.decimal128(10, 2),
            pa.decimal128(14, 2),
            [Decimal("12345678.90"), Decimal("-0.01"), None],
        ),
    ],
)
def test_a_promotion_is_one_metadata_commit_that_writes_no_data(
    tmp_path: Path, old: pa.DataType, new: pa.DataType, held: list[Any]
) -> None:
    columns = [pa.field("id", pa.int64()), pa.field("v", old), pa.field("note", pa.string())]
    rows = [{**r, "v": v} for r, v in zip(ROWS, held, strict=True)]
    tables = filled(tmp_path, columns, rows)
    before = {i: fresh(tmp_path, i) for i in (replica_id(NAME), changelog_id(NAME))}
    got = tables.retype(NAME, [pa.field("v", new)])
    assert got == [pa.field("id", pa.int64()), pa.field("v", new), pa.field("note", pa.string())]
    for ident, was in before.items():
        now = fresh(tmp_path, ident)
        assert now.metadata_location != was.metadata_location
        assert now.current_snapshot() == was.current_snapshot()
        assert data_files(now) == data_files(was)
        assert committed(now, APP) == BATCH
    replica, log = fresh(tmp_path, replica_id(NAME)), fresh(tmp_path, changelog_id(NAME))
    assert after_types(log)["v"] == new and types(list(plain_fields(log)[1].type))["v"] == new
    assert values(replica, "v") == sorted(held, key=repr) == images(log, "v")
    assert images(log, "v", "before") == [held[0]]


@pytest.mark.parametrize(
    ("old", "new", "held", "wanted"),
    [
        (
            pa.decimal128(10, 2),
            pa.decimal128(14, 4),
            [Decimal("12345678.90"), Decimal("-0.01")],
            [Decimal("12345678.9000"), Decimal("-0.0100")],
        ),
        (
            pa.date32(),
            pa.timestamp("us"),
            [date(2024, 2, 29), date(1, 1, 1)],
            [datetime(2024, 2, 29), datetime(1, 1, 1)],
        ),
        (pa.int32(), pa.string(), [2**31 - 1, -5], ["2147483647", "-5"]),
        (pa.int64(), pa.int32(), [2**31 - 1, -(2**31)], [2**31 - 1, -(2**31)]),
    ],
)
def test_another_change_rewrites_every_row_in_one_commit_the_column_in_its_place(
    tmp_path: Path, old: pa.DataType, new: pa.DataType, held: list[Any], wanted: list[Any]
) -> None:
    columns = [pa.field("id", pa.int64()), pa.field("v", old), pa.field("note", pa.string())]
    rows = [{**r, "v": v} for r, v in zip(ROWS, [*held, None], strict=True)]
    tables = filled(tmp_path, columns, rows)
    before = {i: fresh(tmp_path, i) for i in (replica_id(NAME), changelog_id(NAME))}
    got = tables.retype(NAME, [pa.field("V", new)])
    assert got == [pa.field("id", pa.int64()), pa.field("v", new), pa.field("note", pa.string())]
    for ident, was in before.items():
        now = fresh(tmp_path, ident)
        assert now.current_snapshot() != was.current_snapshot()
        assert not data_files(now) & data_files(was)
        assert len(now.metadata.metadata_log) == len(was.metadata.metadata_log) + 1
        assert now.current_snapshot().summary[RESHAPE_KEY] == "retype"
        assert committed(now, APP) == BATCH
    replica, log = fresh(tmp_path, replica_id(NAME)), fresh(tmp_path, changelog_id(NAME))
    expected = sorted([*wanted, None], key=repr)
    assert values(replica, "v") == expected == images(log, "v")
    assert images(log, "v", "before") == [wanted[0]]
    assert values(replica, "note") == sorted(["a", None, "c"], key=repr)
    for image in (plain_fields(log)[1], plain_fields(log)[2]):
        assert [(f.name, f.type) for f in image.type] == [(f.name, f.type) for f in got]


def test_a_value_the_new_type_cannot_hold_is_refused_and_nothing_is_committed(
    tmp_path: Path,
) -> None:
    """The replica's values fit int32; an earlier image in the change log does not: neither
    table changes."""
    columns = [pa.field("id", pa.int64()), pa.field("v", pa.int64())]
    tables = filled(tmp_path, columns, [{"id": 1, "v": 5}, {"id": 2, "v": None}])
    log = stored(tables, changelog_id(NAME))
    late = [{"op": "u", "before": {"id": 1, "v": 2**40}, "after": {"id": 1, "v": 5}}]
    assert append_once(
        log, pa.Table.from_pylist(late, pa.schema(plain_fields(log))), marks(APP, BATCH + 1, "p2")
    )
    before = {
        i: fresh(tmp_path, i).metadata_location for i in (replica_id(NAME), changelog_id(NAME))
    }
    with pytest.raises(
        ValueError,
        match=r"^column before\.v of shop\.items__changelog holds a "
        r"value that does not fit the new type int$",
    ):
        tables.retype(NAME, [pa.field("v", pa.int32())])
    assert {i: fresh(tmp_path, i).metadata_location for i in before} == before
    assert tables.stored_columns(NAME) == columns
    with pytest.raises(ValueError, match=r"^column v of shop\.items holds a value that does not"):
        tables.retype(NAME, [pa.field("v", pa.decimal128(4, 4))])
    assert {i: fresh(tmp_path, i).metadata_location for i in before} == before


@pytest.mark.parametrize(
    ("old", "new", "held"),
    [
        (pa.float64(), pa.float32(), 0.1),
        (pa.float64(), pa.decimal128(5, 0), 1.5),
        (pa.string(), pa.int32(), "007"),
    ],
)
def test_a_value_arrow_would_round_or_rewrite_is_refused(
    tmp_path: Path, old: pa.DataType, new: pa.DataType, held: Any
) -> None:
    """Arrow's cast takes these without an error (0.1 as the float nearest it, 1.5 as 2, "007"
    as 7): the value cast back is another."""
    columns = [pa.field("id", pa.int64()), pa.field("v", old)]
    tables = filled(tmp_path, columns, [{"id": 1, "v": held}, {"id": 2, "v": None}])
    location = fresh(tmp_path, replica_id(NAME)).metadata_location
    with pytest.raises(ValueError, match=r"^column v of shop\.items holds a value that does not"):
        tables.retype(NAME, [pa.field("v", new)])
    assert fresh(tmp_path, replica_id(NAME)).metadata_location == location
    assert tables.stored_columns(NAME) == columns


def test_a_table_that_has_the_types_already_gets_no_commit(tmp_path: Path) -> None:
    """Repeated calls, an int16 asked of an ``int`` column (Iceberg has no narrower integer),
    and a name neither table has."""
    tables = filled(tmp_path, INT_COLUMNS, ROWS)
    tables.retype(NAME, [pa.field("v", pa.int64()), pa.field("note", pa.large_string())])
    tables.retype(NAME, [pa.field("id", pa.int32())])
    locations = {
        i: fresh(tmp_path, i).metadata_location for i in (replica_id(NAME), changelog_id(NAME))
    }
    for wanted in (
        [pa.field("v", pa.int64())],
        [pa.field("id", pa.int32())],
        [pa.field("ID", pa.int16()), pa.field("missing", pa.date32())],
    ):
        tables.retype(NAME, wanted)
    assert {i: fresh(tmp_path, i).metadata_location for i in locations} == locations
    assert tables.stored_columns(NAME) == [
        pa.field("id", pa.int32()),
        pa.field("v", pa.int64()),
        pa.field("note", pa.string()),
    ]


def test_the_kept_tables_and_a_new_catalog_see_the_new_types(tmp_path: Path) -> None:
    """A rewrite with a promotion in it, then two neighbours replaced; the sink then appends a
    value only the new type holds."""
    tables = filled(tmp_path, INT_COLUMNS, ROWS)
    tables.retype(NAME, [pa.field("id", pa.string()), pa.field("v", pa.int64())])
    tables.retype(NAME, [pa.field("v", pa.decimal128(20, 0)), pa.field("note", pa.binary())])
    wanted = [
        pa.field("id", pa.string()),
        pa.field("v", pa.decimal128(20, 0)),
        pa.field("note", pa.binary()),
    ]
    assert plain_fields(stored(tables, replica_id(NAME))) == wanted
    assert plain_fields(fresh(tmp_path, replica_id(NAME))) == wanted
    assert plain_fields(stored(tables, changelog_id(NAME)))[2].type == pa.struct(wanted)
    assert tables.evolve(NAME, wanted, SOURCE) == wanted
    replica = stored(tables, replica_id(NAME))
    row = pa.Table.from_pylist([{"id": "x", "v": 2**60, "note": b"d"}], pa.schema(wanted))
    assert append_once(replica, row, marks(APP, BATCH + 1, "p2"))
    now = fresh(tmp_path, replica_id(NAME))
    held = [Decimal(10), Decimal(-(2**31)), None, Decimal(2**60)]
    assert values(now, "v") == sorted(held, key=repr) and values(now, "id") == ["1", "2", "3", "x"]
    assert committed(now, APP) == BATCH + 1


def test_dropping_columns_leaves_the_change_log_and_the_rows(tmp_path: Path) -> None:
    tables = filled(tmp_path, [*INT_COLUMNS, pa.field("extra", pa.bool_())], ROWS)
    log = fresh(tmp_path, changelog_id(NAME)).metadata_location
    was = fresh(tmp_path, replica_id(NAME))
    got = tables.drop_columns(NAME, ["Note"])
    assert got == [
        pa.field("id", pa.int64()),
        pa.field("v", pa.int32()),
        pa.field("extra", pa.bool_()),
    ]
    assert tables.drop_columns(NAME, ["v", "extra", "gone"]) == [pa.field("id", pa.int64())]
    replica = fresh(tmp_path, replica_id(NAME))
    assert len(replica.metadata.metadata_log) == len(was.metadata.metadata_log) + 2
    assert replica.current_snapshot() == was.current_snapshot()
    assert replica.scan().to_arrow().to_pylist() == [{"id": 1}, {"id": 2}, {"id": 3}]
    assert committed(replica, APP) == BATCH
    assert fresh(tmp_path, changelog_id(NAME)).metadata_location == log
    assert images(fresh(tmp_path, changelog_id(NAME)), "note") == sorted(["a", None, "c"], key=repr)
    location = replica.metadata_location
    assert tables.drop_columns(NAME, ["note", "V"]) == [pa.field("id", pa.int64())]
    assert fresh(tmp_path, replica_id(NAME)).metadata_location == location


def test_files_added_as_they_are_and_a_change_log_without_rows(tmp_path: Path) -> None:
    """A replica whose data files were added as written (a snapshot's run files: no field ids,
    read through the table's name mapping) is promoted and rewritten; its change log, without a
    snapshot yet, gets the types in a metadata commit alone."""
    tables = opened(tmp_path)
    tables.evolve(NAME, INT_COLUMNS, SOURCE)
    run = tmp_path / "run.parquet"
    pq.write_table(pa.Table.from_pylist(ROWS, pa.schema(INT_COLUMNS)), run)
    stored(tables, replica_id(NAME)).add_files([str(run)])
    tables.retype(NAME, [pa.field("v", pa.int64())])
    got = tables.retype(NAME, [pa.field("id", pa.string()), pa.field("note", pa.binary())])
    assert got == [
        pa.field("id", pa.string()),
        pa.field("v", pa.int64()),
        pa.field("note", pa.binary()),
    ]
    replica = fresh(tmp_path, replica_id(NAME))
    assert values(replica, "id") == ["1", "2", "3"] and values(replica, "note") == [
        None,
        b"a",
        b"c",
    ]
    assert values(replica, "v") == sorted([10, -(2**31), None], key=repr)
    log = fresh(tmp_path, changelog_id(NAME))
    assert log.current_snapshot() is None and plain_fields(log)[2].type == pa.struct(got)
