"""Commit → visible latency: a steady insert load while ``sparkcdc run`` streams it.

The load commits small transactions at a fixed rate and records each row's commit time (after
COMMIT returned). Afterwards the replica's Delta log tells, per table version, when it was
committed and which data files it added; a row is visible from the first version whose added
files contain its key. Latency = that version's commit time − the row's commit time.
"""

from __future__ import annotations

import contextlib
import threading
import time
from pathlib import Path

import pyarrow.parquet as pq

from sparkcdc.sources.mysql.throwaway import ThrowawayMariaDB

LATENCY_DDL = (
    "CREATE TABLE IF NOT EXISTS bench.ticks (id BIGINT PRIMARY KEY, payload VARCHAR(64), "
    "amount DECIMAL(12,2))"
)


class SteadyLoad(threading.Thread):
    """Inserts ``rate`` rows/s in transactions of ``per_txn`` rows for ``seconds``."""

    def __init__(
        self,
        server: ThrowawayMariaDB,
        rate: int,
        seconds: float,
        per_txn: int = 20,
        first_id: int = 0,
    ) -> None:
        super().__init__(daemon=True)
        self.server, self.rate, self.seconds, self.per_txn = server, rate, seconds, per_txn
        self.next_id = first_id
        self.committed: dict[int, float] = {}

    def run(self) -> None:
        interval = self.per_txn / self.rate
        with contextlib.closing(self.server.connect()) as conn, conn.cursor() as cur:
            cur.execute("SET autocommit=0")
            started = time.time()
            tick = started
            while time.time() - started < self.seconds:
                ids = range(self.next_id, self.next_id + self.per_txn)
                cur.executemany(
                    "INSERT INTO bench.ticks VALUES (%s, %s, %s)",
                    [(i, f"tick-{i}", i * 0.25) for i in ids],
                )
                conn.commit()
                now = time.time()
                for i in ids:
                    self.committed[i] = now
                self.next_id += self.per_txn
                tick += interval
                delay = tick - time.time()
                if delay > 0:
                    time.sleep(delay)


def visibility_times(table_path: Path, key: str = "id") -> dict[int, float]:
    """First time (epoch s) each key became visible in a Delta table, from its commit log."""
    import json

    log = table_path / "_delta_log"
    seen: dict[int, float] = {}
    for entry in sorted(log.glob("*.json")):
        commit_ms = None
        added: list[str] = []
        for line in entry.read_text().splitlines():
            action = json.loads(line)
            if "commitInfo" in action:
                commit_ms = action["commitInfo"].get("timestamp")
            if "add" in action:
                added.append(action["add"]["path"])
        if commit_ms is None:
            commit_ms = entry.stat().st_mtime * 1000
        for rel in added:
            from urllib.parse import unquote

            ids = pq.read_table(table_path / unquote(rel), columns=[key]).column(key).to_pylist()
            for i in ids:
                seen.setdefault(int(i), commit_ms / 1000.0)
    return seen


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]
