"""``examples/declarative_pipeline`` run by the real ``spark-pipelines`` CLI (Spark Connect
local, a Parquet streaming table) against a real MariaDB and a real PostgreSQL (the example's
``SPARKCDC_TYPE``): the first run takes the table's
snapshot, a second run the log's changes since, each exiting 0 (the pyspark workaround of
:mod:`sparkcdc.spark.declarative`); the streaming table holds each change with its values, and
the second run's changes, larger than the source's ``max_bytes``, came in several micro-batches
(available-now honours the read limit)."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from sparkcdc.sources.mysql.throwaway import ThrowawayMariaDB
from sparkcdc.sources.postgres.throwaway import ThrowawayPostgres

pytestmark = [pytest.mark.spark]

EXAMPLE = Path(__file__).parents[2] / "examples" / "declarative_pipeline"
# a catalog that outlives the run (Hive's, on Derby in the folder): the second run finds the table
HIVE_CATALOG = ("--conf", "spark.sql.catalogImplementation=hive")


def project(tmp: Path) -> Path:
    """The example copied under ``tmp``, its storage there (the spec wants an absolute URI)."""
    folder = tmp / "project"
    shutil.copytree(EXAMPLE, folder)
    spec = folder / "spark-pipeline.yml"
    lines = spec.read_text().splitlines()
    storage = (tmp / "storage").as_uri()
    spec.write_text("\n".join(f"storage: {storage}" if ln.startswith("storage:") else ln
                              for ln in lines) + "\n")  # fmt: skip
    return folder


def spark_pipelines_run(folder: Path, settings: dict[str, str]) -> str:
    """``spark-pipelines run`` in ``folder`` with ``settings`` in its environment: its output
    (the test fails with it unless the exit code is 0)."""
    bin_dir = Path(sys.executable).parent
    src = str(Path(__file__).parents[2] / "src")
    env = {
        **os.environ,
        **settings,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYSPARK_PYTHON": sys.executable,
        "PYTHONPATH": os.pathsep.join(filter(None, [src, os.environ.get("PYTHONPATH")])),
    }
    proc = subprocess.Popen(
        [str(bin_dir / "spark-pipelines"), *HIVE_CATALOG, "run"], cwd=folder, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
    )  # fmt: skip
    try:
        out, _ = proc.communicate(timeout=240)
    finally:  # a run that hangs takes its Spark Connect server and Python workers with it
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 0, out[-6000:]
    assert "UNKNOWN_RESPONSE" not in out
    return out


def changes(folder: Path) -> list[dict[str, Any]]:
    """The row changes in the pipeline's Parquet table, in log order."""
    rows = pq.read_table(folder / "spark-warehouse" / "orders_changes").to_pylist()
    rows = [r for r in rows if r["op"] in ("r", "c", "u", "d")]
    return sorted(rows, key=lambda r: (r["source"]["position"], (r["after"] or {}).get("id", 0)))


def micro_batches(tmp: Path) -> int:
    """How many micro-batches the streaming table's flow has committed."""
    commits = list((tmp / "storage").glob("_checkpoints/**/commits/[0-9]*"))
    return len(commits)


@dataclass(frozen=True)
class Source:
    """A database the example reads: its settings, how to run SQL in the test's database, a
    FROM clause of the integers 1..5000 as ``seq`` and the password the output must not hold."""

    settings: dict[str, str]
    execute: Callable[..., None]
    numbers: str
    password: str


def on_mariadb(request: pytest.FixtureRequest) -> Source:
    """The test's database on MariaDB, read by a user of the source's grants."""
    server: ThrowawayMariaDB = request.getfixturevalue("mariadb")
    db: str = request.getfixturevalue("db")
    user, password = server.create_cdc_user("sdp", "sdp-secret")
    settings = {
        "SPARKCDC_PORT": str(server.port), "SPARKCDC_USER": user, "SPARKCDC_PASSWORD": password,
        "SPARKCDC_TABLE": f"{db}.orders", "SPARKCDC_SERVER_ID": "7601-7605",
    }  # fmt: skip
    return Source(settings, lambda *sql: server.execute(*sql, database=db), "seq_1_to_5000",
                  password)  # fmt: skip


