"""``pipeline.schema_changes`` through ``sparkcdc run`` on each source (MariaDB into Delta,
PostgreSQL into Iceberg): under the default (``lenient``) a column widened to BIGINT takes a
value beyond INT in the transaction right after the DDL, and ``verify`` is equal; under
``exception`` a DROP COLUMN stops the pipeline with a sentence, before anything of it or after
it is written, and again at the next start; with ``evolve`` the same batch goes through and the
replica loses the column, ``verify`` equal again."""

from __future__ import annotations

import re
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from tests.cases.e2e_sources import E2ESource
from tests.e2e.cli import available_now, run
from tests.e2e.iceberg_lake import IcebergLake, as_iceberg

pytestmark = [pytest.mark.spark, pytest.mark.slow]

BIG = 2**31 + 5


def _replica(source: E2ESource, tmp_path: Path) -> pa.Table:
    if source.name == "postgres":
        return IcebergLake(tmp_path / "lake").arrow(source.schema, "t")
    return DeltaTable(str(source.lake(tmp_path) / "t")).to_pyarrow_table()


def _policy(cfg: Path, policy: str) -> None:
    """The pipeline file with ``pipeline.schema_changes: policy`` (written over)."""
    text = re.sub(r"schema_changes: \w+, ", "", cfg.read_text())
    cfg.write_text(text.replace("pipeline: {", f"pipeline: {{schema_changes: {policy}, ", 1))


@pytest.mark.extended("postgres")
def test_a_widened_column_takes_bigger_values_and_exception_holds_a_drop_until_allowed(
    source: E2ESource, tmp_path: Path
) -> None:
    pg = source.name == "postgres"
    source.execute(
        "CREATE TABLE t (id INT PRIMARY KEY, v INT, gone INT)",
        "INSERT INTO t (id, v, gone) VALUES (1, 1, 1), (2, 2, 2)",
    )
    cfg = source.config(tmp_path, "t", "initial", extra_source=source.snapshot_settings())
    if pg:
        cfg = as_iceberg(cfg)
    available_now(cfg)

    widen = ("ALTER TABLE t ALTER COLUMN id TYPE bigint, ALTER COLUMN v TYPE bigint" if pg
             else "ALTER TABLE t MODIFY id BIGINT, MODIFY v BIGINT")  # fmt: skip
    source.execute(widen, f"INSERT INTO t (id, v, gone) VALUES ({BIG}, {BIG}, 3)")
    available_now(cfg)
    replica = _replica(source, tmp_path)
    assert replica.schema.field("id").type == pa.int64()
    assert (BIG, BIG) in {(r["id"], r["v"]) for r in replica.to_pylist()}
    code, out = run(cfg, command="verify")
    assert code == 0, out

    _policy(cfg, "exception")
    source.execute("ALTER TABLE t DROP COLUMN gone", "INSERT INTO t (id, v) VALUES (4, 4)")
    for _ in range(2):  # stopped, and stopped again at the next start: nothing moved past it
        code, out = run(cfg, "--available-now")
        assert code != 0 and "refused by pipeline.schema_changes: exception" in out, out
        assert "drop_column: column gone dropped" in out
        assert 4 not in _replica(source, tmp_path).column("id").to_pylist()

    _policy(cfg, "evolve")
    available_now(cfg)
    replica = _replica(source, tmp_path)
    assert "gone" not in replica.column_names
    assert sorted(replica.column("id").to_pylist()) == [1, 2, 4, BIG]
    code, out = run(cfg, command="verify")
    assert code == 0, out
