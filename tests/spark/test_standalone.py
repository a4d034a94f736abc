"""The pipeline on a standalone Spark cluster (a master and a worker on loopback, started from the
pyspark package): executors are separate JVMs with their own Python workers, so every change
they read must travel inside its input partition."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from deltalake import DeltaTable

from sparkcdc.config.model import Config, PipelineConfig, SinkConfig, SourceConfig, StoreConfig
from sparkcdc.core.schema import TableSchema
from sparkcdc.sources.mysql.schema.column_types import column
from sparkcdc.spark.pipeline.run import run_pipeline
from tests.cases.cluster import StandaloneCluster
from tests.fakes.database import FakeLog

pytestmark = [pytest.mark.spark, pytest.mark.slow]

ITEMS = TableSchema("shop", "items", (column("id", "int"), column("v", "varchar")), ("id",))


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """A standalone master and one worker (1 core); yields the master URL and the work dir."""
    cluster = StandaloneCluster(tmp_path_factory.mktemp("standalone"), workers=1)
    try:
        yield cluster.url, cluster.work_dir(0)
    finally:
        cluster.stop()


def test_a_stream_runs_on_separate_executor_jvms(cluster: tuple[str, Path], tmp_path: Path) -> None:
    master, work = cluster
    log = FakeLog(tmp_path / "log.jsonl", [ITEMS])
    ids = list(range(300))
    for lo in range(0, 300, 30):
        log.commit(
            [["c", "shop", "items", json.dumps([i]), None, json.dumps({"id": i, "v": f"v{i}"})]
             for i in range(lo, lo + 30)]
        )  # fmt: skip
    config = Config(
        source=SourceConfig(
            str(tmp_path / "log.jsonl"), 0, "cdc", "", (r"shop\..*",), "earliest", "tests.fakes"
        ),
        sink=SinkConfig(str(tmp_path / "lake")),
        pipeline=PipelineConfig(
            checkpoint=str(tmp_path / "checkpoint"),
            trigger_seconds=0.5,
            store=StoreConfig(max_bytes=64 * 1024, item_rows=16),
            spark_master=master,
            spark_conf={
                "spark.driver.host": "127.0.0.1",
                "spark.executor.memory": "512m",
                "spark.cores.max": "1",
                "spark.pyspark.python": sys.executable,
            },
        ),
    )
    batches = run_pipeline(config, available_now=True)
    assert batches >= 1
    replica = DeltaTable(str(tmp_path / "lake" / "shop" / "items")).to_pyarrow_table()
    assert sorted(replica.column("id").to_pylist()) == ids
    executor_logs = list(work.glob("app-*/*/stderr"))
    assert executor_logs, "no executor ran on the standalone worker"
