"""Every PostgreSQL DDL leaves the replica exact, through ``sparkcdc run`` and ``sparkcdc
verify``: columns added with constant, expression and NOT NULL defaults (filled from the
catalog in the batch's commit), a nullable one without a default, renames (copied) and widening
type changes (left alone) never read the table again; a volatile default and narrowing or
rewriting type changes start an incremental snapshot of their table by themselves while the
stream goes on. DDL made while the pipeline is stopped reaches the replica as exactly on the
next run. After each run ``verify`` finds every table equal."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable

from sparkcdc.sources.postgres.throwaway import ThrowawayPostgres
from tests.e2e.cli import write_config
from tests.e2e.test_incremental import Launch, incremental_source, launch, notes, stop, wait_for
from tests.e2e.test_verify import verify

pytestmark = [pytest.mark.postgres, pytest.mark.spark, pytest.mark.slow]
__all__ = ["launch"]  # the fixture

ROWS = 400
TABLES = (
    "CREATE TABLE cust (id int PRIMARY KEY, name text)",
    f"INSERT INTO cust SELECT g, 'c' || g FROM generate_series(1, {ROWS}) g",
    "CREATE TABLE ren (id int PRIMARY KEY, a text, s varchar(10), w numeric(10,2))",
    f"INSERT INTO ren SELECT g, 'a' || g, 's' || g, g / 3.0 FROM generate_series(1, {ROWS}) g",
    "CREATE TABLE vol (id int PRIMARY KEY, m numeric(10,3), k int)",
    f"INSERT INTO vol SELECT g, g / 7.0, g FROM generate_series(1, {ROWS}) g",
)
RUNNING = (  # DDL while the pipeline runs, each table's followed by a change of one row
    "ALTER TABLE cust ADD COLUMN loyalty_points integer DEFAULT 0",
    "ALTER TABLE cust ADD COLUMN tier text NOT NULL DEFAULT 'basic'",
    "ALTER TABLE cust ADD COLUMN joined timestamptz DEFAULT now()",
    "ALTER TABLE cust ADD COLUMN code int DEFAULT length('abcd') * 2",
    "ALTER TABLE cust ADD COLUMN note text",
    "UPDATE cust SET name = 'first' WHERE id = 1",
    "ALTER TABLE ren RENAME COLUMN a TO b",
    "ALTER TABLE ren ALTER COLUMN s TYPE varchar(40)",
    "ALTER TABLE ren ALTER COLUMN w TYPE numeric(14,2)",
    "UPDATE ren SET b = 'first' WHERE id = 1",
    "ALTER TABLE vol ADD COLUMN u uuid DEFAULT gen_random_uuid()",
    "ALTER TABLE vol ADD COLUMN t timestamptz NOT NULL DEFAULT clock_timestamp()",
    "ALTER TABLE vol ALTER COLUMN m TYPE numeric(10,1)",
    "UPDATE vol SET k = 0 WHERE id = 1",
    "ALTER TABLE vol ALTER COLUMN k TYPE bigint",  # widening, by a rewrite
    "UPDATE vol SET k = 1 WHERE id = 2",
)
STOPPED = (  # DDL while it is stopped
    "ALTER TABLE cust ADD COLUMN bonus int NOT NULL DEFAULT 5",
    "UPDATE cust SET name = 'second' WHERE id = 2",
    "ALTER TABLE ren RENAME COLUMN b TO c",
    "ALTER TABLE ren ALTER COLUMN s TYPE text",
    "UPDATE ren SET c = 'second' WHERE id = 2",
)


def replica(lake: Path, table: str) -> list[dict[str, Any]]:
    path = str(lake / "public" / table)
    return DeltaTable(path).to_pyarrow_table().to_pylist() if DeltaTable.is_deltatable(path) else []


def all_rows(lake: Path, table: str, column: str, value: object) -> bool:
    rows = replica(lake, table)
    return len(rows) == ROWS and all(r.get(column) == value for r in rows if r["id"] > 2)


def renamed(lake: Path, column: str) -> bool:
    """Every row of ``ren`` but the two changed holds its first column's value in ``column``."""
    rows = replica(lake, "ren")
    return len(rows) == ROWS and all(r.get(column) == f"a{r['id']}" for r in rows if r["id"] > 2)


def snapshot_after_schema_change(lake: Path, table: str) -> bool:
    """An incremental snapshot of ``table`` queued by a schema change, and done since."""
    kinds = [(n["type"], n["details"].get("signal")) for n in notes(lake, table=f"public.{table}")]
    queued = [i for i, k in enumerate(kinds) if k == ("queued", "schema-change")]
    return bool(queued) and any(k[0] == "table-done" for k in kinds[queued[0] :])


def test_every_ddl_leaves_the_replica_exact(
    postgres: ThrowawayPostgres, pgdb: str, tmp_path: Path, launch: Launch
) -> None:
    postgres.execute(*TABLES, database=pgdb)
    cfg = write_config(
        tmp_path, postgres, r"public\.(cust|ren|vol)", user=postgres.user,
        password=postgres.password, startup="initial", kind="postgres",
        extra_source=f", database: {pgdb}{incremental_source(chunk=150)}",
    )  # fmt: skip
    lake = tmp_path / "lake"
    proc = launch(cfg)
    wait_for(proc, lambda: all(len(replica(lake, t)) == ROWS for t in ("cust", "ren", "vol")),
             "the initial snapshot")  # fmt: skip
    # the log reader reads its schemas from the catalog when it starts, after the snapshot: DDL
    # before then would be in its schemas already (docs/postgres.md); wait until it streams
    postgres.execute(f"UPDATE cust SET name = 'streaming' WHERE id = {ROWS}", database=pgdb)
    wait_for(proc, lambda: any(r["name"] == "streaming" for r in replica(lake, "cust")),
             "the log reader to stream")  # fmt: skip
    postgres.execute(*RUNNING, database=pgdb)
    wait_for(proc, lambda: all_rows(lake, "cust", "loyalty_points", 0), "the defaults filled")
    wait_for(proc, lambda: renamed(lake, "b"), "the rename copied")
    wait_for(proc, lambda: snapshot_after_schema_change(lake, "vol"), "vol read again")
    stop(proc)
    code, out = verify(cfg)
    assert code == 0 and "every table equal" in out, out
    assert notes(lake, table="public.cust") == [] and notes(lake, table="public.ren") == []

    postgres.execute(*STOPPED, database=pgdb)
    proc = launch(cfg)
    wait_for(proc, lambda: all_rows(lake, "cust", "bonus", 5), "the default filled on restart")
    wait_for(proc, lambda: renamed(lake, "c"), "the rename on restart")
    stop(proc)
    code, out = verify(cfg)
    assert code == 0 and "every table equal" in out, out
    assert notes(lake, table="public.cust") == [] and notes(lake, table="public.ren") == []
