"""A 1M-row transaction streams through a store limited to ``max_bytes`` with bounded memory.

The transaction is split into store items with resume counters (Canal's split transaction), so
the source process never holds it whole: its peak resident memory stays within ``max_bytes`` plus
a fixed overhead, stated here as :data:`OVERHEAD` — the interpreter with pyspark and pyarrow
loaded, the replication buffers and the copies a micro-batch makes on its way to Spark (Arrow
IPC bytes, then the pickled partition), measured at about 350 MB on this code base. Without the
bound the transaction's change events alone take several hundred megabytes.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from deltalake import DeltaTable

from sparkcdc.sources.mysql.throwaway import ThrowawayMariaDB
from tests.e2e.cli import available_now, log_end, write_config

pytestmark = [pytest.mark.mariadb, pytest.mark.spark, pytest.mark.slow]

ROWS = int(os.environ.get("SPARKCDC_BIG_ROWS", "1000000"))
MAX_BYTES = 16 * 2**20
OVERHEAD = 448 * 2**20


def test_one_million_row_transaction_in_bounded_memory(
    mariadb: ThrowawayMariaDB, db: str, tmp_path: Path
) -> None:
    start = log_end(mariadb)
    mariadb.execute(
        f"CREATE TABLE {db}.big (id BIGINT PRIMARY KEY, note VARCHAR(64), amount DECIMAL(12,2))",
        f"INSERT INTO {db}.big SELECT seq, CONCAT('row-', seq), seq * 0.5 FROM seq_1_to_{ROWS}",
        database=db,
    )
    cfg = write_config(
        tmp_path, mariadb, rf"{db}\.big", max_bytes="16MB", trigger="0s", startup=start
    )
    available_now(cfg, timeout=900)

    metrics = json.loads((tmp_path / "checkpoint" / "sparkcdc" / "metrics.json").read_text())
    assert metrics["store_peak_bytes"] <= MAX_BYTES + 2**20, metrics
    assert metrics["peak_rss_bytes"] <= MAX_BYTES + OVERHEAD, (
        f"source process peak RSS {metrics['peak_rss_bytes'] / 2**20:.0f} MiB is above "
        f"max_bytes + {OVERHEAD / 2**20:.0f} MiB"
    )
    lake = tmp_path / "lake" / db
    assert DeltaTable(str(lake / "big")).to_pyarrow_table(columns=["id"]).num_rows == ROWS
    log = DeltaTable(str(lake / "big__changelog")).to_pyarrow_table(columns=["op", "transaction"])
    assert log.num_rows == ROWS
    orders = log.column("transaction").combine_chunks().field("total_order").to_pylist()
    assert sorted(orders) == list(range(1, ROWS + 1)), "a split lost or repeated rows"
