"""Transaction records (``pipeline.transactions``) through the sink port, in Delta and Iceberg.

Three MySQL-shaped transactions over two tables in three micro-batches, the second transaction
split across batches 1 and 2 (batch 1 ends inside it: its ``f`` event's end offset holds a
resume counter, as a transaction larger than the event store gives). Each transaction gets one
``BEGIN`` in the batch of its first change and one ``END`` in the batch of its last, with the
counts of its changes per table; batches written again, by the same sink and by a sink opened
again, write no record twice.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from sparkcdc.core.envelope import EnvelopeBuilder
from sparkcdc.core.offset import position_text
from sparkcdc.sinks.port import Sink, SinkContext
from sparkcdc.sinks.registry import open_sink
from sparkcdc.sources.mysql.offset import BinlogOffset, file_sequence
from sparkcdc.store.batch_files import BatchFiles
from tests.cases.envelopes import FILE, Changes
from tests.cases.schemas import ACCOUNTS
from tests.contract.sink_harness import DeltaHarness, IcebergHarness, SinkHarness
from tests.e2e.iceberg_lake import IcebergLake

APP = "txn-app"
B = dataclasses.replace(ACCOUNTS, table="ledger")


@dataclass(frozen=True)
class Frame:
    """A micro-batch as ``foreachBatch`` hands it over: something with ``toArrow()``."""

    table: pa.Table

    def toArrow(self) -> pa.Table:  # noqa: N802 (Spark's name)
        return self.table


def change(b: EnvelopeBuilder, pos: int, gtid: str, order: int, table_order: int,
           table: str, i: int) -> None:  # fmt: skip
    schema = ACCOUNTS if table == ACCOUNTS.table else B
    b.extend(
        [("c", f"[{i}]", None, f'{{"id": {i}, "owner": "o{i}", "balance": "1.00"}}')],
        schema.db, table, schema.schema_id(), position=position_text(file_sequence(FILE), pos),
        index=0, own=(1, FILE, pos, None, gtid), ts_ms=1_700_000_000_000 + order,
        transaction=gtid, total_order=order, data_collection_order=table_order,
    )  # fmt: skip


def batches() -> list[pa.Table]:
    first = Changes(pos=100).schema(ACCOUNTS).schema(B).builder  # announcements: no records
    for n, (table, k) in enumerate([("accounts", 1), ("ledger", 1), ("accounts", 2)], 1):
        change(first, 200 + n, "0-1-10", n, k, table, n)
    second = EnvelopeBuilder(BinlogOffset)
    for n, (table, k) in enumerate([("ledger", 1), ("accounts", 1), ("ledger", 2)], 1):
        change(second, 300 + n, "0-1-11", n, k, table, 10 + n)
    third = EnvelopeBuilder(BinlogOffset)
    for n, (table, k) in enumerate([("accounts", 2), ("ledger", 3)], 4):
        change(third, 300 + n, "0-1-11", n, k, table, 10 + n)
    change(third, 400, "0-1-12", 1, 1, "accounts", 30)
    return [pa.Table.from_batches([b.build()]) for b in (first, second, third)]


def frames(tmp: Path) -> list[Frame]:
    """The batches as the pipeline's stream hands them over: one ``f`` event each; batch 1
    ends inside transaction 0-1-11 (two of its changes delivered)."""
    files = BatchFiles(tmp / "log")
    ends = [BinlogOffset(FILE, 300, "0-1-10"), BinlogOffset(FILE, 300, "0-1-10").with_skip(3),
            BinlogOffset(FILE, 500, "0-1-12")]  # fmt: skip
    return [
        Frame(pa.Table.from_batches([files.write(end, table.to_batches())]))
        for end, table in zip(ends, batches(), strict=True)
    ]


def records(harness: SinkHarness) -> list[dict[str, Any]]:
    if isinstance(harness, DeltaHarness):
        table = DeltaTable(str(harness.root / "lake" / "_sparkcdc" / "transactions"))
        found = table.to_pyarrow_table()
    else:
        found = IcebergLake(harness.root / "lake").arrow("_sparkcdc", "transactions")
    rows: list[dict[str, Any]] = found.sort_by([("batch_id", "ascending"),
                                                ("position", "ascending")]).to_pylist()  # fmt: skip
    return rows


@pytest.fixture(params=["delta", "iceberg"])
def harness(request: pytest.FixtureRequest, tmp_path: Path) -> SinkHarness:
    return IcebergHarness(tmp_path) if request.param == "iceberg" else DeltaHarness(tmp_path)


def opened(harness: SinkHarness) -> Sink:
    return open_sink(harness.config, SinkContext(app_id=lambda: APP, transactions=True))  # type: ignore[attr-defined]


def test_begin_and_end_per_transaction_written_once(harness: SinkHarness, tmp_path: Path) -> None:
    sink = opened(harness)
    written = frames(tmp_path)
    for batch_id, frame in enumerate(written):
        sink.write_batch(frame, batch_id)
    sink.write_batch(written[2], 2)  # the same sink, the same batch
    again = opened(harness)  # a restarted pipeline replays its batches
    for batch_id, frame in enumerate(written):
        again.write_batch(frame, batch_id)

    acc, led = "shop.accounts", "shop.ledger"
    got = [(r["batch_id"], r["status"], r["id"], r["event_count"],
            sorted((c["data_collection"], c["event_count"]) for c in r["data_collections"] or []))
           for r in records(harness)]  # fmt: skip
    assert got == [
        (0, "BEGIN", "0-1-10", None, []),
        (0, "END", "0-1-10", 3, [(acc, 2), (led, 1)]),
        (1, "BEGIN", "0-1-11", None, []),  # its END comes with its last change
        (2, "END", "0-1-11", 5, [(acc, 2), (led, 3)]),
        (2, "BEGIN", "0-1-12", None, []),
        (2, "END", "0-1-12", 1, [(acc, 1)]),
    ]
    positions = {(r["status"], r["id"]): r["position"] for r in records(harness)}
    assert positions[("BEGIN", "0-1-11")] == position_text(file_sequence(FILE), 301, 0)
    assert positions[("END", "0-1-11")] == position_text(file_sequence(FILE), 305, 0)
    assert all(r["ts_ms"] for r in records(harness))
