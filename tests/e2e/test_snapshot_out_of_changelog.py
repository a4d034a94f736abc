"""``sink.snapshot_in_changelog: false`` through ``sparkcdc run``: the initial snapshot (two
readers, chunk files written by the tasks) fills the replica and leaves the change log empty;
the changes after it reach both, and ``verify`` finds the replica equal to the source."""

from __future__ import annotations

from pathlib import Path

import pytest
from deltalake import DeltaTable

from sparkcdc.sources.mysql.throwaway import ThrowawayMariaDB
from tests.cases.command import verify
from tests.e2e.cli import available_now, write_config

pytestmark = [pytest.mark.mariadb, pytest.mark.spark]

ROWS = 3000


def test_the_snapshot_reaches_the_replica_only(
    mariadb: ThrowawayMariaDB, db: str, tmp_path: Path
) -> None:
    mariadb.execute(
        f"CREATE TABLE {db}.items (id INT PRIMARY KEY, name VARCHAR(20), qty INT)",
        f"INSERT INTO {db}.items SELECT seq, CONCAT('n', seq), seq FROM {db}.seq_1_to_{ROWS}",
    )
    cfg = write_config(
        tmp_path,
        mariadb,
        rf"{db}\.items",
        startup="initial",
        extra_source=", snapshot: {chunk_size: 500, parallelism: 2}",
        extra_sink=", snapshot_in_changelog: false",
    )
    available_now(cfg)
    replica, changelog = (str(tmp_path / "lake" / db / t) for t in ("items", "items__changelog"))
    assert DeltaTable(replica).count() == ROWS
    assert DeltaTable(changelog).count() == 0

    mariadb.execute(
        f"UPDATE {db}.items SET qty = 0 WHERE id = 1",
        f"DELETE FROM {db}.items WHERE id = 2",
        f"INSERT INTO {db}.items VALUES ({ROWS + 1}, 'new', 1)",
    )
    available_now(cfg)
    logged = DeltaTable(changelog).to_pyarrow_table().to_pylist()
    ops = sorted((r["op"], (r["after"] or r["before"])["id"]) for r in logged)
    assert ops == [("c", ROWS + 1), ("d", 2), ("u", 1)], ops
    code, out = verify(cfg)
    assert code == 0 and "every table equal" in out, out