def on_postgres(request: pytest.FixtureRequest) -> Source:
    """The test's database on PostgreSQL, a slot and publication of the example's own."""
    server: ThrowawayPostgres = request.getfixturevalue("postgres")
    db: str = request.getfixturevalue("pgdb")
    settings = {
        "SPARKCDC_TYPE": "postgres", "SPARKCDC_PORT": str(server.port),
        "SPARKCDC_USER": server.user, "SPARKCDC_PASSWORD": server.password,
        "SPARKCDC_DATABASE": db, "SPARKCDC_TABLE": "public.orders",
        "SPARKCDC_SLOT": "sdp_orders", "SPARKCDC_PUBLICATION": "sdp_orders",
    }  # fmt: skip
    return Source(settings, lambda *sql: server.execute(*sql, database=db),
                  "generate_series(1, 5000) AS seq", server.password)  # fmt: skip


@pytest.fixture(
    params=[
        pytest.param(on_mariadb, id="mysql", marks=pytest.mark.mariadb),
        pytest.param(on_postgres, id="postgres", marks=pytest.mark.postgres),
    ]
)
def source(request: pytest.FixtureRequest) -> Source:
    make: Callable[[pytest.FixtureRequest], Source] = request.param
    return make(request)


@pytest.mark.extended("postgres")
def test_a_streaming_table_of_a_declarative_pipeline_holds_the_snapshot_then_the_changes(
    source: Source, tmp_path: Path
) -> None:
    source.execute(
        "CREATE TABLE orders (id INT PRIMARY KEY, item VARCHAR(400), qty INT)",
        "INSERT INTO orders VALUES (1, 'apple', 3), (2, 'pear', 5), (3, 'plum', 7)",
    )
    if "SPARKCDC_DATABASE" in source.settings:  # PostgreSQL: before images of every column
        source.execute("ALTER TABLE orders REPLICA IDENTITY FULL")
    folder = project(tmp_path)
    settings = {
        **source.settings,
        "SPARKCDC_STATE": str(tmp_path / "sparkcdc"), "SPARKCDC_MAX_BYTES": "2KB",
    }  # fmt: skip
    out = spark_pipelines_run(folder, settings)
    assert source.password not in out
    row = {1: ("apple", 3), 2: ("pear", 5), 3: ("plum", 7)}
    snapshot = [{"op": "r", "before": None, "after": {"id": k, "item": v[0], "qty": v[1]}}
                for k, v in row.items()]  # fmt: skip
    got = changes(folder)
    assert [{k: r[k] for k in ("op", "before", "after")} for r in got] == snapshot
    first_batches = micro_batches(tmp_path)

    wide = "x" * 300
    source.execute(
        "INSERT INTO orders VALUES (4, 'fig', 1)",
        "UPDATE orders SET qty = 4 WHERE id = 1",
        "DELETE FROM orders WHERE id = 2",
        *[f"UPDATE orders SET item = '{wide}{i}' WHERE id = 3" for i in range(30)],
        # one transaction of 5,000 rows, many times the 2KB a micro-batch may read
        f"INSERT INTO orders SELECT 100 + seq, 'bulk', seq FROM {source.numbers}",
    )
    spark_pipelines_run(folder, settings)
    got = changes(folder)
    items = ["plum", *(f"{wide}{i}" for i in range(30))]
    expected = [
        *snapshot,
        {"op": "c", "before": None, "after": {"id": 4, "item": "fig", "qty": 1}},
        {"op": "u", "before": {"id": 1, "item": "apple", "qty": 3},
         "after": {"id": 1, "item": "apple", "qty": 4}},
        {"op": "d", "before": {"id": 2, "item": "pear", "qty": 5}, "after": None},
        *({"op": "u", "before": {"id": 3, "item": old, "qty": 7},
           "after": {"id": 3, "item": new, "qty": 7}}
          for old, new in zip(items, items[1:], strict=False)),
        *({"op": "c", "before": None, "after": {"id": 100 + n, "item": "bulk", "qty": n}}
          for n in range(1, 5001)),
    ]  # fmt: skip
    assert [{k: r[k] for k in ("op", "before", "after")} for r in got] == expected
    assert micro_batches(tmp_path) - first_batches >= 3  # the read limit: several micro-batches
