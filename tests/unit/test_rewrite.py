"""The replica's copy-on-write upserts (sinks/delta/rewrite.py) against a model of the table,
and the Delta tables kept open (sinks/delta/opened.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake
from hypothesis import given, settings
from hypothesis import strategies as st

from sparkcdc.sinks.changes.latest import OP_COLUMN, ORDER_COLUMN
from sparkcdc.sinks.delta import commits, opened
from sparkcdc.sinks.delta.commits import OPERATION_KEY

FIELDS = [pa.field("id", pa.int64()), pa.field("name", pa.string()),
          pa.field("tags", pa.list_(pa.string()))]  # fmt: skip
SCHEMA = pa.schema(FIELDS)


def changes(batch: dict[int, str | None]) -> pa.Table:
    """One row per key: a name upserts it, None deletes it."""
    keys = sorted(batch)
    return pa.table(
        {
            "id": pa.array(keys, pa.int64()),
            "name": [batch[k] for k in keys],
            "tags": [[batch[k] or ""] for k in keys],
            OP_COLUMN: ["d" if batch[k] is None else "u" for k in keys],
            ORDER_COLUMN: pa.array(range(len(keys)), pa.int64()),
        }
    )


def replica(path: Path) -> dict[int, str]:
    rows = DeltaTable(str(path)).to_pyarrow_table().to_pylist()
    assert len({r["id"] for r in rows}) == len(rows), "a key twice in the replica"
    return {r["id"]: r["name"] for r in rows}


def last_operation(path: Path) -> str:
    info = DeltaTable(str(path)).history(1)[0]
    return str(info.get(OPERATION_KEY, info["operation"]))


batches = st.lists(
    st.dictionaries(
        st.integers(0, 40),
        st.one_of(st.none(), st.text("abc", max_size=3)),
        min_size=1,
        max_size=12,
    ),  # fmt: skip
    min_size=1,
    max_size=6,
)


@settings(max_examples=25, deadline=None)
@given(batches=batches, resets=st.lists(st.booleans(), min_size=6, max_size=6))
def test_upserts_and_deletes_leave_what_the_model_does(
    tmp_path_factory: object, batches: list[dict[int, str | None]], resets: list[bool]
) -> None:
    """Every batch applied as a copy-on-write leaves the rows a dict model of the table holds:
    a name upserts its key, None deletes it, a reset (TRUNCATE) drops every other row. The
    table starts as three data files, so candidates are pruned by the files' key ranges."""
    path = Path(tmp_path_factory.mktemp("replica"))  # type: ignore[attr-defined]
    model: dict[int, str] = {}
    for first in (0, 15, 30):
        rows = {i: f"r{i}" for i in range(first, first + 10)}
        model |= rows
        tags = [[n] for n in rows.values()]
        table = pa.table(
            {"id": list(rows), "name": list(rows.values()), "tags": tags}, schema=SCHEMA
        )
        write_deltalake(str(path), table, mode="append")
    for batch_id, (batch, reset) in enumerate(zip(batches, resets, strict=False)):
        if reset:
            model.clear()
        for key, name in batch.items():
            if name is None:
                model.pop(key, None)
            else:
                model[key] = name
        assert commits.merge_replica(str(path), changes(batch), ("ID",), "app", batch_id, reset)
        assert not commits.merge_replica(str(path), changes(batch), ("ID",), "app", batch_id)
        assert last_operation(path) == "MERGE"
        assert replica(path) == model


def test_a_column_added_after_a_file_reads_as_null_in_its_rows(tmp_path: Path) -> None:
    path = tmp_path / "t"
    write_deltalake(str(path), pa.table({"id": [1, 2]}, schema=pa.schema([FIELDS[0]])))
    commits.ensure_replica(str(path), FIELDS[:2])
    batch = pa.table({"id": [2], "name": ["two"], OP_COLUMN: ["u"], ORDER_COLUMN: [1]})
    assert commits.merge_replica(str(path), batch, ("id",), "app", 0)
    rows = sorted(DeltaTable(str(path)).to_pyarrow_table().to_pylist(), key=lambda r: r["id"])
    assert rows == [{"id": 1, "name": None}, {"id": 2, "name": "two"}]


def test_deletes_given_by_their_key_alone_delete_and_partial_upserts_are_merged(
    tmp_path: Path,
) -> None:
    """Changes holding the key columns only (the gone keys of a re-snapshot) delete by copy on
    write; upserts lacking a column are left to delta-rs's MERGE, which keeps its values."""
    path = tmp_path / "t"
    write_deltalake(str(path), pa.table({"id": [1, 2, 3], "name": ["a", "b", "c"]}))
    deletes = pa.table({"id": [2], OP_COLUMN: ["d"], ORDER_COLUMN: [0]})
    assert commits.merge_replica(str(path), deletes, ("id",), "app", 0)
    assert last_operation(path) == "MERGE" and replica_ids(path) == [1, 3]
    assert DeltaTable(str(path)).history(1)[0]["operation"] == "WRITE"
    partial = pa.table({"id": [3], OP_COLUMN: ["u"], ORDER_COLUMN: [0]})
    assert commits.merge_replica(str(path), partial, ("id",), "app", 1)
    assert DeltaTable(str(path)).history(1)[0]["operation"] == "MERGE"
    assert replica(path) == {1: "a", 3: "c"}


def test_a_table_with_the_change_data_feed_is_written_by_the_copy_on_write(tmp_path: Path) -> None:
    """Its commit names a change data file (tests/unit/test_change_data.py reads it back)."""
    path = tmp_path / "t"
    write_deltalake(str(path), pa.table({"id": [1, 2]}, schema=pa.schema([FIELDS[0]])),
                    configuration={"delta.enableChangeDataFeed": "true"})  # fmt: skip
    batch = pa.table({"id": [2], OP_COLUMN: ["d"], ORDER_COLUMN: [1]})
    assert commits.merge_replica(str(path), batch, ("id",), "app", 0)
    assert last_operation(path) == "MERGE"
    assert DeltaTable(str(path)).history(1)[0]["operation"] == "WRITE"
    assert replica_ids(path) == [1]
    assert len(list((path / "_change_data").iterdir())) == 1


def replica_ids(path: Path) -> list[int]:
    return sorted(DeltaTable(str(path)).to_pyarrow_table().column("id").to_pylist())


def test_a_table_made_again_at_its_path_is_not_read_from_the_one_kept_open(
    tmp_path: Path,
) -> None:
    """A kept table whose path now holds another table (fewer versions) is opened anew."""
    path = tmp_path / "t"
    for i in range(3):
        write_deltalake(str(path), pa.table({"id": [i]}), mode="append")
    kept = commits.open_table(str(path))
    assert kept is not None and kept.version() == 2
    assert commits.already_applied(str(path), "app", 0) is False
    shutil.rmtree(path)
    write_deltalake(str(path), pa.table({"id": [7]}))
    again = commits.table(str(path))
    assert again.version() == 0 and again.to_pyarrow_table().column("id").to_pylist() == [7]
    shutil.rmtree(path)
    assert commits.open_table(str(path)) is None
    opened.forget(str(path))


def test_commits_through_the_kept_table_move_it_to_their_version(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    write_deltalake(path, pa.table({"id": [1]}))
    kept = commits.table(path)
    assert commits.append_replica(path, pa.table({"id": [2]}), "app", 0)
    assert commits.table(path) is kept and kept.version() == 1
    write_deltalake(path, pa.table({"id": [3]}), mode="append")  # another writer
    assert commits.table(path).version() == 2  # opened anew
    assert replica_ids(tmp_path / "t") == [1, 2, 3]
