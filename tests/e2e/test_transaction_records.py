"""Transaction records through the real pipeline: MariaDB into Delta, PostgreSQL into Iceberg.

Rows snapshotted first (no record), then three transactions over two tables, one large enough
to span micro-batches (``item_rows: 5``, a 16 KB store). Every transaction has one ``BEGIN``
and one ``END``; the counts equal the change log's rows per transaction id and table.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from tests.cases.e2e_sources import E2ESource, PostgresSource
from tests.e2e.cli import available_now
from tests.e2e.iceberg_lake import IcebergLake, as_iceberg

pytestmark = [pytest.mark.spark]


def read(tmp: Path, sink: str, source: E2ESource, table: str) -> pa.Table:
    if sink == "delta":
        where = tmp / "lake" / ("_sparkcdc" if table == "transactions" else source.schema)
        return DeltaTable(str(where / table)).to_pyarrow_table()
    namespace = "_sparkcdc" if table == "transactions" else source.schema
    return IcebergLake(tmp / "lake").arrow(namespace, table)


def test_transactions_have_begin_and_end_with_exact_counts(
    source_and_sink: tuple[E2ESource, str], tmp_path: Path
) -> None:
    source, sink = source_and_sink
    ddl = "CREATE TABLE {} (id INT PRIMARY KEY, v INT)"
    source.write_before_capture(ddl.format("orders"), ddl.format("items"),
                                "INSERT INTO orders VALUES (1, 1), (2, 2)")  # fmt: skip
    cfg = source.config(tmp_path, "(orders|items)", "initial")
    small = "store: {max_bytes: 16KB, item_rows: 5}, transactions: true"
    cfg.write_text(cfg.read_text().replace("store: {max_bytes: 8MB}", small))
    if sink == "iceberg":
        as_iceberg(cfg)
    if isinstance(source, PostgresSource):
        source.start_capturing(["orders", "items"])
    available_now(cfg)  # the snapshot
    source.execute(
        "BEGIN", "INSERT INTO orders VALUES (3, 3)", "INSERT INTO items VALUES (1, 1)", "COMMIT",
        "BEGIN", f"INSERT INTO items SELECT seq, seq FROM {source.numbers(60)} WHERE seq > 1",
        f"INSERT INTO orders SELECT seq, seq FROM {source.numbers(40)} WHERE seq > 3",
        "UPDATE items SET v = 0 WHERE id <= 10", "COMMIT",
        "BEGIN", "DELETE FROM orders WHERE id = 1", "UPDATE items SET v = 9 WHERE id = 2",
        "COMMIT",
    )  # fmt: skip
    available_now(cfg)

    logged: Counter[tuple[str, str]] = Counter()
    snapshot_reads = 0
    for table in ("orders", "items"):
        for row in read(tmp_path, sink, source, f"{table}__changelog").to_pylist():
            if row["transaction"] is None:
                snapshot_reads += row["op"] == "r"
                continue
            logged[(row["transaction"]["id"], table)] += 1
    assert snapshot_reads == 2
    records: list[dict[str, Any]] = read(tmp_path, sink, source, "transactions").to_pylist()
    ids = {tid for tid, _ in logged}
    assert len(ids) == 3
    begins = [r for r in records if r["status"] == "BEGIN"]
    ends = {r["id"]: r for r in records if r["status"] == "END"}
    assert sorted(r["id"] for r in begins) == sorted(ids) == sorted(ends)
    for tid, end in ends.items():
        per_table = {c["data_collection"].split(".")[-1]: c["event_count"]
                     for c in end["data_collections"]}  # fmt: skip
        assert per_table == {t: n for (i, t), n in logged.items() if i == tid}
        assert end["event_count"] == sum(per_table.values())
        begin = next(r for r in begins if r["id"] == tid)
        assert begin["position"] <= end["position"] and begin["ts_ms"] == end["ts_ms"]
    big = max(ends.values(), key=lambda r: r["event_count"])
    assert big["event_count"] == 59 + 37 + 10
    big_begin = next(r for r in begins if r["id"] == big["id"])
    assert big_begin["batch_id"] < big["batch_id"], "the large transaction fit one batch"
