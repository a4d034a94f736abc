"""Benchmark workloads written on a throwaway MariaDB server.

``write_changes`` produces the issue's mix: single-row insert transactions (one commit each,
written by a server-side loop so the client is not the bottleneck) plus batched updates (one
statement touching every row, so one transaction with many rows events).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from sparkcdc.sources.mysql.throwaway import ThrowawayMariaDB

TABLE_DDL = (
    "CREATE TABLE bench.events (id BIGINT PRIMARY KEY, account INT NOT NULL, "
    "amount DECIMAL(12,2), note VARCHAR(64), created DATETIME(6), flag TINYINT)"
)


@dataclass(frozen=True)
class Workload:
    inserts: int
    updated_rows: int
    seconds: float

    @property
    def changes(self) -> int:
        return self.inserts + self.updated_rows


def create_schema(server: ThrowawayMariaDB) -> None:
    server.execute(
        "CREATE DATABASE IF NOT EXISTS bench",
        TABLE_DDL,
        "CREATE PROCEDURE bench.singles(first BIGINT, n INT) BEGIN DECLARE i INT DEFAULT 0; "
        "WHILE i < n DO INSERT INTO bench.events VALUES (first + i, (first + i) % 1000, "
        "(first + i) * 0.01, CONCAT('note-', first + i), NOW(6), i % 2); SET i = i + 1; "
        "END WHILE; END",
    )


def write_changes(server: ThrowawayMariaDB, inserts: int, update_rounds: int) -> Workload:
    """``inserts`` single-row transactions, then ``update_rounds`` updates of every row."""
    started = time.perf_counter()
    server.execute(f"CALL bench.singles(0, {inserts})")
    for _ in range(update_rounds):
        server.execute("UPDATE bench.events SET amount = amount + 1, flag = 1 - flag")
    return Workload(inserts, inserts * update_rounds, time.perf_counter() - started)


def write_big_transaction(server: ThrowawayMariaDB, rows: int) -> None:
    """One transaction inserting ``rows`` rows (MariaDB's sequence engine makes the keys)."""
    server.execute(
        "CREATE TABLE IF NOT EXISTS bench.big (id BIGINT PRIMARY KEY, note VARCHAR(64), "
        "amount DECIMAL(12,2))",
        f"INSERT INTO bench.big SELECT seq, CONCAT('row-', seq), seq * 0.5 FROM seq_1_to_{rows}",
        database="bench",
    )
