"""Prometheus metrics of ``sparkcdc run`` against a real MariaDB, scraped over HTTP as Prometheus
does while the run goes on.

``startup: initial`` with ``pipeline.metrics.port`` set: during the initial snapshot the rows
per table climb and the chunks remaining fall to 0, and the change log's ``r`` rows per table
equal the tables' rows once it completes. Then inserts, updates and deletes on two tables: the
change-log rows per table and op grow by exactly what was written, batches are counted, the
lag is there (0 once caught up), the log reader reports itself connected at a position. A port
already taken stops the run at its start with one sentence naming ``pipeline.metrics.port``.
"""

from __future__ import annotations

import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

import pytest

from sparkcdc.sources.mysql.throwaway import ThrowawayMariaDB, free_port
from tests.cases.exposition import Families, parse, values
from tests.e2e.cli import run, start, write_config
from tests.e2e.snapshot_workload import load_items

pytestmark = [pytest.mark.mariadb, pytest.mark.spark]

ITEMS, NOTES = 40000, 300


def with_metrics(cfg: Path, port: int) -> Path:
    """The pipeline file with ``pipeline.metrics.port`` set."""
    text = cfg.read_text()
    cfg.write_text(text.replace("pipeline: {", f"pipeline: {{metrics: {{port: {port}}}, ", 1))
    return cfg


