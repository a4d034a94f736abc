"""Delta commits the sink writes itself (sinks/delta/log_commit.py): read by delta-rs and by a
reader of the Parquet files alone, one winner per version, checkpoints, and the tables left to
delta-rs."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds
import pytest
from deltalake import DeltaTable, write_deltalake
from deltalake.exceptions import CommitFailedError

from sparkcdc.config.model import SinkConfig
from sparkcdc.core.table_name import TableName
from sparkcdc.sinks import storage
from sparkcdc.sinks.changes.lake import changelog_schema
from sparkcdc.sinks.delta import commits, data_files, log_commit, opened
from sparkcdc.sinks.registry import open_tables_ahead

APP = "pipeline-1"
SCHEMA = changelog_schema(
    [pa.field("id", pa.int64()), pa.field("name", pa.string())],
    pa.struct([pa.field("ts_ms", pa.int64())]),
)


def log_rows(ids: list[int], batch: int) -> pa.Table:
    """Change-log rows inserting ``ids``."""
    after = [{"id": i, "name": f"n{i}"} for i in ids]
    return pa.Table.from_pydict(
        {
            "op": ["c"] * len(ids),
            "before": [None] * len(ids),
            "after": after,
            "source": [{"ts_ms": 1000 * batch + i} for i in range(len(ids))],
            "transaction": [None] * len(ids),
        },
        schema=SCHEMA,
    )


def new_log(tmp_path: Path, name: str = "t__changelog") -> str:
    path = str(tmp_path / name)
    commits.ensure_changelog(path, [SCHEMA.field("after").type.field(i) for i in range(2)],
                             SCHEMA.field("source").type)  # fmt: skip
    return path


def commit_infos(path: str) -> list[dict[str, object]]:
    folder = Path(path) / "_delta_log"
    found = []
    for name in sorted(folder.glob("*.json")):
        for line in name.read_text().splitlines():
            if "commitInfo" in line:
                found.append(json.loads(line)["commitInfo"])
    return found


def test_a_change_log_append_is_our_commit_and_every_reader_reads_it(tmp_path: Path) -> None:
    path = new_log(tmp_path)
    assert commits.append_changelog(path, log_rows([1, 2], 1), APP, 1)
    assert not commits.append_changelog(path, log_rows([1, 2], 1), APP, 1)  # a replay
    assert commits.append_changelog(path, log_rows([3], 2), APP, 2)
    assert commit_infos(path)[-1]["clientVersion"] == "sparkcdc"
    table = DeltaTable(path)
    assert (table.version(), table.transaction_version(APP)) == (2, 2)
    got = sorted(r["after"]["id"] for r in table.to_pyarrow_table().to_pylist())
    assert got == [1, 2, 3]
    files = [str(tmp_path / "t__changelog" / Path(u).name) for u in table.file_uris()]
    assert ds.dataset(files).to_table().num_rows == 3  # the Parquet files alone
    # a reader pruning files by their statistics finds every row a filter asks for
    wanted = ds.field("op").isin(["c"]) & (ds.field("source", "ts_ms") >= 0)
    assert table.to_pyarrow_dataset().to_table(filter=wanted).num_rows == 3
    stats = pa.table(table.get_add_actions(flatten=True)).to_pydict()
    assert stats["num_records"] == [2, 1] or sorted(stats["num_records"]) == [1, 2]


def test_a_version_has_one_writer_and_the_loser_commits_after_it(tmp_path: Path) -> None:
    path = new_log(tmp_path)
    kept = commits.open_table(path)
    assert kept is not None and log_commit.usable(path, kept)
    write_deltalake(path, log_rows([7], 9), mode="append")  # another writer takes version 1
    adds = [data_files.write_data_file(storage.at(path), path, log_rows([8], 1))]
    with pytest.raises(CommitFailedError):
        log_commit.commit(path, kept, adds, [], (APP, 1))  # its version was taken
    assert commits.append_changelog(path, log_rows([8], 1), APP, 1)  # read anew, then version 2
    table = DeltaTable(path)
    assert (table.version(), table.transaction_version(APP)) == (2, 1)
    assert sorted(r["after"]["id"] for r in table.to_pyarrow_table().to_pylist()) == [7, 8]


def test_a_checkpoint_every_ten_versions(tmp_path: Path) -> None:
    path = new_log(tmp_path)
    assert DeltaTable(path).metadata().configuration[log_commit.CHECKPOINT_KEY] == "10"
    for batch in range(1, 13):
        assert commits.append_changelog(path, log_rows([batch], batch), APP, batch)
    assert (Path(path) / "_delta_log" / f"{10:020d}.checkpoint.parquet").exists()
    opened.forget(path)
    table = DeltaTable(path)
    assert (table.version(), table.transaction_version(APP)) == (12, 12)
    assert table.to_pyarrow_table().num_rows == 12


def test_a_table_with_a_constraint_is_left_to_delta_rs(tmp_path: Path) -> None:
    path = str(tmp_path / "checked")
    write_deltalake(path, pa.table({"id": pa.array([1], pa.int64())}))
    DeltaTable(path).alter.add_constraint({"positive": "id > 0"})
    table = commits.open_table(path)
    assert table is not None and not log_commit.usable(path, table)
    adds = [data_files.write_data_file(storage.at(path), path, pa.table({"id": [5]}))]
    log_commit.commit_files(path, table, adds, [], (APP, 1))
    assert commit_infos(path)[-1]["clientVersion"] != "sparkcdc"
    assert DeltaTable(path).transaction_version(APP) == 1


def test_appends_leave_the_kept_table_and_count_on_from_their_own_commits(tmp_path: Path) -> None:
    path = new_log(tmp_path)
    kept = commits.open_table(path)
    assert kept is not None
    for batch in (1, 2, 3):
        assert commits.append_changelog(path, log_rows([batch], batch), APP, batch)
    assert commits.open_table(path, current=False) is kept and kept.version() == 0
    assert opened.head(path, kept) == 3 and not commits.already_applied(path, APP, 4)
    fresh = commits.open_table(path)  # current: opened anew
    assert fresh is not None and fresh is not kept and fresh.version() == 3
    assert fresh.to_pyarrow_table().num_rows == 3


def test_tables_opened_ahead_are_kept_for_the_first_batch(tmp_path: Path) -> None:
    """The captured tables are opened while Spark starts (sinks/delta/opened.py)."""
    paths = [str(tmp_path / name) for name in ("a", "b", "never-made", "c")]
    for path in paths[:2] + paths[3:]:
        write_deltalake(path, pa.table({"id": pa.array([1], pa.int64())}))
    opened.open_ahead(paths)
    deadline = time.monotonic() + 30
    while opened.cached(paths[3], current=False) is None and time.monotonic() < deadline:
        time.sleep(0.01)
    opened.stop_ahead()
    kept = [opened.cached(path, current=False) for path in paths]
    assert [k is not None for k in kept] == [True, True, False, True]
    assert commits.open_table(paths[0]) is kept[0]  # the first batch opens it no more


def test_what_opens_the_tables_ahead_gives_its_stop(tmp_path: Path) -> None:
    """The run calls what :func:`open_tables_ahead` gives before it forgets the sealing key
    (``unsetenv`` while delta-rs reads the environment in another thread crashes the process):
    no thread opens tables once it returns, though it was called before the thread finished."""
    tables = [TableName("db", f"t{i}") for i in range(40)]
    for name in tables:
        write_deltalake(str(tmp_path / "db" / name.table), pa.table({"id": pa.array([1])}))
    stop = open_tables_ahead(SinkConfig(path=str(tmp_path)), tables)
    assert any(t.name == AHEAD_THREAD for t in threading.enumerate())
    stop()
    assert not any(t.name == AHEAD_THREAD for t in threading.enumerate())
    assert opened.cached(str(tmp_path / "db" / "t39"), current=False) is None  # not reached


AHEAD_THREAD = "sparkcdc-open-tables"
