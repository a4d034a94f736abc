"""The snapshot's pure parts: chunk correction, the hand-off rule, numeric key order, state."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa

from sparkcdc.core.chunk import Split
from sparkcdc.core.schema import TableSchema
from sparkcdc.snapshot.correct import ChunkCorrector
from sparkcdc.snapshot.handoff import Handoff, HandoffFilter, TableHandoff
from sparkcdc.snapshot.keyorder import KeyOrder
from sparkcdc.snapshot.scan import cut, joinable
from sparkcdc.snapshot.split_store import SplitResult, SplitStore
from sparkcdc.sources.mysql.offset import BinlogOffset
from sparkcdc.sources.mysql.schema.column_types import column, key_column

ID = [key_column("id", "int")]


def row(i: int, v: str) -> str:
    return json.dumps({"id": i, "v": v}, separators=(",", ":"))


def chunk(rows: dict[int, str]) -> pa.Table:
    return pa.table(
        {"key": [f"[{i}]" for i in rows], "after": [row(i, v) for i, v in rows.items()]}
    )


def as_dict(table: pa.Table) -> dict[str, str]:
    keys, afters = table.column("key").to_pylist(), table.column("after").to_pylist()
    return dict(zip(keys, afters, strict=True))


def test_corrector_replays_the_window_onto_the_split_range_only() -> None:
    split = Split("db.t", 0, (1,), (10,))
    order = KeyOrder(ID, None)
    fix = ChunkCorrector(["id"], ["id"], lambda values: order.within(split, values))
    rows = chunk({1: "a", 2: "b", 3: "c", 4: "d", 5: "e"})
    changes = [
        ("u", "[2]", row(2, "b"), row(2, "B")),  # seen or not by the SELECT: B either way
        ("d", "[3]", row(3, "c"), None),
        ("c", "[4]", None, row(4, "d")),  # an insert the SELECT saw already
        ("u", "[50]", row(5, "e"), row(50, "e")),  # key moves out of the split
        ("c", "[7]", None, row(7, "g")),
        ("u", "[8]", row(60, "h"), row(8, "h")),  # key moves into the split
        ("c", "[11]", None, row(11, "x")),  # another split's key
        ("u", "[2]", row(2, "B"), row(2, "B2")),
    ]
    got = as_dict(fix.apply(rows, changes))
    assert got == {
        "[1]": row(1, "a"),
        "[2]": row(2, "B2"),
        "[4]": row(4, "d"),
        "[7]": row(7, "g"),
        "[8]": row(8, "h"),
    }


def test_corrector_without_changes_returns_the_chunk_itself() -> None:
    rows = chunk({1: "a"})
    fix = ChunkCorrector(["id"], ["id"], lambda values: [True] * len(values))
    assert fix.apply(rows, []) is rows


def offset(pos: int) -> BinlogOffset:
    return BinlogOffset("bin.000002", pos, "")


def at(pos: int) -> BinlogOffset:
    """The rows event at ``pos`` of the file ``bin.000002``."""
    return BinlogOffset("bin.000002", pos)


def test_handoff_lets_through_what_each_split_does_not_hold() -> None:
    handoff = Handoff(
        {"db.t": TableHandoff(ID, [(10,), (20,)], [offset(100), offset(200), offset(300)])}
    )
    assert handoff.lowest == offset(100) and handoff.highest == offset(300)
    keep = HandoffFilter(handoff, dialect=lambda: None)  # type: ignore[arg-type,return-value]
    changes = [
        ("c", "[5]", None, row(5, "x")),  # split 0, past its mark 100: needed
        ("c", "[15]", None, row(15, "x")),  # split 1, before its mark 200: in its rows
        ("d", "[25]", row(25, "x"), None),  # split 2, before 300
        ("u", "[6]", row(16, "x"), row(6, "x")),  # moves 16 -> 6: split 0 needs the new key
        ("u", "[17]", row(26, "x"), row(17, "x")),  # 26 -> 17: neither split needs it
    ]
    kept = keep("db", "t", at(150), changes)
    # the move 16 -> 6 is needed by the new key's split only: it arrives as an insert of 6
    assert kept == [changes[0], ("c", "[6]", None, row(6, "x"))]
    assert keep.dropped == 3
    # 6 -> 16 at 150: split 0 (mark 100) must lose 6, split 1 (mark 200) holds 16 already
    move = ("u", "[16]", row(6, "x"), row(16, "x"))
    assert keep("db", "t", at(150), [move]) == [("d", "[6]", row(6, "x"), None)]
    assert keep("db", "t", at(300), changes) == changes  # past the last mark
    assert keep("db", "other", at(150), changes) == changes  # not snapshotted
    assert keep("db", "t", BinlogOffset("bin.000001", 999), changes[:1]) == []  # an earlier file


def test_handoff_round_trips_through_its_file(tmp_path: Path) -> None:
    handoff = Handoff({"db.t": TableHandoff(ID, [(10,)], [offset(1), offset(2)])})
    handoff.save(tmp_path / "handoff.json")
    again = Handoff.load(tmp_path / "handoff.json", BinlogOffset)
    assert again == handoff
    assert Handoff.load(tmp_path / "missing.json", BinlogOffset) is None


def test_numeric_key_order_is_exact_for_decimals_and_composites() -> None:
    keys = [key_column("a", "decimal", precision=30, scale=10), key_column("b", "int")]
    order = KeyOrder(keys, None)
    bounds = [("1.5", 0), ("1.5", 7), ("10", 0)]
    values = [("1.4999999999", 99), ("1.5000", 0), ("1.5", 8), ("9.99", 1), ("10.0", 0)]
    assert order.locate(values, bounds) == [0, 1, 2, 2, 3]
    split = Split("db.t", 1, ("1.5", 0), ("1.5", 7))
    assert order.within(split, [("1.5", 3), ("1.5", 7)]) == [True, False]


def test_split_store_keeps_results_until_released(tmp_path: Path) -> None:
    store = SplitStore(tmp_path, BinlogOffset)
    split = Split("db.t", 3, (10,), None)
    assert store.get(split) is None
    rows = chunk({10: "a", 11: "b"})
    store.put(SplitResult(split, rows, offset(1), offset(2), keys=[ID[0].to_json()]))
    found = store.get(split)
    assert found is not None and found.rows.equals(rows) and found.high == offset(2)
    store.release(split)
    assert store.get(split) is None
    [meta] = store.finished("db.t")
    assert meta["rows"] == 2 and Split.from_json(meta["split"]) == split


def test_an_older_split_meta_reads_with_its_defaults(tmp_path: Path) -> None:
    """A finished split written before the timings and key columns were kept still reads; a
    half-written metadata file reads as not finished."""
    store = SplitStore(tmp_path, BinlogOffset)
    split = Split("db.t", 0, None, None)
    store.put(SplitResult(split, chunk({1: "a"}), offset(1), offset(2)))
    path = tmp_path / "splits" / "db.t" / "0.json"
    old = {
        k: v
        for k, v in json.loads(path.read_text()).items()
        if k in ("split", "low", "high", "rows")
    }
    path.write_text(json.dumps(old))
    found = store.get(split)
    assert found is not None and (found.started, found.task, found.keys, found.row_key) == (
        0.0,
        "",
        [],
        [],
    )
    assert store.finished("db.t") == [old]
    path.write_text('{"split": ')
    assert store.get(split) is None and store.finished("db.t") == []


def test_rewind_takes_the_chunk_back_to_the_window_start() -> None:
    split = Split("db.t", 0, (1,), (10,))
    order = KeyOrder(ID, None)
    fix = ChunkCorrector(["id"], ["id"], lambda values: order.within(split, values))
    # read after all of these happened: 2 updated twice, 3 deleted, 4 inserted, 5 moved to 50,
    # 60 (another split's key) moved to 8
    rows = chunk({1: "a", 2: "B2", 4: "d", 8: "h"})
    changes = [
        ("u", "[2]", row(2, "b"), row(2, "B")),
        ("d", "[3]", row(3, "c"), None),
        ("c", "[4]", None, row(4, "d")),
        ("u", "[50]", row(5, "e"), row(50, "e")),
        ("u", "[8]", row(60, "h"), row(8, "h")),
        ("u", "[2]", row(2, "B"), row(2, "B2")),
    ]
    got = as_dict(fix.rewind(rows, changes))
    assert got == {"[1]": row(1, "a"), "[2]": row(2, "b"), "[3]": row(3, "c"), "[5]": row(5, "e")}


def test_a_run_is_cut_at_its_splits_bounds_in_order_or_not() -> None:
    ordered = pa.table({"key": [f"[{i}]" for i in range(10)], "id": list(range(10))})
    parts = cut(ordered, "id", [3, 7])
    assert [p.column("id").to_pylist() for p in parts] == [[0, 1, 2], [3, 4, 5, 6], [7, 8, 9]]
    assert all(
        p.column("key").to_pylist() == [f"[{i}]" for i in p["id"].to_pylist()] for p in parts
    )
    shuffled = pa.table({"id": pa.array([9, 0, 5, 3, 7, 1, 6], pa.int32())})
    parts = cut(shuffled, "id", [3, 7, 20])
    assert [p.column("id").to_pylist() for p in parts] == [[0, 1], [5, 3, 6], [9, 7], []]
    assert [p.num_rows for p in cut(pa.table({"id": pa.array([], pa.int64())}), "id", [5])] == [
        0,
        0,
    ]


def test_only_consecutive_splits_of_a_single_integer_key_that_is_never_null_are_joined() -> None:
    def schema(data_type: str = "int", nullable: bool = False) -> TableSchema:
        columns = (column("id", data_type, nullable=nullable), column("v", "varchar"))
        return TableSchema("db", "t", columns, ("id",))

    run = [
        Split("db.t", 0, None, (10,)),
        Split("db.t", 1, (10,), (20,)),
        Split("db.t", 2, (20,), None),
    ]
    assert joinable(run, schema(), ID)
    assert joinable(run, schema("bigint"), [key_column("id", "bigint")])
    assert not joinable(run[:1], schema(), ID)  # one split is read by itself
    assert not joinable([run[0], run[2]], schema(), ID)  # not consecutive
    assert not joinable(run, schema(nullable=True), ID)  # a chunk key column with NULLs
    beyond = [Split("db.t", 0, None, (2**40,)), Split("db.t", 1, (2**40,), None)]
    assert not joinable(beyond, schema(), ID)  # a bound an INT column cannot hold
    assert joinable(beyond, schema("bigint"), [key_column("id", "bigint")])
    assert not joinable(run, schema("decimal"), [key_column("id", "decimal", precision=10)])
    names = [key_column("id", "varchar", collation="utf8mb4_general_ci")]
    assert not joinable(run, schema("varchar"), names)  # the server's collation decides
    two = [key_column("id", "int"), key_column("v", "int")]
    assert not joinable(run, schema(), two)
