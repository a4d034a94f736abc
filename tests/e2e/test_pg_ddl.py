"""Every PostgreSQL DDL leaves the replica exact, through ``sparkcdc run`` and ``sparkcdc
verify``: columns added with constant, expression and NOT NULL defaults (filled from the
catalog in the batch's commit), a nullable one without a default, renames (copied) and widening
type changes (left alone) never read the table again; a volatile default and narrowing or
rewriting type changes start an incremental snapshot of their table by themselves while the
stream goes on. DDL made while the pipeline is stopped reaches the replica as exactly on the
next run, and DDL made while a new pipeline's initial snapshot runs as exactly once the log
reader reaches it: the snapshot's pin recorded the tables as of its point. DDL of a table with
no change since, which the log has not shown yet, is as exact after an incremental snapshot of
the table: the snapshot reads it as the log reader describes it. After each run ``verify`` finds
every table equal."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable

from sparkcdc.sources.postgres.throwaway import ThrowawayPostgres
from tests.cases.command import verify
from tests.e2e.cli import write_pg_config
from tests.e2e.incremental_runs import (
    Launch,
    incremental_source,
    notes,
    signal,
    stop,
    wait_for,
)

pytestmark = [pytest.mark.postgres, pytest.mark.spark, pytest.mark.slow]

ROWS = 400
TABLES = (
    "CREATE TABLE cust (id int PRIMARY KEY, name text)",
    f"INSERT INTO cust SELECT g, 'c' || g FROM generate_series(1, {ROWS}) g",
    "CREATE TABLE ren (id int PRIMARY KEY, a text, s varchar(10), w numeric(10,2))",
    f"INSERT INTO ren SELECT g, 'a' || g, 's' || g, g / 3.0 FROM generate_series(1, {ROWS}) g",
    "CREATE TABLE vol (id int PRIMARY KEY, m numeric(10,3), k int)",
    f"INSERT INTO vol SELECT g, g / 7.0, g FROM generate_series(1, {ROWS}) g",
    "CREATE TABLE late (id int PRIMARY KEY, a text, s varchar(10), w numeric(10,2))",
    f"INSERT INTO late SELECT g, 'a' || g, 's' || g, g / 3.0 FROM generate_series(1, {ROWS}) g",
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
CAPTURED = ("cust", "ren", "vol", "late")
BEFORE_SNAPSHOT = (  # DDL of late, then an incremental snapshot of it before any change
    "ALTER TABLE late RENAME COLUMN a TO b",
    "ALTER TABLE late ADD COLUMN pts int NOT NULL DEFAULT 7",
    "ALTER TABLE late ALTER COLUMN s TYPE varchar(40)",
    "ALTER TABLE late ALTER COLUMN w TYPE numeric(14,2)",
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


def holds(lake: Path, table: str, row_id: int, column: str, value: object) -> bool:
    """Whether the replica's row ``row_id`` of ``table`` holds ``value`` in ``column``: a change
    made after a DDL has arrived. A DDL is a micro-batch of its own when it reaches the store
    before the rest of its transaction or the changes after it, so its copy or fill can show
    before them; a stop then leaves them to the next run."""
    return any(r["id"] == row_id and r.get(column) == value for r in replica(lake, table))


def renamed(lake: Path, column: str, table: str = "ren") -> bool:
    """Every row of ``table`` but the two changed holds its first column's value in
    ``column``."""
    rows = replica(lake, table)
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
    cfg = write_pg_config(
        tmp_path,
        postgres,
        pgdb,
        r"public\.(cust|ren|vol|late)",
        startup="initial",
        extra_source=incremental_source(chunk=150),
    )
    lake = tmp_path / "lake"
    proc = launch(cfg)
    wait_for(proc, lambda: all(len(replica(lake, t)) == ROWS for t in CAPTURED),
             "the initial snapshot")  # fmt: skip
    # DDL made while the snapshot runs is the next test's: wait until the log reader streams
    postgres.execute(f"UPDATE cust SET name = 'streaming' WHERE id = {ROWS}", database=pgdb)
    wait_for(proc, lambda: any(r["name"] == "streaming" for r in replica(lake, "cust")),
             "the log reader to stream")  # fmt: skip
    postgres.execute(*RUNNING, database=pgdb)
    wait_for(proc, lambda: all_rows(lake, "cust", "loyalty_points", 0), "the defaults filled")
    wait_for(proc, lambda: renamed(lake, "b"), "the rename copied")
    wait_for(proc, lambda: snapshot_after_schema_change(lake, "vol"), "vol read again")
    wait_for(proc, lambda: holds(lake, "cust", 1, "name", "first") and holds(lake, "ren", 1, "b",
             "first") and holds(lake, "vol", 2, "k", 1), "the changes after the DDL")  # fmt: skip
    snapshot_before_the_stream_sees_the_ddl(postgres, pgdb, cfg, proc)
    stop(proc)
    code, out = verify(cfg)
    assert code == 0 and "every table equal" in out, out
    assert notes(lake, table="public.cust") == [] and notes(lake, table="public.ren") == []
    kinds = {n["type"] for n in notes(lake, table="public.late")}  # the signal's run only
    assert kinds == {"queued", "started", "chunk", "table-done"}, kinds

    postgres.execute(*STOPPED, database=pgdb)
    proc = launch(cfg)
    wait_for(proc, lambda: all_rows(lake, "cust", "bonus", 5), "the default filled on restart")
    wait_for(proc, lambda: renamed(lake, "c"), "the rename on restart")
    wait_for(proc, lambda: holds(lake, "cust", 2, "name", "second") and holds(lake, "ren", 2, "c",
             "second"), "the changes after the DDL on restart")  # fmt: skip
    stop(proc)
    code, out = verify(cfg)
    assert code == 0 and "every table equal" in out, out
    assert notes(lake, table="public.cust") == [] and notes(lake, table="public.ren") == []


def snapshot_before_the_stream_sees_the_ddl(
    postgres: ThrowawayPostgres, pgdb: str, cfg: Path, proc: Any
) -> None:
    """DDL of ``late``, then an incremental snapshot of it with no change of it in between:
    the stream has seen no Relation message of the DDL, so the chunks read the table in the
    stream's schema (``a`` under its name ``b`` now, ``pts`` left out, ``s`` and ``w`` cast
    back); the change after them brings the DDL, whose copy and fill apply to those rows."""
    lake = cfg.parent / "lake"
    postgres.execute(*BEFORE_SNAPSHOT, database=pgdb)
    assert "sent to" in signal(cfg, "execute-snapshot", "--tables", "public.late")
    wait_for(proc, lambda: bool(notes(lake, "table-done", table="public.late")), "late read")
    assert "b" not in replica(lake, "late")[0]  # the stream has not seen the rename yet
    postgres.execute("UPDATE late SET b = 'first' WHERE id = 1", database=pgdb)
    wait_for(proc, lambda: renamed(lake, "b", "late") and all_rows(lake, "late", "pts", 7),
             "late's rename copied and pts filled")  # fmt: skip
    wait_for(proc, lambda: holds(lake, "late", 1, "b", "first"), "late's change after its DDL")


SNAPSHOT_ROWS = {"snap_fill": 2000, "snap_ren": 400, "snap_vol": 400}  # chunks of 100 rows
DURING_SNAPSHOT = (  # snap_fill's snapshot under way, the other two not begun
    "ALTER TABLE snap_fill ADD COLUMN pts int DEFAULT 5",
    "ALTER TABLE snap_ren RENAME COLUMN a TO b",
    "ALTER TABLE snap_vol ADD COLUMN u uuid DEFAULT gen_random_uuid()",  # rewrites the table
    "UPDATE snap_fill SET n = 0 WHERE id = 1",
    "UPDATE snap_ren SET n = 0 WHERE id = 1",
    "UPDATE snap_vol SET n = 0 WHERE id = 1",
)


def split_metas(tmp: Path, table: str) -> list[dict[str, Any]]:
    """The finished splits of ``table``'s initial snapshot."""
    metas = []
    for path in (tmp / "checkpoint" / "sparkcdc" / "snapshot" / "splits" / table).glob("*.json"):
        with contextlib.suppress(OSError, ValueError):  # being replaced right now
            metas.append(json.loads(path.read_text()))
    return metas


