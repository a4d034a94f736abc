"""``source.heartbeat`` in ``sparkcdc run`` against a MariaDB server of the test's own: the
captured table is idle while another database takes writes, and the checkpoint's committed
offset follows the binlog into newer files (over the other database's transactions, and with
the writes stopped over a new file's header alone), so binlogs purged up to it strand nothing:
the pipeline restarts there and the next row arrives."""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable

from sparkcdc.sources.mysql.offset import file_sequence
from sparkcdc.sources.mysql.throwaway import ThrowawayMariaDB, throwaway_mariadb
from sparkcdc.spark.offsets import source_position
from sparkcdc.spark.pipeline.offset_log import newest_batch, read_offset_file
from sparkcdc.spark.stream.status import STATUS_FILE, read_status
from tests.e2e.cli import available_now, log_end, purge_binlogs_to, run, start, write_config

pytestmark = pytest.mark.mariadb


@pytest.fixture
def own_server() -> Iterator[ThrowawayMariaDB]:
    """A server of the test's own: its binlogs are purged, which other tests would miss."""
    with throwaway_mariadb() as server:
        server.execute(
            "CREATE DATABASE quiet",
            "CREATE DATABASE busy",
            "CREATE TABLE quiet.idle (id INT PRIMARY KEY, note VARCHAR(40))",
            "CREATE TABLE busy.t (id INT AUTO_INCREMENT PRIMARY KEY, pad VARCHAR(100))",
        )
        yield server


class Writer(threading.Thread):
    """Inserts into ``busy.t`` every 20 ms until stopped."""

    def __init__(self, server: ThrowawayMariaDB) -> None:
        super().__init__(daemon=True)
        self.server, self.done = server, threading.Event()

    def run(self) -> None:
        with self.server.connect("busy") as conn, conn.cursor() as cur:
            while not self.done.wait(0.02):
                cur.execute("INSERT INTO t (pad) VALUES (REPEAT('x', 100))")

    def stop(self) -> None:
        self.done.set()
        self.join(10)


def committed(checkpoint: Path) -> dict[str, Any] | None:
    """The source offset the newest batch Spark committed ends at (None: none committed)."""
    spark = checkpoint / "spark"
    newest = newest_batch(spark / "commits")
    if newest is None:
        return None
    return source_position(read_offset_file(spark / "offsets" / newest.name).offset)


def master_file(server: ThrowawayMariaDB) -> str:
    return str(server.query("SHOW MASTER STATUS")[0][0])


def wait(
    proc: subprocess.Popen[bytes], what: str, done: Callable[[], bool], timeout: float
) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        if proc.poll() is not None:
            out = proc.stdout.read().decode(errors="replace") if proc.stdout else ""
            pytest.fail(f"the pipeline exited while waiting for {what}:\n{out}")
        assert time.monotonic() < deadline, f"{what}: not within {timeout:.0f} s"
        time.sleep(0.25)


def test_the_committed_offset_follows_the_binlog_so_purging_strands_nothing(
    own_server: ThrowawayMariaDB, tmp_path: Path
) -> None:
    server, checkpoint = own_server, tmp_path / "checkpoint"
    first_file = master_file(server)
    cfg = write_config(
        tmp_path, server, r"quiet\.idle", startup=log_end(server),
        extra_source=", heartbeat: {interval: 1s}",
    )  # fmt: skip

    def reached(file: str) -> Callable[[], bool]:
        def done() -> bool:
            offset = committed(checkpoint)
            return offset is not None and file_sequence(offset["file"]) >= file_sequence(file)

        return done

    writer = Writer(server)
    writer.start()
    proc = start(cfg)
    try:
        wait(proc, "a first committed batch", lambda: committed(checkpoint) is not None, 180)
        server.execute("FLUSH BINARY LOGS")  # the other database's writes go on in a new file
        wait(proc, "the offset in the second binlog", reached(master_file(server)), 60)
        writer.stop()
        server.execute("FLUSH BINARY LOGS")  # nothing is written: only the heartbeat moves on
        wait(proc, "the offset in the third binlog", reached(master_file(server)), 30)
        status = read_status(checkpoint / "sparkcdc" / STATUS_FILE) or {}
        assert status.get("heartbeats", 0) >= 1, status
    finally:
        writer.stop()
        proc.terminate()
        out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0, out.decode(errors="replace")
    at = committed(checkpoint)
    assert at is not None and file_sequence(at["file"]) == file_sequence(first_file) + 2
    server.execute(*["FLUSH BINARY LOGS"] * 3)
    purge_binlogs_to(server, at["file"])
    kept = [str(row[0]) for row in server.query("SHOW BINARY LOGS")]
    assert kept[0] == at["file"] and first_file not in kept
    server.execute("INSERT INTO quiet.idle VALUES (1, 'written after the purge')")
    available_now(cfg)
    lake = tmp_path / "lake" / "quiet"
    replica = DeltaTable(str(lake / "idle")).to_pyarrow_table().to_pylist()
    assert replica == [{"id": 1, "note": "written after the purge"}]
    log = DeltaTable(str(lake / "idle__changelog")).to_pyarrow_table().to_pylist()
    assert [(r["op"], r["source"]["file"]) for r in log] == [("c", kept[-1])]


def test_a_failing_action_query_stops_the_run_with_its_sentence(
    mariadb: ThrowawayMariaDB, db: str, tmp_path: Path
) -> None:
    mariadb.execute(f"CREATE TABLE `{db}`.idle (id INT PRIMARY KEY)")
    query = f"UPDATE `{db}`.heartbeat SET ts = NOW() WHERE id = 1"
    cfg = write_config(
        tmp_path, mariadb, rf"{db}\.idle", startup=log_end(mariadb),
        extra_source=f', heartbeat: {{interval: 500ms, action_query: "{query}"}}',
    )  # fmt: skip
    code, out = run(cfg, timeout=300)
    assert code == 2, out
    sentence = (
        f"source.heartbeat.action_query failed on 127.0.0.1:{mariadb.port} (error 1146: Table "
        f"'{db}.heartbeat' doesn't exist); fix the statement or the privileges it needs, or "
        "leave it out."
    )
    assert out.strip().splitlines()[-1] == f"sparkcdc: {sentence}", out  # what the run ends with
    assert "Traceback" not in out, out
