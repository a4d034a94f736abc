"""The replica's change data feed through ``sparkcdc run`` on MariaDB and PostgreSQL: over
several micro-batches of inserts, updates and deletes, delta-rs's ``load_cdf`` of each replica
version reads the net change per key of that batch, as the change log's rows of the same batch
(the commits sharing its transaction identifier) give it."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable

from tests.cases.e2e_sources import E2ESource
from tests.e2e.incremental_runs import wait_for

pytestmark = [pytest.mark.spark, pytest.mark.slow]

Row = tuple[int, str | None]
Feed = set[tuple[int, str | None, str]]  # (id, v, _change_type)
PHASES = [  # each phase waited for before the next: a micro-batch (or more) of its own
    ["INSERT INTO items VALUES (1, 'a'), (2, 'b'), (3, 'c'), (4, 'd')"],
    ["UPDATE items SET v = 'B' WHERE id = 2", "DELETE FROM items WHERE id = 3",
     "INSERT INTO items VALUES (5, 'e')"],
    ["DELETE FROM items WHERE id = 1", "INSERT INTO items VALUES (1, 'A')",  # re-inserted
     "INSERT INTO items VALUES (6, 'f')", "DELETE FROM items WHERE id = 6",  # never held
     "UPDATE items SET v = 'DD' WHERE id = 4", "DELETE FROM items WHERE id = 5"],
]  # fmt: skip


def batches_of(table: Path) -> dict[int, tuple[int, list[str]]]:
    """Each commit of the Delta table carrying a batch: batch id -> (version, added files)."""
    found = {}
    for entry in sorted((table / "_delta_log").glob("*.json")):
        actions = [json.loads(line) for line in entry.read_text().splitlines() if line]
        txn = [a["txn"]["version"] for a in actions if "txn" in a]
        if txn:
            adds = [a["add"]["path"] for a in actions if "add" in a]
            found[txn[0]] = (int(entry.stem), adds)
    return found


def changelog_rows(changelog: Path, files: list[str]) -> list[dict[str, Any]]:
    parts = [pq.read_table(changelog / f, columns=["op", "before", "after"]) for f in files]
    return pa.concat_tables(parts).to_pylist() if parts else []


def net_change(held: dict[int, str | None], rows: list[dict[str, Any]]) -> Feed:
    """What a batch of change-log ``rows`` (op, before, after; in log order) does to the keys
    ``held`` before it, per key: both before and after: an update's pre- and post-image; before
    only: a delete; after only: an insert. ``held`` is moved on."""
    was = dict(held)
    touched = set()
    for row in rows:
        image = row["before"] if row["op"] == "d" else row["after"]
        touched.add(image["id"])
        if row["op"] == "d":
            held.pop(image["id"], None)
        else:
            held[image["id"]] = image["v"]
    feed: Feed = set()
    for key in touched:
        if key in was:
            kind = "update_preimage" if key in held else "delete"
            feed.add((key, was[key], kind))
        if key in held:
            feed.add((key, held[key], "update_postimage" if key in was else "insert"))
    return feed


def replica(path: Path) -> dict[int, str | None]:
    if not (path / "_delta_log").exists():
        return {}
    return {r["id"]: r["v"] for r in DeltaTable(str(path)).to_pyarrow_table().to_pylist()}


@pytest.mark.extended("postgres")
def test_load_cdf_of_each_replica_version_is_its_batch_s_net_change(
    source: E2ESource, tmp_path: Path, launch: Callable[[Path], subprocess.Popen[bytes]]
) -> None:
    source.execute("CREATE TABLE items (id INT PRIMARY KEY, v VARCHAR(20))")
    cfg = source.config(tmp_path, "items", source.start_capturing(["items"]))
    lake = source.lake(tmp_path)
    proc = launch(cfg)
    for phase in PHASES:
        source.execute(*phase)
        expected = {int(r[0]): r[1] for r in source.query("SELECT id, v FROM items")}
        wait_for(proc, lambda: replica(lake / "items") == expected, "the replica", 180)  # noqa: B023
    proc.terminate()
    proc.wait(timeout=120)

    table = DeltaTable(str(lake / "items"))
    assert table.metadata().configuration["delta.enableChangeDataFeed"] == "true"
    written = batches_of(lake / "items")
    logged = batches_of(lake / "items__changelog")
    assert len(written) >= len(PHASES) and set(written) <= set(logged)
    model: dict[int, str | None] = {}
    for batch_id in sorted(logged):
        expected_feed = net_change(model, changelog_rows(lake / "items__changelog",
                                                         logged[batch_id][1]))  # fmt: skip
        if batch_id not in written:
            assert expected_feed == set()  # nothing the replica held changed
            continue
        version = written[batch_id][0]
        read = pa.table(table.load_cdf(starting_version=version, ending_version=version))
        found = {(r["id"], r["v"], r["_change_type"]) for r in read.to_pylist()}
        assert found == expected_feed, f"batch {batch_id} (version {version})"
    assert model == replica(lake / "items")
    kinds = {r["_change_type"] for r in pa.table(table.load_cdf()).to_pylist()}
    assert kinds == {"insert", "update_preimage", "update_postimage", "delete"}
