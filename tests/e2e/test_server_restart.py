"""The source server goes away mid-stream: the pipeline reconnects with backoff and resumes
exactly where it stopped — no change missing, none doubled."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from deltalake import DeltaTable

from sparkcdc.sources.mysql.throwaway import ThrowawayMariaDB
from tests.e2e.cli import start, write_config

pytestmark = [pytest.mark.mariadb, pytest.mark.spark]


@pytest.fixture
def own_server(tmp_path: Path) -> Iterator[ThrowawayMariaDB]:
    """A server of this test's own: restarting it must not disturb other tests."""
    server = ThrowawayMariaDB.start(base_dir=str(tmp_path))
    try:
        yield server
    finally:
        server.stop()


def wait_for_rows(path: Path, rows: int, timeout: float = 180) -> int:
    deadline = time.monotonic() + timeout
    seen = -1
    while time.monotonic() < deadline:
        try:
            seen = DeltaTable(str(path)).to_pyarrow_table(columns=["id"]).num_rows
        except Exception:  # the table is not there yet
            seen = -1
        if seen >= rows:
            return seen
        time.sleep(0.5)
    return seen


def test_server_restart_mid_stream(own_server: ThrowawayMariaDB, tmp_path: Path) -> None:
    server = own_server
    server.execute("CREATE DATABASE app", "CREATE TABLE app.t (id INT PRIMARY KEY, v INT)")
    cfg = write_config(tmp_path, server, r"app\.t", trigger="300ms")
    proc = start(cfg)
    try:
        for i in range(0, 500, 10):
            values = ", ".join(f"({k}, {k})" for k in range(i, i + 10))
            server.execute(f"INSERT INTO app.t VALUES {values}")
        assert wait_for_rows(tmp_path / "lake" / "app" / "t", 500) == 500
        server.restart()
        server.execute(
            "UPDATE app.t SET v = v + 1 WHERE id < 100",
            "DELETE FROM app.t WHERE id >= 450",
            *(f"INSERT INTO app.t VALUES ({k}, {k})" for k in range(1000, 1100)),
        )
        assert wait_for_rows(tmp_path / "lake" / "app" / "t", 550) == 550
        time.sleep(2)  # a late duplicate would show up in the change log now
        assert proc.poll() is None, "the pipeline died instead of reconnecting"
    finally:
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0, out.decode()
    replica = DeltaTable(str(tmp_path / "lake" / "app" / "t")).to_pyarrow_table().to_pylist()
    assert sorted((r["id"], r["v"]) for r in replica) == sorted(
        server.query("SELECT id, v FROM app.t")
    )
    log = DeltaTable(str(tmp_path / "lake" / "app" / "t__changelog")).to_pyarrow_table()
    ops = log.column("op").to_pylist()
    assert (ops.count("c"), ops.count("u"), ops.count("d")) == (600, 100, 50)


def test_a_server_gone_mid_snapshot_is_one_sentence(
    own_server: ThrowawayMariaDB, tmp_path: Path
) -> None:
    """The server dies while chunks are read (no reconnecting inside a snapshot task): the run
    ends with the source's sentence alone, not Spark's report of the failed query above it."""
    server = own_server
    server.execute(
        "CREATE DATABASE app",
        "CREATE TABLE app.t (id INT PRIMARY KEY, v VARCHAR(40))",
        "INSERT INTO app.t SELECT seq, CONCAT('row ', seq) FROM app.seq_1_to_400000",
    )
    extra = ", snapshot: {chunk_size: 2000, batch_rows: 20000}"
    cfg = write_config(tmp_path, server, r"app\.t", startup="initial", extra_source=extra)
    proc = start(cfg)
    splits = tmp_path / "checkpoint" / "sparkcdc" / "snapshot" / "splits" / "app.t"
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline and len(list(splits.glob("*.json"))) < 4:
        time.sleep(0.2)
    assert list(splits.glob("*.json")), "the snapshot never started"
    server.process.kill()
    server.process.wait()
    out, _ = proc.communicate(timeout=180)
    text = out.decode(errors="replace")
    assert proc.returncode != 0, text
    last = text.strip().splitlines()[-1]
    assert last.startswith("sparkcdc: ") and f":{server.port}" in last, text
    assert "Traceback" not in text and "terminated with error" not in text, text
