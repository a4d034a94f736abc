"""History tables (``sink.history``) through the sink port, in Delta and Iceberg.

Three micro-batches of one table whose ``balance`` is untracked: inserts, an update of the
untracked column alone (in place), updates, a delete, a re-insert, a key change, a TRUNCATE and
an insert after it. Every version's ``__start_position`` / ``__end_position`` are the change
log's positions of the changes that opened and closed it; batches written again, by the same
sink and by a sink opened again, write no version twice.
"""

from __future__ import annotations

import dataclasses
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from sparkcdc.core.history_spec import HistorySpec, TableHistory
from sparkcdc.core.schema import TableSchema
from sparkcdc.core.table_name import TableName
from sparkcdc.sinks.history import history_location, read_history
from sparkcdc.sinks.port import Sink, SinkContext
from sparkcdc.sinks.registry import open_sink, sink_type
from sparkcdc.sources.mysql.offset import BinlogOffset
from sparkcdc.sources.mysql.schema.column_types import column
from tests.cases.envelopes import FILE, Changes
from tests.cases.schemas import ACCOUNTS as A
from tests.contract.sink_harness import DeltaHarness, IcebergHarness, SinkHarness
from tests.e2e.history_check import compare_history, rebuild_history

APP = "history-app"
NAME = TableName("shop", "accounts")
SPEC = HistorySpec(tables={"shop.accounts": TableHistory(untracked=("balance",))})


class Frame:
    def __init__(self, table: pa.Table) -> None:
        self.table = table

    def toArrow(self) -> pa.Table:  # noqa: N802 (Spark's name)
        return self.table


def row(i: int, owner: str, balance: str = "1.00") -> dict[str, Any]:
    return {"id": i, "owner": owner, "balance": balance}


def batches() -> list[pa.Table]:
    first = (Changes(pos=1000).schema(A).change("c", A, after=row(1, "ann"))
             .change("c", A, after=row(2, "bob"))
             .change("u", A, row(1, "ann"), row(1, "ann", "5.00")))  # fmt: skip
    second = (Changes(pos=2000).change("u", A, row(1, "ann", "5.00"), row(1, "amy", "5.00"))
              .change("d", A, before=row(2, "bob")).change("c", A, after=row(2, "bea"))
              .change("u", A, row(2, "bea"), row(3, "bea")))  # fmt: skip
    third = (Changes(pos=3000).ddl("shop", "accounts", "TRUNCATE TABLE accounts", A)
             .change("c", A, after=row(4, "dan")))  # fmt: skip
    return [c.table() for c in (first, second, third)]


@pytest.fixture(params=["delta", "iceberg"])
def harness(request: pytest.FixtureRequest, tmp_path: Path) -> SinkHarness:
    found = IcebergHarness(tmp_path) if request.param == "iceberg" else DeltaHarness(tmp_path)
    return found


def opened(harness: SinkHarness) -> Sink:
    config = dataclasses.replace(harness.config, history=SPEC)  # type: ignore[attr-defined]
    return open_sink(config, SinkContext(app_id=lambda: APP))


def history(harness: SinkHarness) -> list[tuple[Any, ...]]:
    config = dataclasses.replace(harness.config, history=SPEC)  # type: ignore[attr-defined]
    found = read_history(config, NAME)
    assert found is not None
    return sorted(
        (r["id"], r["owner"], r["balance"], r["__start_position"], r["__end_position"],
         r["__current"], r["__op"]) for r in found.to_pylist()
    )  # fmt: skip


def positions(harness: SinkHarness) -> list[str]:
    """The change log's positions, in log order."""
    config = harness.config  # type: ignore[attr-defined]
    reader = sink_type(config.type).reader
    assert reader is not None
    logged = reader(config)(NAME, "changelog")
    assert logged is not None
    return sorted(s["position"] for s in logged.column("source").to_pylist())


def test_versions_follow_the_change_log_and_are_written_once(harness: SinkHarness) -> None:
    sink = opened(harness)
    frames = [Frame(t) for t in batches()]
    for batch_id, frame in enumerate(frames):
        sink.write_batch(frame, batch_id)
    sink.write_batch(frames[1], 1)  # the same sink, the same batch
    again = opened(harness)  # a restarted pipeline replays its batches
    for batch_id, frame in enumerate(frames):
        again.write_batch(frame, batch_id)

    p = positions(harness)
    assert len(p) == 9  # c c u | u d c u | t c
    five, one = Decimal("5.00"), Decimal("1.00")
    assert history(harness) == [
        (1, "amy", five, p[3], p[7], False, "u"),
        (1, "ann", five, p[0], p[3], False, "c"),  # the balance changed in place
        (2, "bea", one, p[5], p[6], False, "c"),  # re-inserted, then its key changed
        (2, "bob", one, p[1], p[4], False, "c"),
        (3, "bea", one, p[6], p[7], False, "u"),
        (4, "dan", one, p[8], None, True, "c"),
    ]
    config = dataclasses.replace(harness.config, history=SPEC)  # type: ignore[attr-defined]
    where = history_location(config, NAME)
    if isinstance(harness, DeltaHarness):
        assert where.endswith("shop/accounts__history")
        assert "delta.enableChangeDataFeed" not in DeltaTable(where).metadata().configuration
    else:
        assert where == "shop.accounts__history"
    found = read_history(config, NAME)
    assert found is not None
    starts = {r["__start_position"]: r["__start_at"] for r in found.to_pylist()}
    assert all(t is not None and t.tzinfo is not None for t in starts.values())


