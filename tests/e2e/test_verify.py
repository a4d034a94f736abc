"""``sparkcdc verify`` as a user runs it, against every source.

On a pipeline that is running while a writer churns a table, verify gives no false alarm: chunks
that differed because of changes in flight are read again once the pipeline has committed past
them; with the writer stopped every table is equal (an integer key compared in NumPy, a key of
text placed by the database: MariaDB's case-insensitive string, PostgreSQL's uuid). With the
pipeline stopped, rows deleted, changed and added in the replicas by hand, and a row changed at
the source, are named by key, with the columns that differ, and the exit status is 1.
"""

from __future__ import annotations

import time
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from tests.cases.command import verify
from tests.cases.e2e_sources import E2ESource
from tests.e2e.cli import in_process, run
from tests.e2e.incremental_runs import Launch, stop, wait_for
from tests.e2e.snapshot_workload import Churn, load_items

pytestmark = [pytest.mark.spark, pytest.mark.slow]


@pytest.mark.extended("postgres")
def test_verify_under_writes_then_names_the_keys_edited_by_hand(
    source: E2ESource, launch: Launch, tmp_path: Path
) -> None:
    load_items(source.server, source.database, 3000)
    keyed = source.text_keyed
    source.execute(*keyed.create)
    settings = source.snapshot_settings(chunk=500)
    cfg = source.config(tmp_path, f"(items|{keyed.table})", "initial", extra_source=settings)
    proc = launch(cfg)
    lake = source.lake(tmp_path)
    wait_for(proc, lambda: written(lake / "items"), "the replica's snapshot", 180)
    churn = Churn(source.server, source.database, top=6000, seed=11, pause=0.005)
    churn.start()
    try:
        time.sleep(2)
        before = churn.commits
        code, out = verify(cfg, "--chunk-size", "250")
        assert churn.commits - before > 50, "the writer did not write while verify ran"
        assert code == 0, out
        assert "every table equal" in out and "chunks read again" in out, out
    finally:
        churn.halt()
    code, out = verify(cfg, "--chunk-size", "400")  # the pipeline catches up with the writer
    assert code == 0 and "every table equal" in out, out
    stop(proc)

    edited = edit_items_by_hand(source, lake / "items")
    DeltaTable(str(lake / keyed.table)).delete(keyed.replica_delete)
    source.execute(keyed.source_update)  # not streamed: the pipeline is stopped
    code, out = run(cfg, command="verify")
    assert code == 1, out
    for fragment in (*edited, *keyed.report):
        assert fragment in out, out
    code, out = run(cfg, "--tables", source.tables(keyed.table), command="verify")
    assert code == 1 and "items" not in out, out
    for bad in (["--tables", "nothing\\.here"], ["--chunk-size", "0"], ["--wait", "-1"]):
        code, printed, err = in_process("verify", str(cfg), *bad)
        assert code == 64 and bad[0] in printed + err, printed + err


def written(replica: Path) -> bool:
    """Whether the replica has its snapshot and a version more."""
    return (replica / "_delta_log").is_dir() and DeltaTable(str(replica)).version() >= 1


def edit_items_by_hand(source: E2ESource, replica: Path) -> tuple[str, ...]:
    """Delete a row of the ``items`` replica, change one and add one; what verify says of
    them."""
    [(deleted,), (changed,)] = source.query("SELECT id FROM items WHERE id > 0 ORDER BY id LIMIT 2")
    DeltaTable(str(replica)).delete(f"id = {deleted}")
    DeltaTable(str(replica)).update(
        updates={"amount": "CAST(999.99 AS DECIMAL(12,2))"}, predicate=f"id = {changed}"
    )
    extra = DeltaTable(str(replica)).to_pyarrow_table().slice(0, 1)
    extra = extra.set_column(0, "id", pa.array([100001], extra.schema.field("id").type))
    write_deltalake(str(replica), extra, mode="append")
    return (
        f"missing from the replica: 1: id={deleted}",
        "in the replica, not at the source: 1: id=100001",
        f"different: 1: id={changed} (amount)",
    )
