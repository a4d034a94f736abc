"""The pipeline on a standalone Spark cluster (a master and a worker on loopback, started from the
pyspark package): executors are separate JVMs with their own Python workers, so every change
they read must travel inside its input partition."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pyspark
import pytest
from deltalake import DeltaTable

from sparkcdc.config.model import Config, PipelineConfig, SinkConfig, SourceConfig, StoreConfig
from sparkcdc.core.schema import TableSchema
from sparkcdc.sources.mysql.schema.column_types import column
from sparkcdc.spark.pipeline.run import run_pipeline
from tests.fakes.database import FakeLog

pytestmark = [pytest.mark.spark, pytest.mark.slow]

SPARK_HOME = Path(pyspark.__file__).parent
ITEMS = TableSchema("shop", "items", (column("id", "int"), column("v", "varchar")), ("id",))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for_port(port: int, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise TimeoutError(f"nothing listens on 127.0.0.1:{port}")


def spark_class(args: list[str], log: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "SPARK_HOME": str(SPARK_HOME), "SPARK_LOCAL_IP": "127.0.0.1"}
    with log.open("wb") as out:
        return subprocess.Popen(
            [str(SPARK_HOME / "bin" / "spark-class"), *args],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """A standalone master and one worker (1 core); yields the master URL and the work dir."""
    root = tmp_path_factory.mktemp("standalone")
    port = free_port()
    master = spark_class(
        ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
         "--webui-port", str(free_port())],
        root / "master.log",
    )  # fmt: skip
    processes = [master]
    try:
        wait_for_port(port)
        work = root / "work"
        worker_port = free_port()
        processes.append(
            spark_class(
                [
                    "org.apache.spark.deploy.worker.Worker",
                    f"spark://127.0.0.1:{port}",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(worker_port),
                    "--cores",
                    "1",
                    "--memory",
                    "1g",
                    "--webui-port",
                    str(free_port()),
                    "--work-dir",
                    str(work),
                ],
                root / "worker.log",
            )  # fmt: skip
        )
        wait_for_port(worker_port)
        yield f"spark://127.0.0.1:{port}", work
    finally:
        for proc in reversed(processes):
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


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