def test_keys_gone_during_a_lost_log_close_their_versions_once(harness: SinkHarness) -> None:
    """The re-snapshot's fault (``on_log_gone: resnapshot``): a key the source deleted while
    its log was lost gets a ``d`` row, and its open version closes at that row (the campaign
    found it left open); a second try after a crash writes nothing twice."""
    sink = opened(harness)
    first = (Changes(pos=1000).schema(A).change("c", A, after=row(1, "ann"))
             .change("c", A, after=row(2, "bob")))  # fmt: skip
    sink.write_batch(Frame(first.table()), 0)
    reread = Changes(pos=5000).schema(A)
    reread.change("r", A, after=row(1, "ann"), ts_ms=1_700_000_000_500)
    sink.write_batch(Frame(reread.table()), 1)
    since = positions(harness)[2]  # the re-snapshot's row of key 1
    config = dataclasses.replace(harness.config, history=SPEC)  # type: ignore[attr-defined]
    make = sink_type(config.type).gone_keys
    assert make is not None
    at = BinlogOffset(FILE, 9000)
    assert make(config)(NAME, ("id",), since, at, f"{APP}-resnapshot") == 1
    assert make(config)(NAME, ("id",), since, at, f"{APP}-resnapshot") == 0

    p = positions(harness)
    assert len(p) == 4  # c c r | d
    assert history(harness) == [
        (1, "ann", Decimal("1.00"), p[0], None, True, "c"),  # read again, equal: still open
        (2, "bob", Decimal("1.00"), p[1], p[3], False, "c"),  # closed at its d row
    ]
    found = read_history(config, NAME)
    assert found is not None
    ends = [r["__end_at"] for r in found.to_pylist() if r["id"] == 2]
    assert [e.timestamp() for e in ends] == [1_700_000_000.5]  # the re-snapshot's newest row


def test_after_a_lost_log_the_batch_after_the_gone_keys_commits_over_their_deletes(
    harness: SinkHarness,
) -> None:
    """The re-snapshot's fault again (the campaign's clock-skew trial in that phase): the gone
    key's deletion commits to the replica, the change log and the history table, and the
    running sink's next micro-batch (the key inserted again) then writes the same tables. It
    once held them as they were before and failed its commit ("deleted data files were
    found")."""
    sink = opened(harness)
    first = (Changes(pos=1000).schema(A).change("c", A, after=row(1, "ann"))
             .change("c", A, after=row(2, "bob")))  # fmt: skip
    sink.write_batch(Frame(first.table()), 0)
    reread = Changes(pos=5000).schema(A).change("r", A, after=row(1, "ann"))
    sink.write_batch(Frame(reread.table()), 1)
    config = dataclasses.replace(harness.config, history=SPEC)  # type: ignore[attr-defined]
    make = sink_type(config.type).gone_keys
    assert make is not None
    since = positions(harness)[2]
    assert make(config)(NAME, ("id",), since, BinlogOffset(FILE, 9000), f"{APP}-resnapshot") == 1
    again = Changes(pos=9500).schema(A).change("c", A, after=row(2, "bea"))
    sink.write_batch(Frame(again.table()), 2)
    p = positions(harness)
    assert len(p) == 5  # c c r | d | c
    assert history(harness) == [
        (1, "ann", Decimal("1.00"), p[0], None, True, "c"),
        (2, "bea", Decimal("1.00"), p[4], None, True, "c"),
        (2, "bob", Decimal("1.00"), p[1], p[3], False, "c"),
    ]


NOTED = TableSchema("shop", "accounts", (*A.columns, column("note", "varchar", length=20)),
                    primary_key=A.key)  # fmt: skip


def test_ddl_in_flight_leaves_the_versions_before_it_in_its_batch_as_logged(
    harness: SinkHarness,
) -> None:
    """The campaign's network cut during a schema change (seed 3060): one micro-batch held the
    workload's first changes, then ``ADD COLUMN note … DEFAULT 'n'``, then more. The replica
    rightly gave the rows changed before the ALTER its default (the source gave it to every row
    it held), but the history table took it too, in versions the change log, and the same
    changes in micro-batches of their own, hold with a null note."""
    sink = opened(harness)
    first = Changes(pos=1000).schema(A).change("c", A, after=row(1, "ann"))
    sink.write_batch(Frame(first.table()), 0)
    noted = {**row(2, "bob"), "note": "n"}
    batch = (Changes(pos=2000).change("c", A, after=row(2, "bob"))
             .change("u", A, row(1, "ann"), row(1, "amy"))
             .alter(A, NOTED, "ALTER TABLE accounts ADD COLUMN note VARCHAR(20) DEFAULT 'n'",
                    {"fill": {"note": "n"}})
             .change("u", NOTED, noted, {**noted, "owner": "bo"}))  # fmt: skip
    sink.write_batch(Frame(batch.table()), 1)

    config = dataclasses.replace(harness.config, history=SPEC)  # type: ignore[attr-defined]
    reader = sink_type(config.type).reader
    assert reader is not None
    replica = reader(config)(NAME, "replica")
    assert replica is not None
    assert sorted((r["owner"], r["note"]) for r in replica.to_pylist()) == [
        ("amy", "n"),
        ("bo", "n"),
    ]
    logged = reader(config)(NAME, "changelog")
    found = read_history(config, NAME)
    assert logged is not None and found is not None
    rows = logged.select(["op", "before", "after", "source"]).to_pylist()
    expected = rebuild_history(rows, ["id"], tracked=["id", "owner", "note"])
    compare_history(expected, found.to_pylist(), ["id"], "shop.accounts__history")
    notes = sorted((r["owner"], r["note"]) for r in found.to_pylist())
    assert notes == [("amy", None), ("ann", None), ("bo", "n"), ("bob", None)]
