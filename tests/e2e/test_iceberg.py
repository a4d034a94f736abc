"""The Iceberg sink end to end (``sink.type: iceberg``): the pipeline files of the Delta tests
with nothing else changed, the lake read back with pyiceberg and Polars.

Every MariaDB type round-trips with equal values; schema changes (a column added with a default
that fills the rows before it, a TRUNCATE, a table created mid-stream) reach the replica and
the change log, and ``sparkcdc verify`` reads them; a TOASTed value PostgreSQL left out of the
log is filled from the Iceberg replica as it was before the batch; ``kill -9`` of the whole
pipeline mid initial snapshot and mid-stream (MariaDB and PostgreSQL) and mid incremental
snapshot (MariaDB) leaves a replica equal to the source, a change log holding every change
exactly once and a history table equal to the change log's rebuild; the first two also with
the warehouse on S3 and the catalog in PostgreSQL.
``SPARKCDC_ICEBERG_*CRASH_TRIALS`` set the crashes (one here, five in
``scripts/crash_trials.sh``)."""

from __future__ import annotations

import contextlib
import os
import random
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import polars as pl
import pytest
from pyiceberg.expressions import EqualTo

from sparkcdc.demo import compare
from sparkcdc.sources.mysql.server.catalog import MySQLCatalog
from sparkcdc.sources.mysql.throwaway import ThrowawayMariaDB
from sparkcdc.sources.postgres.throwaway import ThrowawayPostgres
from tests.cases.command import verify
from tests.cases.e2e_sources import E2ESource
from tests.cases.pg_toast import DOC, big
from tests.cases.pg_toast import source_rows as doc_rows
from tests.cases.s3 import MotoS3, storage_options
from tests.e2e.cli import available_now, crash, log_end, write_config, write_pg_config
from tests.e2e.crashes import (
    accounts,
    assert_exactly_once,
    crash_trials,
    identities,
    source_rows,
)
from tests.e2e.history_check import assert_history_matches, keep_history
from tests.e2e.iceberg_lake import IcebergLake, as_iceberg
from tests.e2e.incremental_runs import (
    COLUMNS,
    CountedChurn,
    Launch,
    binlog_event,
    check_progress_of,
    incremental_source,
    items_of,
    picked_notes,
    signal,
    stop,
    wait_for,
)
from tests.e2e.incremental_runs import check_changelog_rows as check_log_events
from tests.e2e.snapshot_runs import (
    ITEM_COLUMNS,
    check_changelog_rows,
    crash_mid_snapshot,
    replica_of,
)
from tests.e2e.snapshot_workload import Churn, load_items
from tests.e2e.test_types import ALL_TYPES, ROWS
from tests.e2e.workload import DDL, ChangeWorkload

pytestmark = [pytest.mark.spark]

TRIALS = int(os.environ.get("SPARKCDC_ICEBERG_CRASH_TRIALS", "1"))
CHANGES = {"mysql": 20_000, "postgres": 10_000}
SEEDS = {"mysql": 3000, "postgres": 4000}
SNAPSHOT_TRIALS = int(os.environ.get("SPARKCDC_ICEBERG_SNAPSHOT_CRASH_TRIALS", "1"))
INCREMENTAL_TRIALS = int(os.environ.get("SPARKCDC_ICEBERG_INCREMENTAL_CRASH_TRIALS", "2"))
NOTIFICATIONS = ("_sparkcdc", "notifications")
S3_SNAPSHOT_ROWS = 2000
S3_CHANGES = 3000


