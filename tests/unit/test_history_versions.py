"""The versions of a history table (``sink.history``) computed from one table's changes."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pyarrow as pa
import pytest

from sparkcdc.core.history_spec import HistorySpec, TableHistory
from sparkcdc.core.table_name import TableName
from sparkcdc.sinks.changes.history import Reset, history_schema, versions

FIELDS = [pa.field("id", pa.int64()), pa.field("name", pa.string()), pa.field("seen", pa.int64())]
SCHEMA = history_schema(FIELDS)
ROW = pa.struct(FIELDS)


def at(ms: int) -> dt.datetime:
    return dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(milliseconds=ms)


def changes(*events: tuple[str, dict[str, Any] | None, dict[str, Any] | None]) -> tuple[
    pa.Table, pa.StructArray, pa.StructArray
]:  # fmt: skip
    """Changes at positions p01, p02, … committed at 1000, 2000, … ms."""
    n = len(events)
    source = pa.array(
        [{"ts_ms": 1000 * (i + 1), "position": f"p{i + 1:02d}"} for i in range(n)],
        pa.struct([("ts_ms", pa.int64()), ("position", pa.string())]),
    )
    table = pa.table({"op": [e[0] for e in events], "source": source, "_pos": list(range(n))})
    before = pa.array([e[1] for e in events], ROW)
    after = pa.array([e[2] for e in events], ROW)
    assert isinstance(before, pa.StructArray) and isinstance(after, pa.StructArray)
    return table, before, after


def run(
    events: list[tuple[str, dict[str, Any] | None, dict[str, Any] | None]],
    tracked: tuple[str, ...] = ("id", "name", "seen"),
    open_rows: list[dict[str, Any]] | None = None,
    reset: Reset | None = None,
) -> list[tuple[Any, ...]]:
    table, before, after = changes(*events)
    held = pa.Table.from_pylist(open_rows or [], schema=SCHEMA)
    found = versions(table, before, after, SCHEMA, ["id"], tracked, held, reset)
    rows = found.to_pylist()
    return sorted(
        (r["id"], r["name"], r["seen"], r["__start_position"], r["__end_position"],
         r["__current"], r["__op"]) for r in rows
    )  # fmt: skip


def r(i: int, name: str, seen: int = 0) -> dict[str, Any]:
    return {"id": i, "name": name, "seen": seen}


def test_insert_update_delete_reinsert_each_version_closed_by_the_next_change() -> None:
    found = run([("c", None, r(1, "a")), ("u", r(1, "a"), r(1, "b")), ("d", r(1, "b"), None),
                 ("c", None, r(1, "c"))])  # fmt: skip
    assert found == [
        (1, "a", 0, "p01", "p02", False, "c"),
        (1, "b", 0, "p02", "p03", False, "u"),
        (1, "c", 0, "p04", None, True, "c"),
    ]


def test_times_are_the_commit_times_of_the_opening_and_closing_changes() -> None:
    table, before, after = changes(("c", None, r(1, "a")), ("u", r(1, "a"), r(1, "b")))
    held = SCHEMA.empty_table()
    rows = versions(table, before, after, SCHEMA, ["id"], ["name"], held).to_pylist()
    first = next(x for x in rows if x["__start_position"] == "p01")
    assert (first["__start_at"], first["__end_at"]) == (at(1000), at(2000))
    assert SCHEMA.field("__start_at").type == pa.timestamp("us", tz="UTC")


def test_the_open_version_before_the_batch_is_closed_in_place() -> None:
    held = {**r(1, "a"), "__start_at": at(5), "__start_position": "p00", "__end_at": None,
            "__end_position": None, "__current": True, "__op": "r"}  # fmt: skip
    found = run([("u", r(1, "a"), r(1, "b"))], open_rows=[held])
    assert found == [(1, "a", 0, "p00", "p01", False, "r"), (1, "b", 0, "p01", None, True, "u")]


def test_a_change_of_untracked_columns_only_updates_the_open_version_in_place() -> None:
    found = run([("c", None, r(1, "a")), ("u", r(1, "a"), r(1, "a", 7)),
                 ("u", r(1, "a", 7), r(1, "b", 8))], tracked=("name",))  # fmt: skip
    assert found == [(1, "a", 7, "p01", "p03", False, "c"), (1, "b", 8, "p03", None, True, "u")]


def test_an_update_that_changes_the_key_closes_the_old_key_and_opens_the_new() -> None:
    found = run([("c", None, r(1, "a")), ("u", r(1, "a"), r(2, "a"))])
    assert found == [(1, "a", 0, "p01", "p02", False, "c"), (2, "a", 0, "p02", None, True, "u")]


def test_a_snapshot_read_of_the_same_values_opens_nothing_a_changed_one_does() -> None:
    found = run([("r", None, r(1, "a")), ("r", None, r(2, "x")), ("r", None, r(1, "a")),
                 ("r", None, r(2, "y"))])  # fmt: skip
    assert found == [
        (1, "a", 0, "p01", None, True, "r"),
        (2, "x", 0, "p02", "p04", False, "r"),
        (2, "y", 0, "p04", None, True, "r"),
    ]


def test_an_insert_of_a_key_still_open_closes_its_version() -> None:
    found = run([("r", None, r(1, "a")), ("c", None, r(1, "a"))])
    assert found == [(1, "a", 0, "p01", "p02", False, "r"), (1, "a", 0, "p02", None, True, "c")]


def test_a_truncate_closes_every_open_version_and_later_inserts_open_new_ones() -> None:
    held = {**r(9, "z"), "__start_at": at(5), "__start_position": "p00", "__end_at": None,
            "__end_position": None, "__current": True, "__op": "c"}  # fmt: skip
    found = run([("c", None, r(1, "a")), ("t", None, None), ("c", None, r(1, "b"))],
                open_rows=[held])  # fmt: skip
    assert found == [
        (1, "a", 0, "p01", "p02", False, "c"),
        (1, "b", 0, "p03", None, True, "c"),
        (9, "z", 0, "p00", "p02", False, "c"),
    ]


def test_a_drop_table_reset_closes_the_versions_open_at_it() -> None:
    found = run([("c", None, r(1, "a")), ("c", None, r(2, "b"))], reset=Reset(0, 1500, "p01z"))
    assert found == [(1, "a", 0, "p01", "p01z", False, "c"), (2, "b", 0, "p02", None, True, "c")]


def test_the_spec_names_tables_and_tracked_columns() -> None:
    spec = HistorySpec(tables={"shop.items": TableHistory(untracked=("seen",))})
    found = spec.of(TableName("shop", "items"))
    assert found is not None and found.tracked(["id", "name", "seen"]) == ["id", "name"]
    assert spec.of(TableName("shop", "other")) is None
    assert HistorySpec(every=True).of(TableName("a", "b")) == TableHistory()
    assert TableHistory(track=("nope",)).unknown(["id"]) == ["nope"]


@pytest.mark.parametrize("seen", [0, 3])
def test_a_delete_of_a_key_without_a_version_writes_nothing(seen: int) -> None:
    assert run([("d", r(5, "q", seen), None)]) == []
