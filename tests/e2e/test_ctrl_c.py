"""Ctrl-C as a terminal sends it: SIGINT to the whole process group of ``sparkcdc run`` (driver,
JVM, Python workers). The batch in flight commits and no batch starts after it (Spark's
checkpoint ends on a committed batch), the run prints one line saying it stopped, no traceback
and no py4j noise, and exits 0; a restart goes on with no change missing or doubled. Tested in
the middle of a snapshot and in the middle of the log stream (MariaDB and PostgreSQL)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from deltalake import DeltaTable

from sparkcdc.sources.mysql.throwaway import ThrowawayMariaDB
from sparkcdc.sources.postgres.throwaway import ThrowawayPostgres
from tests.e2e.cli import available_now, write_config, write_pg_config
from tests.e2e.workload import DDL, MARIADB, PG_DDL, POSTGRES, ChangeWorkload

pytestmark = [pytest.mark.spark, pytest.mark.slow]

SNAPSHOT_ROWS = 6_000
NOISE = ("Traceback", "py4j", "Py4J", "Exception", "Error")


def interrupted_run(cfg: Path, ready: Callable[[], bool]) -> str:
    """``sparkcdc run`` (streaming) in a process group of its own, SIGINT to the whole group
    once ``ready()``; asserts a clean stop and returns its stderr."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "sparkcdc.cli.main", "run", str(cfg)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 300
        while not ready():
            assert proc.poll() is None, proc.communicate()[1].decode(errors="replace")
            assert time.monotonic() < deadline, "the run wrote nothing in 300 s"
            time.sleep(0.2)
        os.killpg(proc.pid, signal.SIGINT)  # as a terminal's Ctrl-C
        _, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    stderr = err.decode(errors="replace")
    assert proc.returncode == 0, stderr
    noise = [line for line in stderr.splitlines() if any(n in line for n in NOISE)]
    assert not noise, stderr
    stops = [line for line in stderr.splitlines() if line.startswith("stopped after")]
    assert len(stops) == 1 and stderr.rstrip().endswith(stops[0]), stderr
    return stderr


def last_batch(spark_checkpoint: Path, kind: str) -> int:
    """The highest micro-batch id in Spark's ``offsets`` (planned) or ``commits`` folder."""
    ids = [int(p.name) for p in (spark_checkpoint / kind).iterdir() if p.name.isdigit()]
    return max(ids, default=-1)


def assert_stopped_on_a_committed_batch(checkpoint: Path) -> None:
    """The batch in flight committed and none was planned after it."""
    spark = checkpoint / "spark"
    assert last_batch(spark, "offsets") == last_batch(spark, "commits") >= 0


def version(path: Path) -> int:
    return DeltaTable(str(path)).version() if DeltaTable.is_deltatable(str(path)) else -1


def changes(path: Path) -> int:
    return DeltaTable(str(path)).count() if DeltaTable.is_deltatable(str(path)) else 0


def snapshot_done(checkpoint: Path) -> bool:
    """Whether this run's source reports its snapshot finished and a batch committed."""
    try:
        status = json.loads((checkpoint / "sparkcdc" / "metrics.json").read_text())
    except (OSError, ValueError):  # not written yet by this run
        return False
    return status.get("snapshot_running") is False and status.get("committed_offset") is not None


def identities(path: Path) -> Counter[tuple[str, int, int]]:
    """(op, id, version) of every change; a delete's version is -1 (PostgreSQL's before image
    of a delete holds the key only)."""
    rows = DeltaTable(str(path)).to_pyarrow_table(columns=["op", "before", "after"]).to_pylist()
    return Counter(
        ("d", int(r["before"]["id"]), -1)
        if r["op"] == "d"
        else (r["op"], int(r["after"]["id"]), int(r["after"]["version"]))
        for r in rows
    )


def replica(path: Path, columns: tuple[str, ...]) -> list[tuple[object, ...]]:
    rows = DeltaTable(str(path)).to_pyarrow_table(columns=list(columns)).sort_by("id").to_pylist()
    return [tuple(r[c] for c in columns) for r in rows]


