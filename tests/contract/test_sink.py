"""The sink contract: what every sink type does with the envelope's micro-batches, checked
through the port against each harness (Delta, the in-memory sink).

Each batch id is applied once, also by a sink opened again (a restarted pipeline replays its
last batch); inserts, updates, deletes and a TRUNCATE reach the replica and the change log in
log order; a snapshot chunk kept in the split store becomes its ``r`` rows (with the files the
sink type's chunk writer made on the executor, if it has one); the figures move.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from sparkcdc.core.chunk import Split
from sparkcdc.core.errors import SinkError
from sparkcdc.core.offset_events import chunk_event
from sparkcdc.snapshot.correct import typed_rows
from sparkcdc.snapshot.split_store import SplitResult, SplitStore
from sparkcdc.sources.mysql.offset import BinlogOffset
from tests.cases.envelopes import Changes
from tests.cases.schemas import ACCOUNTS, images
from tests.contract.sink_harness import MemoryHarness, SinkHarness

A = ACCOUNTS
HIGH = BinlogOffset("mysql-bin.000001", 4242, "0-1-9")
T0 = 1_700_000_000_000


@dataclass(frozen=True)
class Frame:
    """A micro-batch as ``foreachBatch`` hands it over: something with ``toArrow()``."""

    table: pa.Table

    def toArrow(self) -> pa.Table:  # noqa: N802 (Spark's name)
        return self.table


def account(i: int, owner: str) -> dict[str, Any]:
    return {"id": i, "owner": owner, "balance": f"{i}.00"}


def inserts(pos: int, *ids: int, announce: bool = False) -> Changes:
    changes = Changes(pos=pos)
    if announce:
        changes.schema(A)
    for i in ids:
        changes.change("c", A, after=account(i, f"o{i}"), ts_ms=T0 + i)
    return changes


def check_a_replayed_batch_is_applied_once(sink_harness: SinkHarness) -> None:
    """Batch 0 written, then again by the same sink and by a sink opened again."""
    batch = Frame(inserts(1000, 1, 2, announce=True).table())
    sink_harness.open()(batch, 0)
    sink_harness.open().write_batch(batch, 0)  # a restarted pipeline replays batch 0
    assert sink_harness.replica("shop", "accounts") == {1: "o1", 2: "o2"}
    assert sink_harness.changelog("shop", "accounts") == [("c", None, "o1"), ("c", None, "o2")]


def test_a_replayed_batch_is_applied_once(sink_harness: SinkHarness) -> None:
    check_a_replayed_batch_is_applied_once(sink_harness)


def test_the_suite_fails_a_sink_that_ignores_batch_ids(tmp_path: Path) -> None:
    with pytest.raises(AssertionError):
        check_a_replayed_batch_is_applied_once(MemoryHarness(tmp_path, honour_batch_ids=False))


def test_changes_and_a_truncate_reach_replica_and_change_log(sink_harness: SinkHarness) -> None:
    sink = sink_harness.open()
    sink(Frame(inserts(1000, 1, 2, 3, announce=True).table()), 0)
    changes = (
        Changes(pos=2000)
        .change("u", A, account(1, "o1"), account(1, "o1 again"), ts_ms=T0 + 10)
        .change("d", A, before=account(2, "o2"), ts_ms=T0 + 11)
    )
    sink(Frame(changes.table()), 1)
    assert sink_harness.replica("shop", "accounts") == {1: "o1 again", 3: "o3"}
    emptied = Changes(pos=3000).ddl("shop", "accounts", "TRUNCATE TABLE accounts", A)
    emptied.change("c", A, after=account(4, "o4"), ts_ms=T0 + 12)
    sink(Frame(emptied.table()), 2)
    assert sink_harness.replica("shop", "accounts") == {4: "o4"}
    assert sink_harness.changelog("shop", "accounts") == [
        ("c", None, "o1"), ("c", None, "o2"), ("c", None, "o3"),
        ("u", 1, "o1 again"), ("d", 2, None),
        ("t", None, None), ("c", None, "o4"),
    ]  # fmt: skip


def stored_chunk(
    sink_harness: SinkHarness, root: Path, owners: list[str], files: bool = True
) -> pa.Table:
    """A chunk of ``shop.accounts`` (ids 1..n) kept typed in a split store as a snapshot task
    keeps it, with the files the sink type's chunk writer makes of it (unless not ``files``:
    the sink reads the rows from the store); its ``k`` event."""
    store = SplitStore(root / "store", BinlogOffset)
    split = Split("shop.accounts", 0, None, None)
    keys, texts = images(A, [account(i, o) for i, o in enumerate(owners, 1)])
    result = SplitResult(split, typed_rows(A)(keys, texts), HIGH, HIGH, 0.0, 1.5)
    store.put(result)
    ref: dict[str, Any] = {"path": str(store.rows_path(split)), "rows": len(owners)}
    write_files = sink_harness.chunk_writer()
    if write_files is not None and files:
        changelog = sink_harness.snapshot_in_changelog
        ref["files"] = write_files([result], A, store, True, None, changelog=changelog)
    event = chunk_event(ref, A.db, A.table, A.schema_id(), HIGH, T0 + 100)
    return pa.Table.from_batches([event])


def test_a_snapshot_chunk_becomes_its_read_rows(sink_harness: SinkHarness, tmp_path: Path) -> None:
    chunk = stored_chunk(sink_harness, tmp_path, ["a", "b", "c"])
    batch = Frame(pa.concat_tables([Changes().schema(A).table(), chunk]))
    sink = sink_harness.open()
    for _ in range(2):  # and once only
        sink(batch, 0)
    assert sink_harness.replica("shop", "accounts") == {1: "a", 2: "b", 3: "c"}
    assert sink_harness.changelog("shop", "accounts") == [
        ("r", None, "a"),
        ("r", None, "b"),
        ("r", None, "c"),
    ]
    sink(Frame(inserts(5000, 4).table()), 1)  # the log after the snapshot
    assert sink_harness.replica("shop", "accounts") == {1: "a", 2: "b", 3: "c", 4: "o4"}


@pytest.mark.parametrize("files", [True, False], ids=["chunk files", "stored rows"])
def test_a_snapshot_left_out_of_the_change_log_reaches_the_replica_only(
    sink_harness: SinkHarness, tmp_path: Path, files: bool
) -> None:
    """``sink.snapshot_in_changelog: false``: the chunk's rows reach the replica (from the
    files the chunk writer made, with none for the change log, or read from the store), the
    change log holds the log's changes only."""
    sink_harness.snapshot_in_changelog = False
    chunk = stored_chunk(sink_harness, tmp_path, ["a", "b"], files)
    files = json.loads(chunk.column("after")[0].as_py()).get("files")
    assert files is None or "changelog" not in files
    sink = sink_harness.open()
    sink(Frame(pa.concat_tables([Changes().schema(A).table(), chunk])), 0)
    sink(Frame(inserts(5000, 3).table()), 1)
    assert sink_harness.replica("shop", "accounts") == {1: "a", 2: "b", 3: "o3"}
    assert sink_harness.changelog("shop", "accounts") == [("c", None, "o3")]


def test_figures_move(sink_harness: SinkHarness, tmp_path: Path) -> None:
    sink = sink_harness.open()
    assert (sink.figures().batches, sink.figures().changes) == (0, 0)
    sink(Frame(inserts(1000, 1, 2, announce=True).table()), 0)
    sink(Frame(Changes(pos=2000).change("d", A, before=account(1, "o1"), ts_ms=T0 + 7).table()), 1)
    figures = sink.figures()
    assert (figures.batches, figures.changes) == (2, 3)
    assert dict(figures.events) == {("shop.accounts", "c"): 2, ("shop.accounts", "d"): 1}
    assert figures.last_event_ts_ms == T0 + 7
    assert figures.last_commit_s is not None and figures.error is None
    gone = stored_chunk(sink_harness, tmp_path, ["x"])
    ref = json.loads(gone.column("after")[0].as_py())
    for where in [
        ref["path"],
        *(f["path"] for k, f in ref.get("files", {}).items() if k != "columns"),
    ]:
        Path(where).unlink()  # the chunk's rows are gone, and the files its task wrote
    with pytest.raises(SinkError):
        sink(Frame(gone), 2)
    assert isinstance(sink.figures().error, SinkError)
