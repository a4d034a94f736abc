"""History tables (``sink.history``) through the real pipeline: MariaDB into Delta, PostgreSQL
into Iceberg.

Two tables snapshotted in chunks (rows read back from the split store), then inserts, updates of
a tracked and of an untracked column, a delete, a re-insert and key changes, written in
micro-batches of five rows (a 16 KB store). ``people`` tracks ``name`` only; ``items`` every
column. Each history table equals the rebuild of its change log by the independent check
(``tests/e2e/history_check.py``), holds the versions named here, and its open versions are the
replica.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable

from tests.cases.e2e_sources import E2ESource, PostgresSource
from tests.e2e.cli import available_now
from tests.e2e.history_check import assert_history_matches, read_tables
from tests.e2e.iceberg_lake import IcebergLake, as_iceberg

pytestmark = [pytest.mark.spark]

COLUMNS = {"people": ("id", "name", "balance"), "items": ("id", "v")}


def replica(lake: Path | IcebergLake, schema: str, table: str) -> list[tuple[Any, ...]]:
    if isinstance(lake, IcebergLake):
        rows = lake.rows(schema, table)
    else:
        rows = DeltaTable(str(lake / schema / table)).to_pyarrow_table().to_pylist()
    return sorted(tuple(r[c] for c in COLUMNS[table]) for r in rows)


def versions(lake: Path | IcebergLake, schema: str, table: str) -> list[dict[str, Any]]:
    return read_tables(lake, schema, table)[1]


def test_history_tables_equal_the_change_logs_rebuild(
    source_and_sink: tuple[E2ESource, str], tmp_path: Path
) -> None:
    source, sink = source_and_sink
    source.write_before_capture(
        "CREATE TABLE people (id INT PRIMARY KEY, name VARCHAR(20), balance INT)",
        "CREATE TABLE items (id INT PRIMARY KEY, v INT)",
        "INSERT INTO people VALUES (1, 'ann', 10), (2, 'bob', 20), (3, 'cy', 30)",
        f"INSERT INTO items SELECT seq, seq FROM {source.numbers(12)}",
    )
    s = source.schema
    cfg = source.config(tmp_path, "(people|items)", "initial",
                        extra_source=source.snapshot_settings(chunk=4, batch_rows=4))  # fmt: skip
    history = f", history: {{{s}.people: {{track: [name]}}, {s}.items: true}}"
    text = cfg.read_text().replace("lake'", f"lake'{history}", 1)
    cfg.write_text(
        text.replace("store: {max_bytes: 8MB}", "store: {max_bytes: 16KB, item_rows: 5}")
    )
    lake: Path | IcebergLake = tmp_path / "lake"
    if sink == "iceberg":
        as_iceberg(cfg)
        lake = IcebergLake(tmp_path / "lake")
    if isinstance(source, PostgresSource):
        source.start_capturing(["people", "items"])
    available_now(cfg)  # the snapshot
    source.execute(
        "UPDATE people SET balance = 11 WHERE id = 1",  # untracked: in place
        "UPDATE people SET name = 'amy' WHERE id = 1",
        "DELETE FROM people WHERE id = 2",
        "INSERT INTO people VALUES (2, 'bea', 21)",  # re-inserted
        "UPDATE people SET id = 4 WHERE id = 3",  # the key changed
        "UPDATE items SET v = v * 10 WHERE id <= 6",
        "BEGIN", "DELETE FROM items WHERE id = 12", "INSERT INTO items VALUES (12, 120)",
        "UPDATE items SET v = 0 WHERE id = 1", "COMMIT",
        "UPDATE items SET id = 20 WHERE id = 2",
        "UPDATE items SET v = 77 WHERE id = 7",
    )  # fmt: skip
    available_now(cfg)

    assert assert_history_matches(lake, s, "people", tracked=["name"]) == 6
    assert assert_history_matches(lake, s, "items") == 12 + 6 + 1 + 1 + 1 + 1
    people = {(r["id"], r["name"]): r for r in versions(lake, s, "people")}
    assert sorted(
        (i, n, r["balance"], r["__op"], r["__current"]) for (i, n), r in people.items()
    ) == [  # fmt: skip
        (1, "amy", 11, "u", True),
        (1, "ann", 11, "r", False),  # its balance changed in place, then its name
        (2, "bea", 21, "c", True),
        (2, "bob", 20, "r", False),
        (3, "cy", 30, "r", False),
        (4, "cy", 30, "u", True),
    ]
    assert people[(1, "ann")]["__end_position"] == people[(1, "amy")]["__start_position"]
    assert people[(3, "cy")]["__end_position"] == people[(4, "cy")]["__start_position"]
    assert people[(2, "bob")]["__end_position"] < people[(2, "bea")]["__start_position"]
    assert people[(1, "ann")]["__end_at"] is not None
    for table in COLUMNS:
        current = [r for r in versions(lake, s, table) if r["__current"]]
        assert sorted(tuple(r[c] for c in COLUMNS[table]) for r in current) == replica(
            lake, s, table
        )
    assert replica(lake, s, "items")[:2] == [(1, 0), (3, 30)]