def test_ctrl_c_mid_snapshot_and_mid_stream_then_restart(
    mariadb: ThrowawayMariaDB, tmp_path: Path
) -> None:
    """Ctrl-C while a snapshot of 6,000 rows runs (in micro-batches of 1,000), again while the
    log streams under a workload, then a restart catches up with everything."""
    db = "ctrl_c"
    mariadb.execute(f"DROP DATABASE IF EXISTS {db}", f"CREATE DATABASE {db}")
    mariadb.execute(
        *(s.format(db=db) for s in DDL),
        f"CREATE TABLE {db}.big (id INT PRIMARY KEY, v VARCHAR(40))",
        f"INSERT INTO {db}.big SELECT seq, CONCAT('row ', seq) FROM seq_1_to_{SNAPSHOT_ROWS}",
        database=db,
    )
    cfg = write_config(
        tmp_path, mariadb, rf"{db}\..*", startup="initial",
        extra_source=", snapshot: {chunk_size: 500, batch_rows: 500}",
    )  # fmt: skip
    lake, checkpoint = tmp_path / "lake" / db, tmp_path / "checkpoint"

    # 1. in the middle of the snapshot: once its first micro-batch has committed
    interrupted_run(cfg, lambda: version(lake / "big__changelog") >= 0)
    assert_stopped_on_a_committed_batch(checkpoint)
    copied = DeltaTable(str(lake / "big")).count()
    assert 0 < copied < SNAPSHOT_ROWS  # the snapshot stopped part-way, to go on later

    # 2. in the middle of the log stream, a workload writing meanwhile (from the snapshot's
    # end on, so that every one of its changes comes from the log)
    workload = ChangeWorkload(mariadb, db, 5_000, seed=27, dialect=MARIADB)

    def streaming() -> bool:
        if workload.ident is None and snapshot_done(checkpoint):
            workload.start()
        return workload.ident is not None and changes(lake / "accounts__changelog") > 0

    interrupted_run(cfg, streaming)
    assert_stopped_on_a_committed_batch(checkpoint)
    workload.join()
    assert workload.error is None, workload.error

    # 3. a restart goes on: every row and change exactly once
    available_now(cfg)
    big = mariadb.query("SELECT id, v FROM big ORDER BY id", db)
    assert replica(lake / "big", ("id", "v")) == big
    reads = DeltaTable(str(lake / "big__changelog")).to_pyarrow_table(columns=["op"])
    assert reads.num_rows == SNAPSHOT_ROWS and set(reads["op"].to_pylist()) == {"r"}
    columns = ("id", "version", "balance", "owner")
    assert replica(lake / "accounts", columns) == mariadb.query(
        "SELECT id, version, balance, owner FROM accounts ORDER BY id", db
    )
    expected = Counter(
        {(op, k, -1 if op == "d" else v): n for (op, k, v), n in workload.expected.items()}
    )
    assert identities(lake / "accounts__changelog") == expected


@pytest.mark.extended
@pytest.mark.postgres
def test_ctrl_c_mid_stream_on_postgres(
    postgres: ThrowawayPostgres, pgdb: str, tmp_path: Path
) -> None:
    """The same stop on PostgreSQL's log stream, and a restart from the slot."""
    slot = "sparkcdc_checkpoint"  # named after the checkpoint folder
    postgres.execute(
        *PG_DDL,
        f"CREATE PUBLICATION {slot} FOR TABLE accounts",
        f"SELECT pg_create_logical_replication_slot('{slot}', 'pgoutput')",
        database=pgdb,
    )
    cfg = write_pg_config(tmp_path, postgres, pgdb, r"public\.accounts", startup="earliest")
    lake, checkpoint = tmp_path / "lake" / "public", tmp_path / "checkpoint"
    workload = ChangeWorkload(postgres, pgdb, 3_000, seed=28, dialect=POSTGRES)
    workload.start()
    interrupted_run(cfg, lambda: changes(lake / "accounts__changelog") > 0)
    assert_stopped_on_a_committed_batch(checkpoint)
    workload.join()
    assert workload.error is None, workload.error

    available_now(cfg)
    columns = ("id", "version", "balance", "owner")
    assert replica(lake / "accounts", columns) == postgres.query(
        "SELECT id, version, balance, owner FROM accounts ORDER BY id", pgdb
    )
    expected = Counter(
        {(op, k, -1 if op == "d" else v): n for (op, k, v), n in workload.expected.items()}
    )
    assert identities(lake / "accounts__changelog") == expected
