"""A pipeline whose log position was lost while it was stopped (MariaDB: binlogs purged;
PostgreSQL: its slot dropped), on each source's server of the test's own (losing the shared
server's log would strand other tests).

With ``source.on_log_gone: fail`` (the default) the run stops with one sentence naming the
oldest position the server holds and both ways out. With ``resnapshot`` the tables are read
again: the replica equals the source row by row (the keys deleted in the gap deleted from it
too, and logged as ``d`` rows), and the stream goes on from there; into Delta and into Iceberg.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable

from tests.cases.e2e_sources import E2ESource
from tests.e2e.cli import available_now, run
from tests.e2e.iceberg_lake import IcebergLake, as_iceberg
from tests.e2e.incremental_runs import Launch, stop, wait_for

pytestmark = [pytest.mark.spark, pytest.mark.slow]

ROWS = 600


def rows_of(source: E2ESource) -> list[tuple[Any, ...]]:
    return sorted(source.query("SELECT id, version, name FROM items"))


class Tables:
    """The replica and change log of ``items`` in the test's lake, Delta or Iceberg."""

    def __init__(self, sink: str, source: E2ESource, tmp_path: Path) -> None:
        self.sink, self.source, self.tmp_path = sink, source, tmp_path

    def config(self, extra_source: str) -> Path:
        cfg = self.source.config(self.tmp_path, "items", "initial", extra_source=extra_source)
        return as_iceberg(cfg) if self.sink == "iceberg" else cfg

    def rows(self, table: str) -> list[dict[str, Any]]:
        if self.sink == "iceberg":
            return IcebergLake(self.tmp_path / "lake").rows(self.source.schema, table)
        lake = self.source.lake(self.tmp_path)
        return DeltaTable(str(lake / table)).to_pyarrow_table().to_pylist()

    def replica(self) -> list[tuple[Any, ...]]:
        return sorted((r["id"], r["version"], r["name"]) for r in self.rows("items"))


@pytest.mark.extended("mysql-iceberg", "postgres-delta")
@pytest.mark.parametrize("sink", ["delta", "iceberg"])
def test_a_lost_log_stops_with_the_way_out_or_is_read_again(
    own_source: E2ESource, launch: Launch, tmp_path: Path, sink: str
) -> None:
    source, tables = own_source, Tables(sink, own_source, tmp_path)
    source.execute(
        "CREATE TABLE items (id BIGINT PRIMARY KEY, version INT, name VARCHAR(40))",
        f"INSERT INTO items SELECT seq, 0, CONCAT('item-', seq) FROM {source.numbers(ROWS)}",
    )
    settings = source.snapshot_settings(chunk=200)
    cfg = tables.config(settings)
    available_now(cfg)
    assert tables.replica() == rows_of(source)
    source.execute(  # the gap: changes the log will not hold any more
        "UPDATE items SET version = 9 WHERE id <= 50",
        "DELETE FROM items WHERE id BETWEEN 100 AND 149",
        f"INSERT INTO items SELECT seq + 1000, 1, 'new' FROM {source.numbers(30)}",
    )
    source.lose_log()

    code, out = run(cfg, "--available-now")
    assert code == 2, out
    assert "source.on_log_gone: resnapshot" in out, out
    assert f"oldest position the server holds is {source.oldest_held()}" in out, out

    resnapshot = f"{settings}, on_log_gone: resnapshot"
    cfg = tables.config(resnapshot)
    proc = launch(cfg)  # one run reads the tables again, then streams on
    marker = tmp_path / "checkpoint" / "sparkcdc" / "resnapshot.json"

    def read_again() -> bool:
        """The re-snapshot done (its marker gone) and the gap's deletes applied."""
        return not marker.exists() and tables.replica() == rows_of(source)

    wait_for(proc, read_again, "the replica equal to the source again", 300)
    source.execute(  # and the stream goes on
        "UPDATE items SET name = 'after' WHERE id = 1", "DELETE FROM items WHERE id = 2"
    )
    wait_for(proc, lambda: tables.replica() == rows_of(source), "the stream going on", 120)
    stop(proc)
    assert list(tmp_path.joinpath("checkpoint").glob("gone-*/spark/offsets"))
    log = tables.rows("items__changelog")
    deleted = sorted(r["before"]["id"] for r in log if r["op"] == "d")
    assert deleted == [2, *range(100, 150)]  # the gap's deletes, then the stream's
    assert sum(r["op"] == "r" for r in log) == ROWS + ROWS - 50 + 30
    ops = sorted(r["op"] for r in log if r["op"] in "cud")
    assert ops == ["d"] * 51 + ["u"]