def every_row(lake: Path, table: str, check: Any) -> bool:
    rows = replica(lake, table)
    return len(rows) == SNAPSHOT_ROWS[table] and all(check(r) for r in rows)


def test_ddl_during_the_initial_snapshot_leaves_the_replica_exact(
    postgres: ThrowawayPostgres, pgdb: str, tmp_path: Path, launch: Launch
) -> None:
    """A constant default added, a column renamed and a volatile default added (a rewrite,
    which the exported snapshot cannot see past) while the initial snapshot runs: the first is
    filled and the second copied when the log reader reaches them, the third's table read
    again; the chunks read after the DDL read the columns as of the snapshot's point."""
    for table, rows in SNAPSHOT_ROWS.items():
        postgres.execute(
            f"CREATE TABLE {table} (id int PRIMARY KEY, a text, n int)",
            f"INSERT INTO {table} SELECT g, 'a' || g, g FROM generate_series(1, {rows}) g",
            database=pgdb,
        )
    snapshot = "snapshot: {chunk_size: 100, parallelism: 1, batch_rows: 100}"
    cfg = write_pg_config(
        tmp_path,
        postgres,
        pgdb,
        r"public\.snap_.*",
        startup="initial",
        extra_source=f", {snapshot}",
    )
    lake = tmp_path / "lake"
    proc = launch(cfg)
    wait_for(proc, lambda: len(split_metas(tmp_path, "public.snap_fill")) >= 2, "2 chunks read")
    postgres.execute(*DURING_SNAPSHOT, database=pgdb)
    assert len(split_metas(tmp_path, "public.snap_fill")) < 20, "the snapshot ended first"
    assert split_metas(tmp_path, "public.snap_ren") == []
    wait_for(proc, lambda: every_row(lake, "snap_fill", lambda r: r.get("pts") == 5), "pts filled")
    wait_for(proc, lambda: every_row(lake, "snap_ren", lambda r: r.get("b") == f"a{r['id']}"),
             "the rename copied")  # fmt: skip
    wait_for(proc, lambda: snapshot_after_schema_change(lake, "snap_vol"), "snap_vol read again")
    stop(proc)
    code, out = verify(cfg)
    assert code == 0 and "every table equal" in out, out
    assert notes(lake, table="public.snap_fill") == notes(lake, table="public.snap_ren") == []
    pinned = {m["high"]["lsn"] for m in split_metas(tmp_path, "public.snap_fill")}
    rewritten = {m["high"]["lsn"] for m in split_metas(tmp_path, "public.snap_vol")}
    assert rewritten and rewritten.isdisjoint(pinned)  # read in pins taken after the rewrite
