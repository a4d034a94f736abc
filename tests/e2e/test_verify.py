"""``sparkcdc verify`` as a user runs it, against a real MariaDB.

After a snapshot the replicas are equal (an integer key compared in NumPy, a case-insensitive
string key placed by the database); rows deleted, changed and added in the replicas by hand are
named by key, with the columns that differ, and the exit status is 1. On a pipeline that is
running while a writer churns the table, verify gives no false alarm: chunks that differed
because of changes in flight are read again once the pipeline has committed past them.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from sparkcdc.sources.mysql.throwaway import ThrowawayMariaDB
from sparkcdc.sources.postgres.throwaway import ThrowawayPostgres
from tests.cases.command import verify
from tests.e2e.cli import available_now, run, start, write_config
from tests.e2e.snapshot_workload import Churn, load_items

pytestmark = [pytest.mark.mariadb, pytest.mark.spark, pytest.mark.slow]

SOURCE = ", server_id: '7311-7320', snapshot: {chunk_size: 500, parallelism: 2}"


def make_tables(server: ThrowawayMariaDB, db: str) -> None:
    load_items(server, db, 3000)
    server.execute(
        f"CREATE TABLE {db}.tags (name VARCHAR(20) PRIMARY KEY, n INT) COLLATE utf8mb4_general_ci",
        f"INSERT INTO {db}.tags SELECT CONCAT(IF(seq % 2, 'Tag-', 'tag-'), seq), seq "
        f"FROM {db}.seq_1_to_700",
    )


def test_verify_is_equal_after_a_snapshot_and_names_the_keys_edited_by_hand(
    mariadb: ThrowawayMariaDB, db: str, tmp_path: Path
) -> None:
    make_tables(mariadb, db)
    cfg = write_config(tmp_path, mariadb, rf"{db}\.(items|tags)", startup="initial",
                       extra_source=SOURCE)  # fmt: skip
    available_now(cfg)
    code, out = verify(cfg, "--chunk-size", "400")
    assert code == 0 and "every table equal" in out, out
    items, tags = tmp_path / "lake" / db / "items", tmp_path / "lake" / db / "tags"
    DeltaTable(str(items)).delete("id = 8")
    DeltaTable(str(items)).update(
        updates={"amount": "CAST(999.99 AS DECIMAL(12,2))"}, predicate="id = 10"
    )
    DeltaTable(str(tags)).delete("name = 'tag-6'")
    extra = DeltaTable(str(items)).to_pyarrow_table().slice(0, 1)
    extra = extra.set_column(0, "id", pa.array([100001], extra.schema.field("id").type))
    write_deltalake(str(items), extra, mode="append")
    mariadb.execute(f"UPDATE {db}.tags SET n = -1 WHERE name = 'Tag-7'")  # not streamed

    code, out = run(cfg, command="verify")
    assert code == 1, out
    assert "missing from the replica: 1: id=8" in out, out
    assert "in the replica, not at the source: 1: id=100001" in out, out
    assert "different: 1: id=10 (amount)" in out, out
    assert "missing from the replica: 1: name='tag-6'" in out, out
    assert "name='Tag-7' (n)" in out, out
    code, out = run(cfg, "--tables", rf"{db}\.tags", command="verify")
    assert code == 1 and "items" not in out, out
    code, out = run(cfg, "--tables", "nothing\\.here", command="verify")
    assert code == 64 and "--tables" in out, out
    for bad in (["--chunk-size", "0"], ["--wait", "-1"]):
        code, out = run(cfg, *bad, command="verify")
        assert code == 64 and bad[0] in out, out


def test_verify_on_a_running_pipeline_under_writes_gives_no_false_alarm(
    mariadb: ThrowawayMariaDB, db: str, tmp_path: Path
) -> None:
    load_items(mariadb, db, 4000)
    cfg = write_config(tmp_path, mariadb, rf"{db}\.items", startup="initial", extra_source=SOURCE)
    proc = start(cfg)
    churn = Churn(mariadb, db, top=8000, seed=11, pause=0.005)
    try:
        replica = tmp_path / "lake" / db / "items"
        deadline = time.monotonic() + 180
        while not (replica / "_delta_log").is_dir() or DeltaTable(str(replica)).version() < 1:
            assert proc.poll() is None and time.monotonic() < deadline, "no replica written"
            time.sleep(0.5)
        churn.start()
        time.sleep(2)
        before = churn.commits
        code, out = verify(cfg, "--chunk-size", "250")
        assert churn.commits - before > 50, "the writer did not write while verify ran"
        assert code == 0, out
        assert "every table equal" in out and "chunks read again" in out, out
    finally:
        if churn.is_alive():
            churn.halt()
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=120)


@pytest.mark.postgres
def test_verify_on_postgresql(postgres: ThrowawayPostgres, pgdb: str, tmp_path: Path) -> None:
    load_items(postgres, pgdb, 2000)
    postgres.execute(
        "CREATE TABLE notes (code uuid PRIMARY KEY, body text, at timestamptz)",
        "INSERT INTO notes SELECT md5(i::text)::uuid, 'note ' || i, "
        "'2024-01-01'::timestamptz + i * interval '1 hour' FROM generate_series(1, 300) i",
        database=pgdb,
    )
    cfg = write_config(
        tmp_path, postgres, r"public\.(items|notes)", user=postgres.user,
        password=postgres.password, startup="initial", kind="postgres",
        extra_source=f", database: {pgdb}, snapshot: {{chunk_size: 500}}",
    )  # fmt: skip
    available_now(cfg)
    code, out = verify(cfg)
    assert code == 0 and "every table equal" in out, out
    DeltaTable(str(tmp_path / "lake" / "public" / "items")).delete("id = 4")
    postgres.execute("UPDATE notes SET body = 'edited' WHERE body = 'note 7'", database=pgdb)
    code, out = verify(cfg, "--chunk-size", "100")
    assert code == 1, out
    assert "missing from the replica: 1: id=4" in out, out
    assert "different: 1: code=" in out and "(body)" in out, out
