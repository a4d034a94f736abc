"""The demo's shop schema and a randomized workload of shop traffic.

Three tables cover the type mapping a user meets first: integers signed and unsigned, exact
decimals, doubles, utf8mb4 and latin1 text, JSON, ENUM and SET, BLOB, BIT, DATE, DATETIME(6) and
TIMESTAMP(3). The workload mixes single-row transactions with multi-row orders, updates and
deletes, so the replica must follow every kind of change.
"""

from __future__ import annotations

import contextlib
import json
import random
import threading
import time

from sparkcdc.sources.mysql.throwaway import ThrowawayMariaDB

TABLES = ("customers", "products", "orders")

SCHEMA = (
    "CREATE DATABASE shop",
    "CREATE TABLE shop.customers (id INT AUTO_INCREMENT PRIMARY KEY, "
    "name VARCHAR(80) CHARACTER SET utf8mb4 NOT NULL, email VARCHAR(120), "
    "tier ENUM('bronze','silver','gold') NOT NULL DEFAULT 'bronze', profile JSON, "
    "signed_up TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3))",
    "CREATE TABLE shop.products (sku VARCHAR(20) PRIMARY KEY, title VARCHAR(200) NOT NULL, "
    "price DECIMAL(10,2) NOT NULL, weight_kg DOUBLE, stock INT UNSIGNED NOT NULL, "
    "tags SET('new','sale','eco','fragile'), photo BLOB)",
    "CREATE TABLE shop.orders (id BIGINT UNSIGNED PRIMARY KEY, customer_id INT NOT NULL, "
    "sku VARCHAR(20) NOT NULL, quantity SMALLINT NOT NULL, total DECIMAL(12,2) NOT NULL, "
    "status ENUM('new','paid','shipped','cancelled') NOT NULL, flags BIT(8), "
    "placed DATETIME(6) NOT NULL, ship_date DATE, note TEXT CHARACTER SET latin1)",
)

_NAMES = ("Zoë", "Jürgen", "Åsa", "Łukasz", "Renée", "Ngọc", "Sørina", "李雷", "Olúwadé", "Ana 🚀")
_TAGS = ("new", "sale", "eco", "fragile")


HISTORY_ORDERS = 200_000  # orders placed before the pipeline starts: its snapshot copies them


def create(server: ThrowawayMariaDB, customers: int = 200, products: int = 50) -> None:
    """Create the shop, its first customers and products, and an order history."""
    server.execute(*SCHEMA)
    server.execute(
        "INSERT INTO shop.orders SELECT seq, 1 + seq % 200, "
        "CONCAT('SKU-', LPAD(seq % 50, 5, '0')), 1 + seq % 9, (seq % 200000) / 100, "
        "ELT(1 + seq % 4, 'new', 'paid', 'shipped', 'cancelled'), seq % 256, "
        "TIMESTAMP('2024-01-01') + INTERVAL seq SECOND, "
        "DATE('2024-01-01') + INTERVAL seq % 300 DAY, CONCAT('order ', seq, ' café') "
        f"FROM shop.seq_1_to_{HISTORY_ORDERS}"
    )
    rng = random.Random(7)
    with contextlib.closing(server.connect("shop")) as conn, conn.cursor() as cur:
        for i in range(customers):
            cur.execute(
                "INSERT INTO customers (name, email, tier, profile) VALUES (%s, %s, %s, %s)",
                _customer(rng, i),
            )
        for i in range(products):
            cur.execute("INSERT INTO products VALUES (%s,%s,%s,%s,%s,%s,%s)", _product(rng, i))


def _customer(rng: random.Random, i: int) -> tuple[object, ...]:
    name = f"{rng.choice(_NAMES)} {i}"
    profile = json.dumps({"newsletter": rng.random() < 0.5, "visits": rng.randint(0, 99)})
    return (name, f"c{i}@example.com", rng.choice(("bronze", "silver", "gold")), profile)


def _product(rng: random.Random, i: int) -> tuple[object, ...]:
    tags = ",".join(t for t in _TAGS if rng.random() < 0.3)
    photo = bytes(rng.randrange(256) for _ in range(rng.randint(0, 24))) + b"\0\0"
    return (
        f"SKU-{i:05d}",
        f"Product {i} — “{rng.choice(_NAMES)}” edition",
        round(rng.uniform(1, 500), 2),
        rng.uniform(0.01, 30),
        rng.randint(0, 10_000),
        tags,
        photo,
    )


class ShopTraffic(threading.Thread):
    """Writes shop traffic for ``seconds``: new orders (1–5 rows per transaction), payments and
    shipments (updates), cancellations (deletes), new customers and price changes."""

    def __init__(self, server: ThrowawayMariaDB, seconds: float, seed: int = 1) -> None:
        super().__init__(daemon=True)
        self.server, self.seconds, self.rng = server, seconds, random.Random(seed)
        self.transactions = 0
        self.changes = 0
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self._run()
        except BaseException as exc:  # reported by the demo
            self.error = exc

    def _run(self) -> None:
        rng, next_order = self.rng, HISTORY_ORDERS + 1
        open_orders: list[int] = []
        deadline = time.monotonic() + self.seconds
        with contextlib.closing(self.server.connect("shop")) as conn, conn.cursor() as cur:
            cur.execute("SET autocommit=0")
            while time.monotonic() < deadline:
                roll = rng.random()
                if roll < 0.45 or not open_orders:
                    for _ in range(rng.randint(1, 5)):
                        cur.execute(
                            "INSERT INTO orders VALUES (%s, %s, %s, %s, %s, 'new', %s, NOW(6), "
                            "NULL, %s)",
                            (
                                next_order,
                                rng.randint(1, 200),
                                f"SKU-{rng.randrange(50):05d}",
                                rng.randint(1, 9),
                                round(rng.uniform(1, 2000), 2),
                                rng.randrange(256).to_bytes(1, "big"),
                                rng.choice(("gift wrap, café au lait", None, "fragile — handle")),
                            ),
                        )
                        open_orders.append(next_order)
                        next_order += 1
                        self.changes += 1
                elif roll < 0.8:
                    order = rng.choice(open_orders)
                    cur.execute(
                        "UPDATE orders SET status=IF(status='new','paid','shipped'), "
                        "ship_date=IF(status='shipped', CURDATE(), ship_date), "
                        "flags=flags | 1 WHERE id=%s",
                        (order,),
                    )
                    self.changes += cur.rowcount
                elif roll < 0.9:
                    order = open_orders.pop(rng.randrange(len(open_orders)))
                    cur.execute("DELETE FROM orders WHERE id=%s", (order,))
                    self.changes += cur.rowcount
                elif roll < 0.95:
                    cur.execute(
                        "INSERT INTO customers (name, email, tier, profile) VALUES (%s,%s,%s,%s)",
                        _customer(rng, rng.randint(1000, 9999)),
                    )
                    self.changes += 1
                else:
                    cur.execute(
                        "UPDATE products SET price = price * 1.05, stock = stock + 1 "
                        "WHERE sku LIKE %s",
                        (f"SKU-000{rng.randrange(5)}%",),
                    )
                    self.changes += cur.rowcount
                conn.commit()
                self.transactions += 1
                time.sleep(0.002)
