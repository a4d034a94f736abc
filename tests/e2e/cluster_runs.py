"""``sparkcdc run`` on a standalone Spark cluster: its pipeline file, waiting on a running pipeline
and showing from Spark's REST API which workers ran the initial snapshot's tasks."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from tests.cases.cluster import StandaloneCluster
from tests.cases.s3 import free_port
from tests.cases.spark_rest import application_id, snapshot_batches, tasks_by_batch
from tests.e2e.cli import Server, in_process, write_config


def spark_settings(cluster: StandaloneCluster, cores: int) -> str:
    """``pipeline.spark`` (``extra_pipeline``) for a run on ``cores`` cores of ``cluster``: the
    driver on loopback, its UI on a free port, the session waiting until every executor has
    registered (so the first snapshot batch is spread over them), Python as on this machine."""
    conf = {
        "spark.driver.host": "127.0.0.1",
        "spark.ui.port": str(free_port()),
        "spark.executor.memory": "512m",
        "spark.cores.max": str(cores),
        "spark.scheduler.minRegisteredResourcesRatio": "1.0",
        "spark.scheduler.maxRegisteredResourcesWaitingTime": "60s",
        "spark.pyspark.python": sys.executable,
    }
    pairs = ", ".join(f"{k}: '{v}'" for k, v in conf.items())
    return f", spark: {{master: '{cluster.url}', conf: {{{pairs}}}}}"


def cluster_config(
    tmp: Path, server: Server, tables: str, cluster: StandaloneCluster, *, cores: int = 2,
    chunk_size: int = 1000, batch_rows: int = 2000, extra_source: str = "", **more: str,
) -> Path:  # fmt: skip
    """A pipeline file with ``startup: initial`` on ``cluster``: the snapshot cut in chunks of
    ``chunk_size`` rows, ``batch_rows`` per task and micro-batch (so it takes several)."""
    snapshot = f", snapshot: {{chunk_size: {chunk_size}, batch_rows: {batch_rows}}}"
    return write_config(
        tmp, server, tables, startup="initial", extra_source=snapshot + extra_source,
        extra_pipeline=spark_settings(cluster, cores), **more,
    )  # fmt: skip


def wait_for(what: str, done: Callable[[], bool], proc: subprocess.Popen[bytes],
             timeout: float = 300) -> None:  # fmt: skip
    """Until ``done()``, while the run lives (its output in the failure otherwise)."""
    deadline = time.monotonic() + timeout
    while not done():
        if proc.poll() is not None:
            out = proc.stdout.read().decode(errors="replace") if proc.stdout else ""
            raise AssertionError(f"the run ended (exit {proc.returncode}) before {what}:\n{out}")
        assert time.monotonic() < deadline, f"not {what} in {timeout} s"
        time.sleep(0.5)


def spark_ui(cfg: Path) -> str:
    """The running pipeline's Spark UI, as ``sparkcdc status --json`` tells it."""
    code, out, err = in_process("status", str(cfg), "--json")
    assert code == 0, err
    ui: str | None = json.loads(out)["spark_ui"]
    assert ui, f"status names no Spark UI: {out}"
    return ui


def snapshot_tasks_per_worker(
    cfg: Path, checkpoint: Path, cluster: StandaloneCluster
) -> list[Counter[str]]:
    """For each worker of ``cluster``: its executors' successful tasks of the initial snapshot's
    micro-batches, as the running driver's REST API reports them."""
    ui = spark_ui(cfg)
    app = application_id(ui)
    batches = snapshot_batches(checkpoint)
    assert batches, "the offset log holds no snapshot micro-batch"
    per_executor: Counter[str] = Counter()
    for batch, counts in tasks_by_batch(ui).items():
        if batch in batches:
            per_executor += counts
    return [
        Counter({e: n for e, n in per_executor.items() if e in cluster.executors_of(w, app)})
        for w in range(len(cluster.workers))
    ]
