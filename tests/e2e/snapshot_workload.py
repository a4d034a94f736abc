"""Writers that run while a snapshot reads: churn over every part of a table's key space, and
transfers that keep a table's total constant at every commit (a consistency witness), on
MariaDB or PostgreSQL (each table in the database's default namespace: ``db`` or ``public``)."""

from __future__ import annotations

import contextlib
import random
import threading
import time
from typing import Any

from sparkcdc.sources.mysql.throwaway import ThrowawayMariaDB
from sparkcdc.sources.postgres.throwaway import ThrowawayPostgres

ITEMS = (
    "CREATE TABLE {db}.items (id BIGINT PRIMARY KEY, version INT NOT NULL, "
    "name VARCHAR(40), amount DECIMAL(12,2))"
)


PG_ITEMS = (
    "CREATE TABLE items (id bigint PRIMARY KEY, version int NOT NULL, name varchar(40), "
    "amount numeric(12,2))"
)
Server = ThrowawayMariaDB | ThrowawayPostgres


def load_items(server: Server, db: str, rows: int) -> None:
    """``rows`` items with the even ids 2..2*rows (odd ids are free for inserts inside)."""
    if isinstance(server, ThrowawayPostgres):
        server.execute(
            PG_ITEMS,
            "INSERT INTO items SELECT i * 2, 0, 'item-' || i, i / 8.0 "
            f"FROM generate_series(1, {rows}) i",
            database=db,
        )
        return
    server.execute(
        ITEMS.format(db=db),
        f"INSERT INTO {db}.items SELECT seq * 2, 0, CONCAT('item-', seq), seq / 8 "
        f"FROM {db}.seq_1_to_{rows}",
    )


class Writer(threading.Thread):
    """Commits :meth:`transaction` over and over (autocommit off) until :meth:`halt`."""

    def __init__(self, server: Server, db: str, seed: int, pause: float):
        super().__init__(daemon=True)
        self.server, self.db, self.pause = server, db, pause
        self.pg = isinstance(server, ThrowawayPostgres)
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
                if self.pg:
                    conn.autocommit = False
                else:
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


COLUMNS = "(id, version, name, amount)"  # named: a column added meanwhile takes its default


class Churn(Writer):
    """Random small transactions on ``items``: updates, deletes, inserts inside the key range,
    below the first key and beyond the last, and primary-key updates."""

    def __init__(
        self, server: Server, db: str, top: int, seed: int, pause: float = 0.002,
        table: str = "items",
    ):  # fmt: skip
        super().__init__(server, db, seed, pause)
        self.top, self.table = top, table
        self._low = 0

    def transaction(self, cur: Any) -> None:
        for _ in range(self.rng.choice((1, 1, 2, 5))):
            self._one(cur)

    def _one(self, cur: Any) -> None:
        rng, top, t = self.rng, self.top, self.table
        roll = rng.random()
        key = rng.randrange(1, top)
        run = cur.execute
        if roll < 0.3:
            run(f"UPDATE {t} SET version = version + 1, amount = amount + 1 WHERE id = %s", (key,))
        elif roll < 0.45:
            run(f"DELETE FROM {t} WHERE id = %s", (key,))
        elif roll < 0.6:
            self._insert(cur, key | 1, "inside", 1.5)
        elif roll < 0.7:
            self._low -= 1
            self._insert(cur, self._low, "below", 2.5)
        elif roll < 0.85:
            self.top += 1
            self._insert(cur, self.top, "beyond", 3.5)
        elif self.pg:  # the one writer: no other transaction takes the target meanwhile
            run(
                f"UPDATE {t} SET id = %s, version = version + 1 WHERE id = %s "
                f"AND NOT EXISTS (SELECT 1 FROM {t} WHERE id = %s)",
                (target := rng.randrange(1, 4 * top), key, target),
            )
        else:
            run(
                f"UPDATE IGNORE {t} SET id = %s, version = version + 1 WHERE id = %s",
                (rng.randrange(1, 4 * top), key),
            )

    def _insert(self, cur: Any, key: int, name: str, amount: float) -> None:
        t = self.table
        if self.pg:
            sql = f"INSERT INTO {t} {COLUMNS} VALUES (%s, 0, %s, %s) ON CONFLICT DO NOTHING"
        else:
            sql = f"INSERT IGNORE INTO {t} {COLUMNS} VALUES (%s, 0, %s, %s)"
        cur.execute(sql, (key, name, amount))


class Transfers(Writer):
    """Moves money between accounts in two-statement transactions; the total never changes."""

    TOTAL_PER_ACCOUNT = 1000

    def __init__(self, server: Server, db: str, accounts: int, seed: int):
        super().__init__(server, db, seed, pause=0.001)
        self.accounts = accounts

    @classmethod
    def create(cls, server: Server, db: str, accounts: int) -> None:
        if isinstance(server, ThrowawayPostgres):
            server.execute(
                "CREATE TABLE accounts (id int PRIMARY KEY, balance bigint NOT NULL)",
                f"INSERT INTO accounts SELECT i, {cls.TOTAL_PER_ACCOUNT} "
                f"FROM generate_series(1, {accounts}) i",
                database=db,
            )
            return
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
