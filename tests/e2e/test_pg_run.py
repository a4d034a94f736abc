"""``sparkcdc check`` and ``sparkcdc run`` on PostgreSQL: the check passes, a first run makes the
slot and the publication (named after the checkpoint), and a second run from the checkpoint
fills the replica and the change log (typed) with what was written in between; the slot's
confirmed position never passes a batch Spark has not committed, and a third run moves it to
the end of the last one."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest
from deltalake import DeltaTable

from sparkcdc.sources.postgres.throwaway import ThrowawayPostgres
from sparkcdc.sources.postgres.wire.lsn import parse_lsn
from tests.e2e.cli import available_now, run, write_config

pytestmark = pytest.mark.postgres


def test_check_and_run_on_postgresql(
    postgres: ThrowawayPostgres, pgdb: str, tmp_path: Path
) -> None:
    postgres.execute(
        "CREATE TABLE orders (id bigint PRIMARY KEY, amount numeric(10,2), note text, "
        "placed timestamptz, paid boolean)",
        database=pgdb,
    )
    cfg = write_config(
        tmp_path, postgres, r"public\.orders", user=postgres.user, password=postgres.password,
        startup="earliest", kind="postgres", extra_source=f", database: {pgdb}",
    )  # fmt: skip
    code, out = run(cfg, command="check")
    assert code == 0, out
    available_now(cfg)  # makes the slot and the publication; nothing to read yet
    slots = postgres.query("SELECT slot_name FROM pg_replication_slots", database=pgdb)
    assert ("sparkcdc_checkpoint",) in slots
    postgres.execute(
        "INSERT INTO orders VALUES (1, 10.50, 'first', '2024-05-01 10:00:00+00', false), "
        "(2, 20.00, 'second', '2024-05-02 11:30:00.25+00', false), (3, 1.00, NULL, NULL, NULL)",
        "UPDATE orders SET paid = true, note = 'paid' WHERE id = 1",
        "DELETE FROM orders WHERE id = 3",
        database=pgdb,
    )
    available_now(cfg)
    lake = tmp_path / "lake" / "public"
    replica = DeltaTable(str(lake / "orders")).to_pyarrow_table().sort_by("id").to_pylist()
    assert [(r["id"], r["amount"], r["note"], r["paid"]) for r in replica] == [
        (1, Decimal("10.50"), "paid", True), (2, Decimal("20.00"), "second", False),
    ]  # fmt: skip
    assert replica[1]["placed"].isoformat() == "2024-05-02T11:30:00.250000+00:00"
    log = DeltaTable(str(lake / "orders__changelog")).to_pyarrow_table().to_pylist()
    assert sorted(r["op"] for r in log) == ["c", "c", "c", "d", "u"]
    assert all(r["source"]["lsn"] > 0 and r["source"]["txid"] > 0 for r in log)
    ends = max(r["source"]["lsn"] for r in log)
    # Spark commits a batch's source offsets when it plans the next batch: the slot stays at
    # the run's start until then, never past a batch not committed
    assert confirmed(postgres, pgdb) < ends
    available_now(cfg)  # nothing new: the reader starts at the last batch's end and confirms it
    assert confirmed(postgres, pgdb) > ends


def confirmed(postgres: ThrowawayPostgres, pgdb: str) -> int:
    [(text,)] = postgres.query(
        "SELECT confirmed_flush_lsn::text FROM pg_replication_slots "
        "WHERE slot_name = 'sparkcdc_checkpoint'",
        database=pgdb,
    )
    return parse_lsn(text)
