"""Every DDL leaves the replica equal to the source, through ``sparkcdc run`` on MariaDB.

One pipeline streams while the test changes two tables' schemas: constant defaults, a NOT NULL
column's implicit default, a nullable column, renames, widening type changes and NULLs made NOT
NULL are applied to the replica's rows in the DDL's own batch (``sparkcdc verify`` equal right
after the pipeline committed past them); expression and volatile defaults, narrowing type
changes that round and truncate, a charset change and generated columns make the pipeline read
the table again by itself, which the notifications and ``sparkcdc status`` show, and ``verify``
is equal once it is done. A ``kill -9`` between such a DDL's batch and the end of its snapshot
still converges after the restart. One pipeline does it all, to keep the test short.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sparkcdc.config.load import load_config
from sparkcdc.sinks.delta.notifications import read_notifications
from sparkcdc.sources.mysql.throwaway import ThrowawayMariaDB
from sparkcdc.sources.registry import open_source
from sparkcdc.verify.committed import CommittedPosition
from tests.e2e.cli import crash, write_config

pytestmark = [pytest.mark.mariadb, pytest.mark.spark, pytest.mark.slow]

SOURCE = (
    ", server_id: '7411-7420', snapshot: {chunk_size: 100, incremental_chunks: 1, "
    "incremental_window: 20ms}"
)
ROWS = 3000  # kinds; dflt a third

Proc = subprocess.Popen[bytes]


def cli(cfg: Path, *args: str) -> tuple[int, str]:
    done = subprocess.run(
        [sys.executable, "-m", "sparkcdc.cli.main", *args, str(cfg)],
        capture_output=True, timeout=600,
    )  # fmt: skip
    return done.returncode, (done.stdout + done.stderr).decode(errors="replace")


def verified(cfg: Path) -> str:
    code, out = cli(cfg, "verify")
    assert code == 0 and "every table equal" in out, out
    return out


def committed_past_log_end(cfg: Path, proc: Proc) -> None:
    """Wait until the running pipeline has committed everything the server logged so far."""
    config = load_config(cfg)
    source = open_source(config.source)
    with source.catalog() as catalog:
        end = catalog.log_end()
    spark = Path(config.pipeline.checkpoint) / "spark"
    committed = CommittedPosition(spark, source.offset, lambda: proc.poll() is None, 180)
    assert committed.wait_past(end), f"the pipeline did not commit past {end}"


def streaming(server: ThrowawayMariaDB, db: str, cfg: Path, proc: Proc) -> None:
    """Wait until the initial snapshot is done and the log reader reads on from it: a
    transaction written after the hand-off committed past. A DDL made before the log reader
    opened would be in the schemas it reads from the catalog already, and be answered by
    reading the table again rather than in its own batch."""
    committed_past_log_end(cfg, proc)  # the snapshot handed off to the log
    server.execute(f"UPDATE {db}.dflt SET v = v + 1 WHERE id = {ROWS // 3}")
    committed_past_log_end(cfg, proc)  # the log reader read past it


def notes(lake: Path, table: str) -> list[dict[str, Any]]:
    return [
        {**n, "details": json.loads(n["details"] or "{}")}
        for n in read_notifications(str(lake))
        if f"{n['db']}.{n['table']}" == table
    ]


def reread(lake: Path, table: str) -> list[dict[str, Any]]:
    """The notifications of ``table`` since the pipeline queued it after a schema change."""
    found = notes(lake, table)
    starts = [i for i, n in enumerate(found) if n["details"].get("signal") == "schema-change"]
    return found[starts[-1] :] if starts else []


def wait_for(proc: Proc, done: Callable[[], bool], what: str, timeout: float = 240) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        out = proc.stdout.read().decode(errors="replace") if proc.poll() is not None else ""
        assert proc.poll() is None, f"the pipeline exited while waiting for {what}:\n{out}"
        assert time.monotonic() < deadline, f"{what}: not within {timeout:.0f} s"
        time.sleep(0.25)


def done_reading(lake: Path, table: str) -> Callable[[], bool]:
    return lambda: any(n["type"] == "table-done" for n in reread(lake, table))


def make_tables(server: ThrowawayMariaDB, db: str, rows: int = ROWS) -> None:
    server.execute(
        f"CREATE TABLE {db}.dflt (id INT PRIMARY KEY, v INT)",
        f"INSERT INTO {db}.dflt SELECT seq, seq FROM {db}.seq_1_to_{rows // 3}",
        f"CREATE TABLE {db}.kinds (id INT PRIMARY KEY, a INT, m DECIMAL(10,3), s VARCHAR(10),"
        " w INT, n INT NULL, c VARCHAR(10) CHARACTER SET utf8mb4, d DECIMAL(8,2))",
        f"INSERT INTO {db}.kinds SELECT seq, seq, seq + 0.456, CONCAT('abcdefgh', seq % 10), seq,"
        f" IF(seq % 3 = 0, NULL, seq), IF(seq % 2, 'ab✓', 'ab'), seq / 7 FROM {db}.seq_1_to_{rows}",
    )


def changes(server: ThrowawayMariaDB, db: str, *ddl: str, table: str = "kinds") -> None:
    """``ddl`` without strict SQL mode (conversions round and truncate), then updates of 10 rows
    and of 10 keys."""
    column = "v" if table == "dflt" else "w"
    server.execute("SET SESSION sql_mode = ''", *ddl, database=db)
    server.execute(
        f"UPDATE {table} SET {column} = {column} + 1 WHERE id BETWEEN 1 AND 10",
        f"UPDATE {table} SET id = -id WHERE id BETWEEN 11 AND 20",
        database=db,
    )


def test_every_ddl_leaves_the_replica_equal_to_the_source(
    mariadb: ThrowawayMariaDB, db: str, tmp_path: Path, launch: Callable[[Path], Proc]
) -> None:
    make_tables(mariadb, db)
    cfg = write_config(tmp_path, mariadb, rf"{db}\.(dflt|kinds)", startup="initial",
                       extra_source=SOURCE)  # fmt: skip
    lake, kinds = tmp_path / "lake", f"{db}.kinds"
    proc = launch(cfg)
    streaming(mariadb, db, cfg, proc)
    # exact in the DDL's own batch: constant and implicit defaults, nullable columns, a
    # rename, widening type changes, NULLs made NOT NULL (outside strict mode: 0)
    changes(mariadb, db, "ALTER TABLE dflt ADD COLUMN pts INT NOT NULL DEFAULT 7, ADD COLUMN "
            "tag VARCHAR(10) DEFAULT 'x', ADD COLUMN z INT NOT NULL, ADD COLUMN q INT NULL, ADD "
            "COLUMN e ENUM('p','q') NOT NULL, ADD COLUMN k DECIMAL(6,2) DEFAULT -2.456",
            table="dflt")  # fmt: skip
    changes(mariadb, db, "ALTER TABLE kinds RENAME COLUMN a TO b, MODIFY w BIGINT, MODIFY d "
            "DECIMAL(12,3)", "ALTER TABLE kinds MODIFY n INT NOT NULL")  # fmt: skip
    committed_past_log_end(cfg, proc)
    verified(cfg)
    assert not reread(lake, f"{db}.dflt") and not reread(lake, kinds)
    # read again by the pipeline itself: expression and volatile defaults, a narrowing decimal
    # that rounds, a VARCHAR that truncates, a charset that loses characters, generated columns
    changes(mariadb, db, "ALTER TABLE dflt ADD COLUMN at DATETIME DEFAULT CURRENT_TIMESTAMP, "
            "ADD COLUMN x INT DEFAULT (1 + 2), ADD COLUMN u CHAR(36) DEFAULT uuid()",
            table="dflt")  # fmt: skip
    changes(mariadb, db, "ALTER TABLE kinds MODIFY m DECIMAL(10,1), MODIFY s VARCHAR(4), "
            "MODIFY c VARCHAR(10) CHARACTER SET latin1, ADD COLUMN g BIGINT AS (w * 2) "
            "VIRTUAL, ADD COLUMN h BIGINT AS (w + 1) STORED")  # fmt: skip
    wait_for(proc, done_reading(lake, f"{db}.dflt"), f"{db}.dflt read again")
    # kill -9 while the snapshot of kinds the DDL started runs: the restart goes on with it
    wait_for(proc, lambda: chunks(lake, kinds) >= 2, f"{kinds}'s snapshot under way")
    shown = f"{kinds} read again: a schema change rewrote rows the log does not show (column m"
    wait_for(proc, lambda: shown in cli(cfg, "status")[1], "status to show why", timeout=60)
    crash(proc)
    assert not done_reading(lake, kinds)(), "the snapshot ended before the crash"
    queued = reread(lake, kinds)[0]["details"]
    assert "column m: decimal(10,3) to decimal(10,1) may round" in queued["reason"], queued
    proc = launch(cfg)
    wait_for(proc, done_reading(lake, kinds), f"{kinds} read again after the restart")
    starts = [n for n in reread(lake, kinds) if n["type"] == "started"]
    assert len(starts) == 1, starts  # the restart went on with the run the DDL started
    committed_past_log_end(cfg, proc)
    verified(cfg)
    proc.terminate()
    assert proc.wait(timeout=120) == 0


def chunks(lake: Path, table: str) -> int:
    """The chunks of ``table`` delivered since the pipeline queued it after a schema change."""
    return sum(n["type"] == "chunk" for n in reread(lake, table))
