"""Every DDL leaves the replica exact on MySQL 8 too: ``sparkcdc run`` against the protocol-level
test primary (``tests/fakes/mysql_primary.py``), whose binlog the test writes while the pipeline
streams. There is no MySQL server to verify against, so the test computes the replica's rows:
an ALTER's constant defaults, implicit defaults, renames, a widening type change and NULLs made
NOT NULL reach the rows written before it (and rows changed in its batch before it), and one that
rounds makes the pipeline queue the table to be read again, with the reason."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

from deltalake import DeltaTable

from sparkcdc.sinks.delta.notifications import read_notifications
from tests.cases.mysql8 import BinlogWriter, Column, Table
from tests.e2e.cli import crash, start, write_config
from tests.fakes.mysql_primary import MySQLPrimary

U = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
ITEMS = Table(
    "shop", "items",
    [Column("id", "int"), Column("a", "int"), Column("m", "decimal(10,3)"), Column("n", "int")],
    ["id"], table_id=41,
)  # fmt: skip
# ALTER TABLE items ADD COLUMN pts INT NOT NULL DEFAULT 7, ADD COLUMN tag VARCHAR(10) DEFAULT
#   'x', ADD COLUMN z ENUM('p','q') NOT NULL, RENAME COLUMN a TO b, MODIFY n BIGINT NOT NULL
ALTERED = Table(
    "shop", "items",
    [Column("id", "int"), Column("b", "int"), Column("m", "decimal(10,3)"),
     Column("n", "bigint", nullable=False), Column("pts", "int", nullable=False),
     Column("tag", "varchar(10)"), Column("z", "enum('p','q')", nullable=False)],
    ["id"], table_id=42,
)  # fmt: skip
ALTER = (
    "ALTER TABLE items ADD COLUMN pts INT NOT NULL DEFAULT 7, ADD COLUMN tag VARCHAR(10) "
    "DEFAULT 'x', ADD COLUMN z ENUM('p','q') NOT NULL, RENAME COLUMN a TO b, "
    "MODIFY n BIGINT NOT NULL"
)
COLUMNS = ("id", "b", "m", "n", "pts", "tag", "z")


def replica(lake: Path) -> list[tuple[Any, ...]]:
    path = lake / "shop" / "items"
    if not (path / "_delta_log").is_dir():
        return []
    rows = DeltaTable(str(path)).to_pyarrow_table().to_pylist()
    return sorted(tuple(r.get(c) for c in COLUMNS) for r in rows)


def wait_for(
    done: Callable[[], bool], what: str, timeout: float = 90, lake: Path | None = None
) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        shown = "" if lake is None else f"; the replica holds {replica(lake)}"
        assert time.monotonic() < deadline, f"{what}: not within {timeout:.0f} s{shown}"
        time.sleep(0.25)


def test_an_alter_on_mysql_8_reaches_the_rows_written_before_it(tmp_path: Path) -> None:
    writer = BinlogWriter()
    rows = [(i, 10 * i, Decimal(f"{i}.456"), None if i % 2 else i) for i in range(1, 7)]
    writer.transaction([("c", ITEMS, None, r) for r in rows], gtid=(U, 1))
    lake = tmp_path / "lake"
    with MySQLPrimary("cdc", "cdc-pw", binlog=writer, tables=[ITEMS]) as primary:
        cfg = write_config(tmp_path, primary, r"shop\.items", user="cdc", password="cdc-pw")
        proc = start(cfg)
        try:
            wait_for(lambda: len(replica(lake)) == 6, "the rows before the ALTER")
            # id 1 changed in the ALTER's batch before it, id 2 after it, id 7 new after it
            changed = (1, 11, Decimal("1.456"), None)
            writer.transaction([("u", ITEMS, rows[0], changed)], gtid=(U, 2))
            writer.ddl((U, 3), "shop", ALTER)
            writer.transaction([
                ("u", ALTERED, (2, 20, Decimal("2.456"), 2, 7, "x", "p"),
                 (2, 20, Decimal("2.456"), 2, 8, "y", "q")),
                ("c", ALTERED, None, (7, 70, Decimal("7.000"), 7, 9, None, "q")),
            ], gtid=(U, 4))  # fmt: skip
            expected = [
                (1, 11, Decimal("1.456"), 0, 7, "x", "p"),  # its NULL became 0 (not strict)
                (2, 20, Decimal("2.456"), 2, 8, "y", "q"),
                *[(i, 10 * i, Decimal(f"{i}.456"), 0 if i % 2 else i, 7, "x", "p")
                  for i in range(3, 7)],
                (7, 70, Decimal("7.000"), 7, 9, None, "q"),
            ]  # fmt: skip
            wait_for(lambda: replica(lake) == expected, "the ALTER's effect", lake=lake)
            writer.ddl((U, 5), "shop", "ALTER TABLE items MODIFY m DECIMAL(10,1)")

            def queued() -> list[dict[str, Any]]:
                notes = [json.loads(n["details"]) for n in read_notifications(str(lake))]
                return [n for n in notes if n.get("signal") == "schema-change"]

            wait_for(lambda: bool(queued()), "the table queued to be read again")
            reason = queued()[0]["reason"]
            assert "column m: decimal(10,3) to decimal(10,1) may round" in reason, reason
            assert proc.poll() is None
        finally:
            crash(proc)