def scrape(url: str) -> Families | None:
    """One scrape of ``/metrics`` (None while nothing listens yet)."""
    try:
        with urllib.request.urlopen(url, timeout=5) as answer:
            assert answer.headers["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"
            return parse(answer.read().decode())
    except (urllib.error.URLError, ConnectionError):
        return None


def scrape_until(
    proc: subprocess.Popen[bytes],
    url: str,
    done: Callable[[Families], bool],
    what: str,
    timeout: float = 120,
) -> list[Families]:
    """Every page scraped (4 a second) until one satisfies ``done``; the last one does."""
    pages: list[Families] = []
    deadline = time.monotonic() + timeout
    while True:
        assert proc.poll() is None, proc.stdout.read().decode() if proc.stdout else ""
        assert time.monotonic() < deadline, f"{what} not seen in {timeout:.0f} s: {pages[-1:]}"
        page = scrape(url)
        if page is not None:
            pages.append(page)
            if done(page):
                return pages
        time.sleep(0.25)


def one(page: Families, name: str) -> float | None:
    """The value of a family of one unlabelled sample, None when it has no sample."""
    return values(page, name).get(())


def snapshot_completed(page: Families) -> bool:
    return one(page, "sparkcdc_snapshot_completed") == 1


def check_snapshot(pages: list[Families], db: str) -> None:
    """The snapshot's rows climbed and its chunks remaining fell while it ran, and every row
    reached the change log."""
    items = f"{db}.items"
    seen = [p for p in pages if (items,) in values(p, "sparkcdc_snapshot_rows_total")]
    rows = [values(p, "sparkcdc_snapshot_rows_total")[(items,)] for p in seen]
    left = [values(p, "sparkcdc_snapshot_chunks_remaining")[(items,)] for p in seen]
    assert rows == sorted(rows) and len(set(rows)) >= 3, f"rows did not move: {rows}"
    assert left[0] > left[-1] == 0 and len(set(left)) >= 3, f"chunks did not fall: {left}"
    assert any(one(p, "sparkcdc_snapshot_running") == 1 for p in seen)
    last = pages[-1]
    assert values(last, "sparkcdc_snapshot_rows_total") == {(items,): ITEMS,
                                                            (f"{db}.notes",): NOTES}  # fmt: skip
    assert set(values(last, "sparkcdc_snapshot_table_completed").values()) == {1}
    written = values(last, "sparkcdc_events_total", "table", "op")
    assert written == {(items, "r"): ITEMS, (f"{db}.notes", "r"): NOTES}
    assert one(last, "sparkcdc_snapshot_running") == 0


def write_changes(server: ThrowawayMariaDB, db: str) -> dict[tuple[str, str], float]:
    """Inserts, updates and deletes on both tables; the change-log rows they make per op."""
    server.execute(
        f"INSERT INTO {db}.items SELECT seq * 2 + 1, 0, 'new', 1 FROM {db}.seq_0_to_49",
        f"UPDATE {db}.items SET version = 1 WHERE id BETWEEN 1000 AND 1058",  # 30 rows
        f"DELETE FROM {db}.items WHERE id BETWEEN 2002 AND 2040",  # 20 rows
        f"INSERT INTO {db}.notes VALUES (100001, 'a'), (100002, 'b')",
        f"UPDATE {db}.notes SET body = 'z' WHERE id <= 3",
        f"DELETE FROM {db}.notes WHERE id = 100001",
    )
    items, notes = f"{db}.items", f"{db}.notes"
    return {(items, "c"): 50, (items, "u"): 30, (items, "d"): 20,
            (notes, "c"): 2, (notes, "u"): 3, (notes, "d"): 1}  # fmt: skip


def test_metrics_while_the_snapshot_runs_and_while_the_log_streams(
    mariadb: ThrowawayMariaDB, tmp_path: Path
) -> None:
    db = "metrics_run"
    mariadb.execute(
        f"DROP DATABASE IF EXISTS {db}",
        f"CREATE DATABASE {db}",
        f"CREATE TABLE {db}.notes (id INT PRIMARY KEY, body VARCHAR(20))",
        f"INSERT INTO {db}.notes SELECT seq, 'n' FROM {db}.seq_1_to_{NOTES}",
    )
    load_items(mariadb, db, ITEMS)
    port = free_port()
    url = f"http://127.0.0.1:{port}/metrics"
    source = (
        ", server_id: '7301-7310', snapshot: {chunk_size: 1000, parallelism: 2, batch_rows: 2000}"
    )
    cfg = write_config(tmp_path, mariadb, rf"{db}\..*", startup="initial", extra_source=source)
    proc = start(with_metrics(cfg, port))
    try:
        pages = scrape_until(proc, url, snapshot_completed, "the snapshot's completion")
        check_snapshot(pages, db)
        before = pages[-1]
        batches = one(before, "sparkcdc_batches_total") or 0
        expected = {**values(before, "sparkcdc_events_total", "table", "op")}
        changes = write_changes(mariadb, db)
        for key, n in changes.items():
            expected[key] = expected.get(key, 0) + n

        def streamed(page: Families) -> bool:
            return values(page, "sparkcdc_events_total", "table", "op") == expected

        pages = scrape_until(proc, url, streamed, "the written changes")
        page = pages[-1]
        assert (one(page, "sparkcdc_batches_total") or 0) > batches
        lag = one(page, "sparkcdc_source_lag_seconds")
        assert lag is not None and 0 <= lag < 60
        committed = one(page, "sparkcdc_last_commit_timestamp_seconds")
        assert committed is not None and abs(time.time() - committed) < 60
        # the status file, written once a second, has seen every change once it says caught up
        page = scrape_until(
            proc, url, lambda p: one(p, "sparkcdc_source_caught_up") == 1, "caught up"
        )[-1]
        assert one(page, "sparkcdc_source_lag_seconds") == 0
        assert one(page, "sparkcdc_source_connected") == 1
        [(position,)] = values(page, "sparkcdc_source_info")
        assert position.startswith("mysql-bin.")
        assert (one(page, "sparkcdc_source_rows_read_total") or 0) >= sum(changes.values())
        assert (one(page, "sparkcdc_source_events_read_total") or 0) > 0
        assert (one(page, "sparkcdc_store_peak_bytes") or 0) >= (
            one(page, "sparkcdc_store_bytes") or 0
        )
        since = one(page, "sparkcdc_source_seconds_since_last_event")
        assert since is not None and since >= 1  # nothing was written since
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0, out.decode(errors="replace")
    assert scrape(url) is None  # the endpoint ends with the run


def test_a_metrics_port_in_use_stops_the_run_at_its_start(
    mariadb: ThrowawayMariaDB, tmp_path: Path
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        cfg = with_metrics(write_config(tmp_path, mariadb, r"nothing\.here"), port)
        started = time.monotonic()
        code, out = run(cfg, timeout=120)
    assert code != 0
    assert f"pipeline.metrics.port: {port} is already in use on 127.0.0.1;" in out, out
    assert time.monotonic() - started < 30  # before Spark starts
    assert not (tmp_path / "checkpoint" / "spark").exists()
