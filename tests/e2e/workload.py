"""A randomized change workload whose every change can be identified in the change log.

Keys are never reused and every update bumps a ``version`` column, so each source change is the
unique triple ``(op, id, version)``: inserts are ``('c', id, 0)``, the n-th update of a row is
``('u', id, n)``, its delete ``('d', id, last version)``. The change log must hold exactly this
multiset, no gap and no duplicate.
"""

from __future__ import annotations

import contextlib
import random
import threading
from collections import Counter
from dataclasses import dataclass
from typing import Any, Protocol

DDL = (
    "CREATE TABLE {db}.accounts (id BIGINT PRIMARY KEY, version INT NOT NULL, "
    "balance DECIMAL(14,2), owner VARCHAR(40) CHARACTER SET utf8mb4, "
    "updated DATETIME(6), flags BIT(8))",
)
PG_DDL = (
    "CREATE TABLE accounts (id bigint PRIMARY KEY, version int NOT NULL, "
    "balance numeric(14,2), owner varchar(40), updated timestamp(6), flags smallint)",
)


@dataclass(frozen=True)
class Dialect:
    """The workload's statements in one database's SQL."""

    now: str  # the current time to microseconds
    autocommit_off: str | None  # a statement that ends autocommit, if the driver does not


MARIADB = Dialect("NOW(6)", "SET autocommit=0")
POSTGRES = Dialect("clock_timestamp()", None)


class Server(Protocol):
    def connect(self, db: str) -> Any: ...


class ChangeWorkload(threading.Thread):
    """Writes at least ``changes`` identified changes in random transactions of 1–50 changes."""

    def __init__(
        self, server: Server, db: str, changes: int, seed: int, dialect: Dialect = MARIADB
    ) -> None:
        super().__init__(daemon=True)
        self.server, self.db, self.target, self.rng = server, db, changes, random.Random(seed)
        self.dialect = dialect
        self.expected: Counter[tuple[str, int, int]] = Counter()
        self.live: dict[int, int] = {}
        self.next_id = 1
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self._run()
        except BaseException as exc:  # surfaced by the test
            self.error = exc

    def _run(self) -> None:
        rng = self.rng
        with contextlib.closing(self.server.connect(self.db)) as conn, conn.cursor() as cur:
            if self.dialect.autocommit_off is None:
                conn.autocommit = False
            else:
                cur.execute(self.dialect.autocommit_off)
            done = 0
            while done < self.target:
                size = rng.choice((1, 1, 1, 2, 5, 20, 50))
                pending: list[tuple[str, int, int]] = []
                for _ in range(size):
                    roll = rng.random()
                    if roll < 0.5 or len(self.live) < 100:
                        pending.append(self._insert(cur))
                    elif roll < 0.85:
                        pending.append(self._update(cur))
                    else:
                        pending.append(self._remove(cur))
                if rng.random() < 0.03:
                    conn.rollback()
                    self._undo(pending)
                    continue
                conn.commit()
                self.expected.update(pending)
                done += len(pending)

    def _insert(self, cur: object) -> tuple[str, int, int]:
        key = self.next_id
        self.next_id += 1
        cur.execute(  # type: ignore[attr-defined]
            "INSERT INTO accounts (id, version, balance, owner, updated, flags) "
            f"VALUES (%s, 0, %s, %s, {self.dialect.now}, %s)",
            (key, round(self.rng.uniform(-1e6, 1e6), 2), f"owner-{key}-ü", key % 256),
        )
        self.live[key] = 0
        return ("c", key, 0)

    def _update(self, cur: object) -> tuple[str, int, int]:
        key = self.rng.choice(list(self.live)) if len(self.live) < 2000 else self._recent()
        version = self.live[key] + 1
        cur.execute(  # type: ignore[attr-defined]
            f"UPDATE accounts SET version=%s, balance=balance+1.25, updated={self.dialect.now} "
            "WHERE id=%s",
            (version, key),
        )
        self.live[key] = version
        return ("u", key, version)

    def _remove(self, cur: object) -> tuple[str, int, int]:
        key = self.rng.choice(list(self.live)) if len(self.live) < 2000 else self._recent()
        cur.execute("DELETE FROM accounts WHERE id=%s", (key,))  # type: ignore[attr-defined]
        return ("d", key, self.live.pop(key))

    def _recent(self) -> int:
        while True:
            key = self.rng.randrange(max(1, self.next_id - 5000), self.next_id)
            if key in self.live:
                return key

    def _undo(self, pending: list[tuple[str, int, int]]) -> None:
        for op, key, version in reversed(pending):
            if op == "c":
                self.live.pop(key, None)
            elif op == "u":
                self.live[key] = version - 1
            else:
                self.live[key] = version
