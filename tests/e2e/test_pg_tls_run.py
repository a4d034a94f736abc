"""``sparkcdc run`` over TLS on PostgreSQL: against a server that lets nobody in without TLS
(``ssl=on``, ``hostssl`` lines only, a certificate of the test's own CA), a pipeline with
``source.tls: verify-identity`` snapshots a table and streams the changes written afterwards.
While it runs, ``pg_stat_ssl`` (joined with ``pg_stat_activity``) shows the connections it
opened encrypted: the snapshot's COPY readers, the WAL senders of the exported snapshot and of
the stream, the catalog's sessions."""

from __future__ import annotations

import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from deltalake import DeltaTable

from sparkcdc.sources.postgres.throwaway import HBA_TLS_ONLY, ServerTls, ThrowawayPostgres
from tests.cases.tls import make_certificates
from tests.e2e.cli import start, write_config

pytestmark = [pytest.mark.postgres, pytest.mark.spark]

ROWS = 20000
SEEN = (
    "SELECT a.application_name, a.backend_type, s.ssl FROM pg_stat_activity a "
    "JOIN pg_stat_ssl s USING (pid) WHERE a.application_name LIKE 'sparkcdc%'"
)


@pytest.fixture
def secure(tmp_path: Path) -> Iterator[tuple[ThrowawayPostgres, Path]]:
    certs = make_certificates(tmp_path)
    server = ThrowawayPostgres.start(tls=ServerTls(certs["server"], certs["key"]), hba=HBA_TLS_ONLY)
    try:
        server.create_database("shop")
        server.execute(
            "CREATE TABLE items (id bigint PRIMARY KEY, name text)",
            f"INSERT INTO items SELECT i, 'item ' || i FROM generate_series(1, {ROWS}) i",
            database="shop",
        )
        yield server, certs["ca"]
    finally:
        server.stop()


class Watch(threading.Thread):
    """Samples sparkcdc's sessions in ``pg_stat_ssl`` until stopped: every (application name,
    backend type, encrypted) seen."""

    def __init__(self, server: ThrowawayPostgres) -> None:
        super().__init__(daemon=True)
        self.server, self.seen = server, set[tuple[str, str, bool]]()
        self.done = threading.Event()

    def run(self) -> None:
        conn = self.server.connect("shop")
        try:
            with conn.cursor() as cur:
                while not self.done.is_set():
                    cur.execute(SEEN)
                    self.seen.update((str(a), str(b), bool(c)) for a, b, c in cur.fetchall())
                    self.done.wait(0.02)
        finally:
            conn.close()

    def kinds(self) -> set[str]:
        """What the sessions seen were: ``copy`` (a snapshot chunk reader), ``walsender``,
        ``catalog``."""
        return {
            "copy" if name.startswith("sparkcdc reads ") else backend
            if backend == "walsender" else "catalog"
            for name, backend, _ in self.seen
        }  # fmt: skip


def test_a_pipeline_snapshots_and_streams_over_tls(
    secure: tuple[ThrowawayPostgres, Path], tmp_path: Path
) -> None:
    server, ca = secure
    source = (
        f", database: shop, tls: {{mode: verify-identity, ca: {ca}}}, "
        "snapshot: {chunk_size: 500, parallelism: 2, batch_rows: 2000}"
    )
    cfg = write_config(
        tmp_path, server, r"public\.items", user=server.user, password=server.password,
        startup="initial", kind="postgres", extra_source=source,
    )  # fmt: skip
    watch = Watch(server)
    watch.start()
    proc = start(cfg)
    try:
        replica = tmp_path / "lake" / "public" / "items"
        wait_for(lambda: rows(replica) == ROWS, proc, "the snapshot")
        server.execute(
            f"INSERT INTO items VALUES ({ROWS + 1}, 'streamed')",
            "UPDATE items SET name = 'changed' WHERE id = 1",
            database="shop",
        )
        wait_for(lambda: rows(replica) == ROWS + 1, proc, "the streamed insert")
        [(ssl,)] = server.query(
            "SELECT s.ssl FROM pg_replication_slots r JOIN pg_stat_ssl s ON s.pid = r.active_pid "
            "WHERE r.slot_name = 'sparkcdc_checkpoint'"
        )
        assert ssl is True  # the stream's WAL sender
    finally:
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=120)
        watch.done.set()
        watch.join()
    assert proc.returncode == 0, out.decode(errors="replace")[-3000:]
    assert watch.kinds() == {"copy", "walsender", "catalog"}, watch.seen
    assert all(encrypted for _, _, encrypted in watch.seen), watch.seen


def rows(table: Path) -> int:
    try:
        return int(DeltaTable(str(table)).to_pyarrow_table(columns=["id"]).num_rows)
    except Exception:  # not written yet
        return -1


def wait_for(
    done: Callable[[], bool], proc: subprocess.Popen[bytes], what: str, timeout: float = 180
) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        assert proc.poll() is None, f"sparkcdc run ended before {what}"
        assert time.monotonic() < deadline, f"{what} did not reach the replica in {timeout:g}s"
        time.sleep(0.5)