def compact(cfg: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sparkcdc.cli.main", "compact", str(cfg), *args],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def s3_objects(options: dict[str, str], url: str) -> set[str]:
    """The ``s3://`` URLs of the objects under ``url`` on moto's server."""
    from pyarrow import fs

    endpoint = urlsplit(options["AWS_ENDPOINT_URL"])
    s3 = fs.S3FileSystem(
        access_key=options["AWS_ACCESS_KEY_ID"], secret_key=options["AWS_SECRET_ACCESS_KEY"],
        endpoint_override=endpoint.netloc, scheme=endpoint.scheme, region="us-east-1",
    )  # fmt: skip
    found = s3.get_file_info(fs.FileSelector(url.removeprefix("s3://"), recursive=True))
    return {f"s3://{info.path}" for info in found if info.type == fs.FileType.File}


def assert_replica_equals_source(
    server: ThrowawayMariaDB, lake: IcebergLake, db: str, table: str
) -> None:
    with MySQLCatalog(server.host, server.port, server.user, server.password) as catalog:
        schema = catalog.load_schema(db, table)
    expected = compare.canonical_rows(compare.source_rows(server, schema), schema)
    held = lake.arrow(db, table).select(schema.column_names()).to_pylist()
    actual = compare.canonical_rows([list(r.values()) for r in held], schema)
    assert len(actual) == len(expected)
    for want, got in zip(sorted(expected), sorted(actual), strict=True):
        diff = {
            name: (w, g)
            for name, w, g in zip(schema.column_names(), want, got, strict=True)
            if w != g
        }
        assert not diff, f"row {want[0]} differs (column: (source, replica)): {diff}"


@pytest.mark.mariadb
def test_every_type_round_trips_into_iceberg(
    mariadb: ThrowawayMariaDB, db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mariadb.execute("SET GLOBAL time_zone = '+00:00'")
    start = log_end(mariadb)
    mariadb.execute(ALL_TYPES.format(db=db), *(r.format(db=db) for r in ROWS))
    cfg = as_iceberg(write_config(tmp_path, mariadb, rf"{db}\.all_types", startup=start))
    available_now(cfg)
    lake = IcebergLake(tmp_path / "lake")
    assert_replica_equals_source(mariadb, lake, db, "all_types")
    ops = lake.arrow(db, "all_types__changelog").column("op").to_pylist()
    assert sorted(ops) == ["c", "c", "c", "c", "d", "u"]
    changelog = lake.catalog.load_table((db, "all_types__changelog"))
    monkeypatch.setenv("POLARS_ICEBERG_PLANNER", "pyiceberg")  # Polars' own planner, no plugin
    read = pl.scan_iceberg(changelog).select("op").collect()  # as Polars reads it
    assert sorted(read["op"].to_list()) == sorted(ops)


@pytest.mark.mariadb
def test_schema_changes_and_a_truncate_reach_iceberg(
    mariadb: ThrowawayMariaDB, db: str, tmp_path: Path
) -> None:
    """ADD COLUMN with a default (the rows before it get the default), a TRUNCATE, a table made
    mid-stream with a BIGINT UNSIGNED (decimal(20,0) in Iceberg); a run with nothing new writes
    nothing; ``sparkcdc verify`` finds the replicas equal, then names a row deleted by hand."""
    start = log_end(mariadb)
    mariadb.execute(
        f"CREATE TABLE {db}.items (id INT PRIMARY KEY, name VARCHAR(20))",
        f"INSERT INTO {db}.items VALUES (1, 'one'), (2, 'two')",
    )
    cfg = as_iceberg(write_config(tmp_path, mariadb, rf"{db}\..*", startup=start))
    available_now(cfg)
    mariadb.execute(
        f"ALTER TABLE {db}.items ADD COLUMN price DECIMAL(8,2) NOT NULL DEFAULT 4.25 AFTER id",
        f"INSERT INTO {db}.items VALUES (3, 9.99, 'three')",
        f"UPDATE {db}.items SET price = 1.50 WHERE id = 1",
        f"CREATE TABLE {db}.later (k VARCHAR(8) PRIMARY KEY, v BIGINT UNSIGNED)",
        f"INSERT INTO {db}.later VALUES ('a', 18446744073709551615)",
        f"CREATE TABLE {db}.emptied (id INT PRIMARY KEY)",
        f"INSERT INTO {db}.emptied VALUES (1), (2)",
        f"TRUNCATE TABLE {db}.emptied",
        f"INSERT INTO {db}.emptied VALUES (3)",
    )
    available_now(cfg)
    lake = IcebergLake(tmp_path / "lake")
    for table in ("items", "later", "emptied"):
        assert_replica_equals_source(mariadb, lake, db, table)
    assert {r["id"]: str(r["price"]) for r in lake.rows(db, "items")} == {
        1: "1.50",
        2: "4.25",
        3: "9.99",
    }
    ops = [r["op"] for r in sorted(lake.rows(db, "emptied__changelog"),
                                   key=lambda r: r["source"]["position"])]  # fmt: skip
    assert ops == ["c", "c", "t", "c"]
    before = lake.snapshots(db, "items")
    available_now(cfg)  # nothing new: nothing written
    assert lake.snapshots(db, "items") == before
    code, out = verify(cfg)
    assert code == 0, out
    lake.catalog.load_table((db, "items")).delete(EqualTo("id", 2))  # by hand
    code, out = verify(cfg)
    assert code == 1 and "missing from the replica: 1: id=2" in out, out


@pytest.mark.extended("mysql")
def test_kill_9_mid_stream_into_iceberg(source: E2ESource, tmp_path: Path) -> None:
    """TRIALS crashes of one pipeline writing Iceberg, each while a part of the workload runs and
    at a random moment after the restarted pipeline wrote again; a last restart catches up."""
    rng = random.Random(SEEDS[source.name])
    changes = CHANGES[source.name]
    source.create_accounts()
    startup = source.start_capturing(["accounts"])
    cfg = keep_history(as_iceberg(source.config(tmp_path, "accounts", startup)))
    lake = IcebergLake(tmp_path / "lake")

    def workload(trial: int) -> ChangeWorkload:
        part = -(-changes // TRIALS)
        return ChangeWorkload(source.server, source.database, part, trial, source.dialect)

    written = crash_trials(cfg, lambda: lake.snapshots(source.schema, "accounts__changelog"),
                           workload, TRIALS, rng)  # fmt: skip
    expected = written
    if not source.full_before_image:  # a delete's before image holds its key only
        expected = Counter(
            {(op, key, -1 if op == "d" else v): n for (op, key, v), n in written.items()}
        )
    available_now(cfg)  # restart from the same checkpoint and catch up with everything

    assert accounts(lake.rows(source.schema, "accounts")) == source.accounts_rows()
    seen = identities(lake.rows(source.schema, "accounts__changelog"))
    assert_exactly_once(seen, expected, changes)
    assert_history_matches(lake, source.schema, "accounts")


@pytest.mark.mariadb
@pytest.mark.postgres
@pytest.mark.s3
def test_an_iceberg_lake_on_s3_through_a_crash(
    mariadb: ThrowawayMariaDB, postgres: ThrowawayPostgres, s3: MotoS3, db: str, tmp_path: Path
) -> None:
    """The warehouse on S3 (moto's server), the SQL catalog in a PostgreSQL database named by
    ``sink.catalog.uri``, the S3 options from ``sink.storage_options``: an initial snapshot,
    the stream, ``kill -9`` and a restart; the lake holds the source exactly once."""
    mariadb.execute(*(s.format(db=db) for s in DDL))
    first = 50_000_000  # the workload's keys start at 1
    mariadb.execute(
        f"INSERT INTO {db}.accounts SELECT {first} + seq, 0, seq / 100, CONCAT('s-', seq), "
        f"NOW(6), seq % 256 FROM {db}.seq_1_to_{S3_SNAPSHOT_ROWS}"
    )
    warehouse = f"s3://{s3.bucket()}/lake"
    options = s3.options()
    catalog_db = f"catalog_{db}"[:60]
    with contextlib.closing(postgres.connect()) as conn:
        conn.autocommit = True
        conn.cursor().execute(f"DROP DATABASE IF EXISTS {catalog_db}")
        conn.cursor().execute(f"CREATE DATABASE {catalog_db}")
    where = f"{postgres.user}:{postgres.password}@127.0.0.1:{postgres.port}/{catalog_db}"
    catalog = f"postgresql+psycopg2://{where}"
    sink = storage_options(options) + f", catalog: {{uri: '{catalog}'}}"
    cfg = as_iceberg(write_config(tmp_path, mariadb, rf"{db}\..*", startup="initial",
                                  lake=warehouse, extra_sink=sink))  # fmt: skip
    lake = IcebergLake(tmp_path, catalog, {
        "warehouse": warehouse, "s3.endpoint": options["AWS_ENDPOINT_URL"],
        "s3.access-key-id": options["AWS_ACCESS_KEY_ID"],
        "s3.secret-access-key": options["AWS_SECRET_ACCESS_KEY"], "s3.region": "us-east-1",
    })  # fmt: skip
    available_now(cfg)
    expected = crash_trials(
        cfg, lambda: lake.snapshots(db, "accounts__changelog"),
        lambda trial: ChangeWorkload(mariadb, db, S3_CHANGES, trial), 1, random.Random(8),
    )  # fmt: skip
    available_now(cfg)
    table = lake.catalog.load_table((db, "accounts"))
    assert table.location().startswith(warehouse)
    assert accounts(lake.rows(db, "accounts")) == [
        (i, v, b, o, u, int.from_bytes(f, "big") if isinstance(f, bytes) else f)
        for i, v, b, o, u, f in source_rows(mariadb, db)
    ]
    expected += Counter(("r", first + i, 0) for i in range(1, S3_SNAPSHOT_ROWS + 1))
    seen = identities(lake.rows(db, "accounts__changelog"))
    assert not {k: n for k, n in seen.items() if n > 1}
    assert seen == expected

    compacted = compact(cfg, "--retain", "0s")  # the upkeep on S3, the catalog in PostgreSQL
    assert compacted.returncode == 0, compacted.stderr
    assert f"upkeep of {db}.accounts__changelog: compacted" in compacted.stdout
    for name in ("accounts", "accounts__changelog"):
        table = lake.catalog.load_table((db, name))
        live = {task.file.file_path for task in table.scan().plan_files()}
        assert len(table.snapshots()) == 1
        assert s3_objects(options, f"{table.location()}/data") == live
    assert identities(lake.rows(db, "accounts__changelog")) == expected


@pytest.mark.extended("postgres")
def test_kill_9_mid_snapshot_into_iceberg(source: E2ESource, tmp_path: Path) -> None:
    """SNAPSHOT_TRIALS crashes in one initial snapshot written to Iceberg, each at a random
    moment after new splits finished, under a concurrent workload: no restart reads a finished
    split again, the replica equals the source, the change log holds one ``r`` row per key
    and no change older than it, and the history table equals the change log's rebuild."""
    rng = random.Random(SEEDS[source.name] + 1)
    splits = 30
    load_items(source.server, source.database, splits * 1000)
    settings = source.snapshot_settings(chunk=1000, batch_rows=2000)
    cfg = as_iceberg(source.config(tmp_path, "items", "initial", extra_source=settings))
    keep_history(cfg)
    churn = Churn(source.server, source.database, top=splits * 2000, seed=5, pause=0.01)
    table = f"{source.schema}.items"
    after = crash_mid_snapshot(cfg, tmp_path, table, splits, churn, rng, SNAPSHOT_TRIALS)
    assert len(after) >= splits
    lake = IcebergLake(tmp_path / "lake")
    wanted = sorted(source.query("SELECT id, version, name, amount FROM items"))
    assert replica_of(lake.rows(source.schema, "items"), ITEM_COLUMNS) == wanted
    check_changelog_rows(lake.rows(source.schema, "items__changelog"), source.place)
    assert_history_matches(lake, source.schema, "items")


@pytest.mark.extended
@pytest.mark.mariadb
def test_kill_9_mid_incremental_snapshot_into_iceberg(
    mariadb: ThrowawayMariaDB, db: str, tmp_path: Path, launch: Launch
) -> None:
    """INCREMENTAL_TRIALS crashes in one incremental snapshot written to Iceberg while writers
    churn the table, each at a random moment after a new chunk: each restart goes on after the
    last chunk delivered, the replica equals the source, the change log holds every change once
    and no snapshot row older than a change of its key; the notifications are in
    ``_sparkcdc.notifications``."""
    rng = random.Random(701)
    table = f"{db}.items"
    load_items(mariadb, db, 20000)
    cfg = as_iceberg(write_config(tmp_path, mariadb, rf"{db}\.items", startup=log_end(mariadb),
                                  extra_source=incremental_source(window="0s"),
                                  extra_sink=", history: true"))  # fmt: skip
    lake = IcebergLake(tmp_path / "lake")

    def kept() -> list[dict[str, Any]]:
        if lake.snapshots(*NOTIFICATIONS) < 0:
            return []
        return sorted(lake.rows(*NOTIFICATIONS), key=lambda n: (n["batch_id"], n["index"]))

    churn = CountedChurn(mariadb, db, top=40000, seed=7, pause=0.02)
    churn.start()
    crashes: list[list[dict[str, Any]]] = []
    try:
        proc = launch(cfg)
        signal(cfg, "execute-snapshot", "--tables", table)
        for _ in range(INCREMENTAL_TRIALS):
            seen = len(picked_notes(kept(), "chunk", table))
            wait_for(proc, lambda n=seen: len(picked_notes(kept(), "chunk", table)) > n,
                     "a new chunk")  # fmt: skip
            time.sleep(rng.uniform(0.0, 1.0))
            crash(proc)
            crashes.append(kept())
            proc = launch(cfg)
        wait_for(proc, lambda: bool(picked_notes(kept(), "completed")), "the snapshot to end")
    finally:
        churn.halt()
    wanted = items_of(mariadb, db)
    wait_for(proc, lambda: replica_of(lake.rows(db, "items"), COLUMNS) == wanted,
             "the replica to catch up with the source", timeout=90)  # fmt: skip
    stop(proc)
    reads = check_log_events(lake.rows(db, "items__changelog"), churn.changes, binlog_event)
    rows = check_progress_of(kept(), table)
    assert 10000 < reads <= rows[-1]
    everything = kept()
    for before in crashes:  # each restart went on after the last chunk delivered before it
        assert everything[: len(before)] == before
        chunks = [n for n in picked_notes(before, "chunk", table)]
        later = picked_notes(everything[len(before) :], "chunk", table)
        if chunks and later and not picked_notes(before, "table-done", table):
            assert later[0]["details"]["rows"] > chunks[-1]["details"]["rows"]
    assert_history_matches(lake, db, "items")


@pytest.mark.extended
@pytest.mark.postgres
def test_a_toasted_value_an_update_left_out_is_filled_in_iceberg(
    postgres: ThrowawayPostgres, pgdb: str, tmp_path: Path
) -> None:
    """PostgreSQL leaves a TOASTed value an update did not change out of the log: it comes from
    the key's change before it in the batch, or from the Iceberg replica as it was before the
    batch; the replica and every ``after`` of the change log hold the real value."""
    postgres.execute(*DOC, database=pgdb)
    cfg = as_iceberg(write_pg_config(tmp_path, postgres, pgdb, r"public\.doc", startup="earliest"))
    lake = IcebergLake(tmp_path / "lake")
    available_now(cfg)  # makes the slot and the publication
    postgres.execute(
        f"INSERT INTO doc VALUES (1, {big('a')}, 0), (2, {big('b')}, 0)",
        "UPDATE doc SET n = 1 WHERE id = 1",  # in the insert's micro-batch
        database=pgdb,
    )
    available_now(cfg)
    postgres.execute(
        "UPDATE doc SET n = n + 1",  # a later micro-batch: from the replica
        "UPDATE doc SET n = 10 WHERE id = 2",  # from the change before it
        database=pgdb,
    )
    available_now(cfg)
    source = doc_rows(postgres, pgdb)
    assert sorted(lake.rows("public", "doc"), key=lambda r: r["id"]) == source
    bodies = {r["id"]: r["body"] for r in source}
    log = lake.rows("public", "doc__changelog")
    assert len(log) == 2 + 1 + 2 + 1
    assert all(r["after"]["body"] == bodies[r["after"]["id"]] for r in log)
