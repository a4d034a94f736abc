"""``source.heartbeat`` in ``sparkcdc run``, on every source: on a server of the test's own the
captured table is idle while another database takes writes, and the checkpoint's committed
offset follows the log into newer files (over the other database's transactions, and with the
writes stopped over a new file's start alone), so the server lets go of the log the pipeline
started in, and the log it then drops up to the committed offset strands nothing: the pipeline
restarts there and the next row arrives. Without a heartbeat, ``run --available-now`` ends on a
log whose end a new file moved with no transaction after it. A failing action query ends the
run with its sentence."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable

from sparkcdc.spark.offsets import source_position
from sparkcdc.spark.pipeline.offset_log import newest_batch, read_offset_file
from sparkcdc.spark.stream.status import STATUS_FILE, read_status
from tests.cases.e2e_sources import E2ESource
from tests.e2e.cli import available_now, run
from tests.e2e.incremental_runs import Launch, stop, wait_for
from tests.e2e.snapshot_workload import Server


class Writer(threading.Thread):
    """Inserts into ``t`` of the database ``db`` every 20 ms until stopped."""

    def __init__(self, server: Server, db: str) -> None:
        super().__init__(daemon=True)
        self.server, self.db, self.done = server, db, threading.Event()

    def run(self) -> None:
        with contextlib.closing(self.server.connect(self.db)) as conn, conn.cursor() as cur:
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


@pytest.mark.extended("mysql")
def test_the_committed_offset_follows_the_log_so_dropping_it_strands_nothing(
    own_source: E2ESource, launch: Launch, tmp_path: Path
) -> None:
    source, checkpoint = own_source, tmp_path / "checkpoint"
    source.execute("CREATE TABLE idle (id INT PRIMARY KEY, note VARCHAR(40))")
    source.create_other_database("busy")
    startup = source.start_capturing(["idle"])
    first = source.log_end()
    cfg = source.config(tmp_path, "idle", startup, extra_source=", heartbeat: {interval: 1s}")

    def reached(place: Any) -> Callable[[], bool]:
        def done() -> bool:
            offset = committed(checkpoint)
            return offset is not None and source.log_place(offset) >= place

        return done

    writer = Writer(source.server, "busy")
    writer.start()
    proc = launch(cfg)
    try:
        wait_for(proc, lambda: committed(checkpoint) is not None, "a first batch", 180)
        second = source.new_log_file()  # the other database's writes go on in a new file
        wait_for(proc, reached(second), "the offset in the second log file", 60)
        writer.stop()
        third = source.new_log_file()  # nothing is written: only the heartbeat moves on
        wait_for(proc, reached(third), "the offset in the third log file", 30)
        status = read_status(checkpoint / "sparkcdc" / STATUS_FILE) or {}
        assert status.get("heartbeats", 0) >= 1, status
        gone = "the server letting go of the first log file"
        wait_for(proc, lambda: source.log_released(first), gone, 90)
    finally:
        writer.stop()
    stop(proc)
    at = committed(checkpoint)
    assert at is not None and source.log_place(at) >= third
    oldest = source.reclaim_log(at)
    assert first < oldest <= source.log_place(at), (first, oldest, at)  # the first log is gone
    end = source.log_end()
    source.execute("INSERT INTO idle VALUES (1, 'written after the log was dropped')")
    available_now(cfg)
    lake = source.lake(tmp_path)
    replica = DeltaTable(str(lake / "idle")).to_pyarrow_table().to_pylist()
    assert replica == [{"id": 1, "note": "written after the log was dropped"}]
    log = DeltaTable(str(lake / "idle__changelog")).to_pyarrow_table().to_pylist()
    assert [r["op"] for r in log] == ["c"] and source.place(log[0]["source"]) >= end


def settled_log_end(source: E2ESource, timeout: float = 10.0) -> Any:
    """The log's end once it stopped moving for half a second (MariaDB writes a new file's
    binlog checkpoint event a moment after the file begins)."""
    end, since = source.log_end(), time.monotonic()
    deadline = since + timeout
    while time.monotonic() - since < 0.5:
        assert time.monotonic() < deadline, "the log's end kept moving"
        time.sleep(0.1)
        now = source.log_end()
        if now != end:
            end, since = now, time.monotonic()
    return end


@pytest.mark.extended("postgres")
def test_available_now_ends_on_a_log_a_new_file_moved_on_without_a_transaction(
    source: E2ESource, tmp_path: Path
) -> None:
    """The new file's first records are no transaction, so no offset can reach the log end
    seen at the start: the run ends once it read everything and the reader stood still (it
    waited for a transaction before, for ever on an idle server)."""
    source.execute("CREATE TABLE idle (id INT PRIMARY KEY)")
    startup = source.start_capturing(["idle"])
    source.execute("INSERT INTO idle VALUES (1)")
    cfg = source.config(tmp_path, "idle", startup)
    available_now(cfg, timeout=300)
    source.new_log_file()
    settled_log_end(source)
    available_now(cfg, timeout=180)
    source.execute("INSERT INTO idle VALUES (2)")
    available_now(cfg, timeout=180)
    replica = DeltaTable(str(source.lake(tmp_path) / "idle")).to_pyarrow_table().to_pylist()
    assert sorted(r["id"] for r in replica) == [1, 2]


@pytest.mark.extended("postgres")
def test_a_failing_action_query_stops_the_run_with_its_sentence(
    source: E2ESource, tmp_path: Path
) -> None:
    source.execute("CREATE TABLE idle (id INT PRIMARY KEY)")
    startup = source.start_capturing(["idle"])
    query = f"UPDATE {source.qualified('heartbeat')} SET ts = NOW() WHERE id = 1"
    beat = f', heartbeat: {{interval: 500ms, action_query: "{query}"}}'
    cfg = source.config(tmp_path, "idle", startup, extra_source=beat)
    code, out = run(cfg, timeout=300)
    assert code == 2, out
    sentence = (
        f"source.heartbeat.action_query failed on 127.0.0.1:{source.server.port} "
        f"({source.missing_table_words('heartbeat')}); fix the statement or the privileges it "
        "needs, or leave it out."
    )
    assert out.strip().splitlines()[-1] == f"sparkcdc: {sentence}", out  # what the run ends with
    assert "Traceback" not in out, out
