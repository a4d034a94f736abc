"""The Delta sink applies what a schema change did to the rows a table already held (fill, copy,
nulls of the ``s`` row's ``existing``): to the replica's rows before the batch and to the batch's
own rows changed before the DDL, once per batch even when a crash splits its commits."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable

from sparkcdc.core.errors import SinkError
from sparkcdc.core.schema import TableSchema
from sparkcdc.sinks.delta import commits
from sparkcdc.sinks.delta.sink import DeltaSink
from sparkcdc.sources.mysql.schema.column_types import column
from tests.cases.envelopes import Changes
from tests.cases.schemas import ACCOUNTS, ALL_TYPES, ROW_JSON

A = ACCOUNTS
# ALTER … ADD pts INT NOT NULL DEFAULT 7, ADD tag VARCHAR(10), RENAME COLUMN owner TO holder,
#        MODIFY balance DECIMAL(10,2) NOT NULL
B = TableSchema(
    "shop",
    "accounts",
    (
        column("id", "bigint"),
        column("holder", "varchar"),
        column("balance", "decimal", precision=10, scale=2, nullable=False),
        column("pts", "int", nullable=False),
        column("tag", "varchar", length=10),
    ),
    primary_key=("id",),
)
EXISTING = {"fill": {"pts": 7}, "copy": {"holder": "owner"}, "nulls": {"balance": "0.00"}}


def replica(path: Path, *columns: str) -> list[tuple[Any, ...]]:
    table = DeltaTable(str(path / "shop" / "accounts")).to_pyarrow_table(columns=list(columns))
    return sorted(tuple(r.values()) for r in table.to_pylist())


def first_batch(sink: DeltaSink) -> None:
    batch = Changes().schema(A)
    for i, (owner, balance) in enumerate([("ann", None), ("bob", "2.00"), ("cy", "3.00")], 1):
        batch.change("c", A, after={"id": i, "owner": owner, "balance": balance})
    sink.write(batch.table(), 0)


def alter_batch() -> Changes:
    return (
        Changes(pos=2000)
        .change("u", A, {"id": 2, "owner": "bob", "balance": "2.00"},
                {"id": 2, "owner": "bobby", "balance": None})
        .change("c", A, after={"id": 5, "owner": "eve", "balance": "5.00"})
        .alter(A, B, "ALTER TABLE accounts …", EXISTING)
        .change("c", B, after={"id": 4, "holder": "di", "balance": "4.00", "pts": 9, "tag": "t"})
        .change("u", B, {"id": 3, "holder": "cy", "balance": "3.00", "pts": 7, "tag": None},
                {"id": 3, "holder": "cy", "balance": "3.00", "pts": 8, "tag": None})
    )  # fmt: skip


EXPECTED = [
    (1, "ann", Decimal("0.00"), 7, None),  # held before the batch: filled, copied, nulls
    (2, "bobby", Decimal("0.00"), 7, None),  # changed in the batch before the DDL: the same
    (3, "cy", Decimal("3.00"), 8, None),  # changed after the DDL: the source's values
    (4, "di", Decimal("4.00"), 9, "t"),
    (5, "eve", Decimal("5.00"), 7, None),  # inserted in the batch before the DDL
]
COLUMNS = ("id", "holder", "balance", "pts", "tag")


def test_fill_copy_and_nulls_reach_rows_before_and_in_the_batch(tmp_path: Path) -> None:
    sink = DeltaSink(str(tmp_path), "p")
    first_batch(sink)
    sink.write(alter_batch().table(), 1)
    assert replica(tmp_path, *COLUMNS) == EXPECTED
    # the old name keeps its values in rows written before the rename, as a dropped column
    assert replica(tmp_path, "id", "owner")[:3] == [(1, "ann"), (2, "bobby"), (3, None)]
    log = DeltaTable(str(tmp_path / "shop" / "accounts__changelog")).to_pyarrow_table()
    images = {(r["op"], r["after"]["id"]): r["after"] for r in log.to_pylist() if r["after"]}
    assert images[("u", 2)]["pts"] is None  # the change log keeps the image the log gave
    table = DeltaTable(str(tmp_path / "shop" / "accounts"))
    assert table.transaction_version("p/existing") == 1 and table.transaction_version("p") == 1


def test_a_crash_between_the_update_and_the_merge_applies_each_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pair = TableSchema("shop", "accounts", (column("id", "bigint"), column("a", "varchar"),
                       column("b", "varchar")), primary_key=("id",))  # fmt: skip
    sink = DeltaSink(str(tmp_path), "p")
    sink.write(Changes().schema(pair).change("c", pair, after={"id": 1, "a": "x", "b": "y"})
               .change("c", pair, after={"id": 2, "a": "x", "b": "y"}).table(), 0)  # fmt: skip
    swap = {"copy": {"a": "b", "b": "a"}}  # RENAME COLUMN a TO t, b TO a, t TO b
    batch = (
        Changes(pos=2000)
        .alter(pair, pair, "ALTER TABLE accounts RENAME COLUMN …", swap)
        .change("u", pair, {"id": 2, "a": "y", "b": "x"}, {"id": 2, "a": "p", "b": "q"})
    )
    merge = commits.merge_replica

    def crash(*args: Any, **kwargs: Any) -> bool:
        raise OSError("the machine went down")

    monkeypatch.setattr(commits, "merge_replica", crash)
    with pytest.raises(SinkError):
        sink.write(batch.table(), 1)
    monkeypatch.setattr(commits, "merge_replica", merge)
    for _ in range(2):  # the replay after the restart, and once more: nothing twice
        DeltaSink(str(tmp_path), "p").write(batch.table(), 1)
        assert replica(tmp_path, "id", "a", "b") == [(1, "y", "x"), (2, "p", "q")]


def test_a_column_added_again_is_null_in_rows_that_held_it(tmp_path: Path) -> None:
    with_note = A.with_columns((*A.columns, column("note", "varchar")))
    sink = DeltaSink(str(tmp_path), "p")
    batch = Changes().schema(with_note)
    batch.change("c", with_note, after={"id": 1, "owner": "o", "balance": "1.00", "note": "x"})
    sink.write(batch.table(), 0)
    sink.write(Changes(pos=2000).alter(with_note, A, "ALTER TABLE accounts DROP note").table(), 1)
    assert replica(tmp_path, "id", "note") == [(1, "x")]  # DROP COLUMN keeps the column
    sink.write(Changes(pos=3000).alter(A, with_note, "ALTER TABLE accounts ADD note").table(), 2)
    assert replica(tmp_path, "id", "note") == [(1, None)]
    table = DeltaTable(str(tmp_path / "shop" / "accounts"))
    assert table.transaction_version("p/existing") == 2
    extra = with_note.with_columns((*with_note.columns, column("extra", "int")))
    sink.write(Changes(pos=4000).alter(with_note, extra, "ALTER TABLE accounts ADD extra")
               .table(), 3)  # fmt: skip
    table = DeltaTable(str(tmp_path / "shop" / "accounts"))  # a column new to the replica:
    assert table.transaction_version("p/existing") == 2  # nothing to clear, nothing rewritten


def test_fill_gives_every_type_its_exact_value(tmp_path: Path) -> None:
    """A row whose columns the schema change fills equals a row the log wrote with the same
    values (every logical type, extremes included)."""
    bare = {"id": 2, **{c.name: None for c in ALL_TYPES.columns if c.name != "id"}}
    sink = DeltaSink(str(tmp_path), "p")
    batch = Changes().schema(ALL_TYPES).change("c", ALL_TYPES, after=ROW_JSON)
    sink.write(batch.change("c", ALL_TYPES, after=bare).table(), 0)
    fill = {k: v for k, v in ROW_JSON.items() if k != "id"}
    alter = Changes(pos=2000).alter(ALL_TYPES, ALL_TYPES, "ALTER TABLE types …", {"fill": fill})
    sink.write(alter.table(), 1)
    rows = DeltaTable(str(tmp_path / "shop" / "types")).to_pyarrow_table().sort_by("id")
    logged, filled = rows.slice(0, 1).drop_columns(["id"]), rows.slice(1, 1).drop_columns(["id"])
    assert filled.equals(logged), (filled.to_pylist(), logged.to_pylist())
