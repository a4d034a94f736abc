"""Incremental snapshots of PostgreSQL tables through ``sparkcdc run`` and ``sparkcdc signal``.

The pipeline starts at the WAL's end, so rows written before it reach the replica only through
an incremental snapshot (DBLog windows between LSN watermarks). ``execute-snapshot`` while
writers churn the table (inserts inside and beyond its maximum key, updates, deletes,
primary-key updates) and another table: the replica equals the source row by row, the change log
holds every change once and never a snapshot row older than a change of its key. Signals
through a signal table in PostgreSQL: pause, resume, log and a ``--where`` condition.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from sparkcdc.snapshot.signals import SIGNAL_TABLE_DDL
from sparkcdc.sources.postgres.throwaway import ThrowawayPostgres
from tests.cases.changelog import source_names
from tests.e2e.cli import write_config
from tests.e2e.incremental_runs import (
    COLUMNS,
    CountedChurn,
    Launch,
    check_changelog,
    check_progress,
    incremental_source,
    launch,
    notes,
    replica,
    signal,
    stop,
    wait_for,
)
from tests.e2e.snapshot_workload import PG_ITEMS, load_items

pytestmark = [pytest.mark.postgres, pytest.mark.spark, pytest.mark.slow]
__all__ = ["launch"]  # the fixture


SLOT = "sparkcdc_checkpoint"  # named after the checkpoint folder


def pg_config(
    tmp: Path, postgres: ThrowawayPostgres, db: str, tables: list[str], extra: str = ""
) -> Path:
    """A pipeline of ``tables`` (in ``public``) from the log's start: the slot and the
    publication are made first, so every write from here on is in the log the pipeline reads."""
    postgres.execute(
        f"CREATE PUBLICATION {SLOT} FOR TABLE {', '.join(tables)}",
        f"SELECT pg_create_logical_replication_slot('{SLOT}', 'pgoutput')",
        database=db,
    )
    pattern = rf"public\.({'|'.join(tables)})"
    return write_config(
        tmp, postgres, pattern, user=postgres.user, password=postgres.password,
        startup="earliest", kind="postgres",
        extra_source=f", database: {db}{extra}{incremental_source()}",
    )  # fmt: skip


def wal_event(source: dict[str, Any]) -> str:
    """A change log row's place in the WAL, in log order (its position text)."""
    return str(source["position"])


def rows_of(server: ThrowawayPostgres, db: str, table: str) -> list[tuple[Any, ...]]:
    return sorted(server.query(f"SELECT {', '.join(COLUMNS)} FROM {table}", db))


def caught_up(proc: Any, server: ThrowawayPostgres, db: str, lake: Path, tables: list[str]) -> None:
    def equal() -> bool:
        return all(replica(lake / "public" / t) == rows_of(server, db, t) for t in tables)

    wait_for(proc, equal, "the replica to catch up with the source", timeout=90)


def test_incremental_snapshot_under_a_concurrent_workload(
    postgres: ThrowawayPostgres, pgdb: str, tmp_path: Path, launch: Launch
) -> None:
    load_items(postgres, pgdb, 30000)
    postgres.execute(PG_ITEMS.replace("items", "other"), database=pgdb)  # filled through the log
    cfg = pg_config(tmp_path, postgres, pgdb, ["items", "other"])
    lake = tmp_path / "lake"
    churn = CountedChurn(postgres, pgdb, top=60000, seed=11, pause=0.005)
    side = CountedChurn(postgres, pgdb, top=20000, seed=12, pause=0.01, table="other")
    proc = launch(cfg)
    churn.start()
    side.start()
    try:
        wait_for(proc, lambda: bool(replica(lake / "public" / "other")), "the stream to flow")
        assert "sent to" in signal(cfg, "execute-snapshot", "--tables", "public.items")
        wait_for(proc, lambda: bool(notes(lake, "completed")), "the snapshot to complete")
        time.sleep(1)  # the log flows on past the snapshot
    finally:
        churn.halt()
        side.halt()
    caught_up(proc, postgres, pgdb, lake, ["items", "other"])
    stop(proc)

    assert churn.commits > 100 and side.commits > 50
    reads = check_changelog(lake / "public" / "items__changelog", churn.changes, wal_event)
    reads_from = source_names(lake / "public" / "items__changelog", "r")
    assert reads_from == {(pgdb, "public", "items", True)}  # db the database, schema the schema
    assert check_changelog(lake / "public" / "other__changelog", side.changes, wal_event) == 0
    rows = check_progress(lake, "public.items")
    assert len(rows) >= 2, f"the snapshot took {len(rows)} window only"
    assert 20000 < reads <= rows[-1]  # window changes dropped some rows, not many
    assert len(notes(lake, "completed")) == 1


def test_signals_through_a_signal_table(
    postgres: ThrowawayPostgres, pgdb: str, tmp_path: Path, launch: Launch
) -> None:
    load_items(postgres, pgdb, 20000)
    postgres.execute(
        SIGNAL_TABLE_DDL.format(name="sig"),
        PG_ITEMS.replace("items", "dark"),
        "INSERT INTO dark SELECT i, 1, 'dark-' || i, 0.5 FROM generate_series(1, 3000) i",
        database=pgdb,
    )
    cfg = pg_config(
        tmp_path, postgres, pgdb, ["items", "dark", "sig"], ", signal_table: public.sig"
    )
    lake = tmp_path / "lake"
    proc = launch(cfg)
    # paused first, so no chunk can be read before the resume whatever the timing
    assert "sent to public.sig" in signal(cfg, "pause-snapshot")
    signal(cfg, "execute-snapshot", "--tables", "public.items")
    signal(cfg, "execute-snapshot", "--tables", "public.dark", "--where", "id % 10 = 0")
    signal(cfg, "log", "--message", "backfill queued")
    wait_for(proc, lambda: bool(notes(lake, "log")), "the log signal")
    time.sleep(2)  # batches go by, paused
    assert not notes(lake, "chunk")
    signal(cfg, "resume-snapshot")
    wait_for(proc, lambda: len(notes(lake, "table-done")) == 2, "both tables to be done")
    caught_up(proc, postgres, pgdb, lake, ["items"])
    stop(proc)

    assert replica(lake / "public" / "dark") == [
        r for r in rows_of(postgres, pgdb, "dark") if r[0] % 10 == 0
    ]
    assert [n["details"].get("message") for n in notes(lake, "log")] == ["backfill queued"]
