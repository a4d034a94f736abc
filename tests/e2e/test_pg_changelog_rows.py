"""The change log's rows that are no row change of the log, on PostgreSQL through ``sparkcdc
run``: the initial snapshot's ``r`` rows name the database as ``source.db`` and the schema as
``source.schema``, as the log's rows do; one TRUNCATE of several tables, with CASCADE to a table
referencing one and RESTART IDENTITY, is a ``t`` row in each table's change log (before and
after null, the statement's source and transaction), and the replicas equal the source."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable

from sparkcdc.sources.postgres.throwaway import ThrowawayPostgres
from tests.cases.changelog import source_names
from tests.e2e.cli import available_now, write_pg_config

pytestmark = [pytest.mark.postgres, pytest.mark.spark, pytest.mark.slow]

TABLES = ("parent", "child", "solo")


def replica(lake: Path, table: str) -> list[tuple[Any, ...]]:
    rows = DeltaTable(str(lake / table)).to_pyarrow_table().to_pylist()
    return sorted(tuple(r.values()) for r in rows)


def test_snapshot_sources_and_a_truncate_of_several_tables(
    postgres: ThrowawayPostgres, pgdb: str, tmp_path: Path
) -> None:
    postgres.execute(
        "CREATE TABLE parent (id bigint PRIMARY KEY, name text)",
        "CREATE TABLE child (id bigint PRIMARY KEY, parent_id bigint REFERENCES parent (id))",
        "CREATE TABLE solo (id serial PRIMARY KEY, name text)",
        "INSERT INTO parent SELECT i, 'p' || i FROM generate_series(1, 50) i",
        "INSERT INTO child SELECT i, i % 50 + 1 FROM generate_series(1, 80) i",
        "INSERT INTO solo (name) SELECT 's' || i FROM generate_series(1, 30) i",
        database=pgdb,
    )
    cfg = write_pg_config(
        tmp_path, postgres, pgdb, r"public\.(parent|child|solo)", startup="initial"
    )
    available_now(cfg)
    lake = tmp_path / "lake" / "public"
    for table in TABLES:
        assert source_names(lake / f"{table}__changelog", "r") == {(pgdb, "public", table, True)}

    postgres.execute(
        "TRUNCATE solo, parent RESTART IDENTITY CASCADE",  # child too, by its reference
        "INSERT INTO solo (name) VALUES ('again')",  # id 1 again
        "INSERT INTO parent VALUES (7, 'seven')",
        database=pgdb,
    )
    available_now(cfg)
    for table in TABLES:
        source = sorted(postgres.query(f"SELECT * FROM {table}", database=pgdb))
        assert replica(lake, table) == source, table
        log = DeltaTable(str(lake / f"{table}__changelog")).to_pyarrow_table().to_pylist()
        [truncate] = [r for r in log if r["op"] == "t"]
        assert (truncate["before"], truncate["after"]) == (None, None)
        where = truncate["source"]
        assert (where["db"], where["schema"], where["table"]) == (pgdb, "public", table)
        assert where["lsn"] > 0 and not where["snapshot"] and truncate["transaction"]["id"]
        later = [r["source"]["position"] for r in log if r["op"] in ("c", "u", "d")]
        assert all(p > where["position"] for p in later)  # the inserts after it, in log order
    assert replica(lake, "solo") == [(1, "again")]
