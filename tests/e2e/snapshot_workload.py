"""Writers that run while a snapshot reads: churn over every part of a table's key space, and
transfers that keep a table's total constant at every commit (a consistency witness)."""

from __future__ import annotations

import contextlib
import random
import threading
import time
from typing import Any

from sparkcdc.sources.mysql.throwaway import ThrowawayMariaDB

ITEMS = (
    "CREATE TABLE {db}.items (id BIGINT PRIMARY KEY, version INT NOT NULL, "
    "name VARCHAR(40), amount DECIMAL(12,2))"
)


def load_items(server: ThrowawayMariaDB, db: str, rows: int) -> None:
    """``rows`` items with the even ids 2..2*rows (odd ids are free for inserts inside)."""
    server.execute(
        ITEMS.format(db=db),
        f"INSERT INTO {db}.items SELECT seq * 2, 0, CONCAT('item-', seq), seq / 8 "
        f"FROM {db}.seq_1_to_{rows}",
    )


class Writer(threading.Thread):
    """Commits :meth:`transaction` over and over (autocommit off) until :meth:`halt`."""

    def __init__(self, server: ThrowawayMariaDB, db: str, seed: int, pause: float):
        super().__init__(daemon=True)
        self.server, self.db, self.pause = server, db, pause
        self.rng = random.Random(seed)
        self.stop_event = threading.Event()
        self.commits = 0
        self.error: BaseException | None = None

    def halt(self) -> None:
        self.stop_event.set()
        self.join()
        assert self.error is None, self.error

    def run(self) -> None:
        try:
            with contextlib.closing(self.server.connect(self.db)) as conn, conn.cursor() as cur:
                cur.execute("SET autocommit = 0")  # transactions as written
                while not self.stop_event.is_set():
                    self.transaction(cur)
                    conn.commit()
                    self.commits += 1
                    time.sleep(self.pause)
        except BaseException as exc:  # surfaced by halt()
            self.error = exc

    def transaction(self, cur: Any) -> None:
        raise NotImplementedError


class Churn(Writer):
    """Random small transactions on ``items``: updates, deletes, inserts inside the key range,
    below the first key and beyond the last, and primary-key updates."""

    def __init__(
        self, server: ThrowawayMariaDB, db: str, top: int, seed: int, pause: float = 0.002
    ):
        super().__init__(server, db, seed, pause)
        self.top = top
        self._low = 0

    def transaction(self, cur: Any) -> None:
        for _ in range(self.rng.choice((1, 1, 2, 5))):
            self._one(cur)

    def _one(self, cur: Any) -> None:
        rng, top = self.rng, self.top
        roll = rng.random()
        key = rng.randrange(1, top)
        run = cur.execute
        if roll < 0.3:
            run("UPDATE items SET version = version + 1, amount = amount + 1 WHERE id = %s", (key,))
        elif roll < 0.45:
            run("DELETE FROM items WHERE id = %s", (key,))
        elif roll < 0.6:
            run("INSERT IGNORE INTO items VALUES (%s, 0, 'inside', 1.5)", (key | 1,))
        elif roll < 0.7:
            self._low -= 1
            run("INSERT IGNORE INTO items VALUES (%s, 0, 'below', 2.5)", (self._low,))
        elif roll < 0.85:
            self.top += 1
            run("INSERT IGNORE INTO items VALUES (%s, 0, 'beyond', 3.5)", (self.top,))
        else:
            target = rng.randrange(1, 4 * top)
            run(
                "UPDATE IGNORE items SET id = %s, version = version + 1 WHERE id = %s",
                (target, key),
            )


class Transfers(Writer):
    """Moves money between accounts in two-statement transactions; the total never changes."""

    TOTAL_PER_ACCOUNT = 1000

    def __init__(self, server: ThrowawayMariaDB, db: str, accounts: int, seed: int):
        super().__init__(server, db, seed, pause=0.001)
        self.accounts = accounts

    @classmethod
    def create(cls, server: ThrowawayMariaDB, db: str, accounts: int) -> None:
        server.execute(
            f"CREATE TABLE {db}.accounts (id INT PRIMARY KEY, balance BIGINT NOT NULL)",
            f"INSERT INTO {db}.accounts SELECT seq, {cls.TOTAL_PER_ACCOUNT} "
            f"FROM {db}.seq_1_to_{accounts}",
        )

    def transaction(self, cur: Any) -> None:
        a, b = self.rng.sample(range(1, self.accounts + 1), 2)
        amount = self.rng.randrange(1, 50)
        cur.execute("UPDATE accounts SET balance = balance - %s WHERE id = %s", (amount, a))
        cur.execute("UPDATE accounts SET balance = balance + %s WHERE id = %s", (amount, b))
