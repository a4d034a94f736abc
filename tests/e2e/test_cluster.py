"""``sparkcdc run`` on a real Spark cluster: a standalone master and two workers on loopback (one
core each), the lake on S3 (moto's server), from MariaDB and from PostgreSQL (the scenario written
once, ``cluster_sources``). The initial snapshot's tasks run on both workers, shown from the
driver's REST API; then the stream follows and the replica equals the source (in the default
run from MariaDB; from PostgreSQL in the full trial).

The full trial (``SPARKCDC_CLUSTER_TRIAL=1``, ``scripts/cluster.sh``) kills a worker with
``kill -9`` mid-snapshot and the driver mid-stream, then restarts the driver: the replica still
equals the source and the change log holds every change once.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cases.cluster import StandaloneCluster
from tests.cases.s3 import MotoS3, storage_options
from tests.cases.spark_rest import committed_batches, snapshot_batches, snapshot_finished
from tests.e2e.cli import available_now, crash, start
from tests.e2e.cluster_runs import snapshot_tasks_per_worker, wait_for
from tests.e2e.cluster_sources import (
    FIRST,
    Changes,
    MariaDBSource,
    PostgresSource,
    Source,
    logged_changes,
    replica_equals_source,
)
from tests.e2e.crashes import version

pytestmark = [pytest.mark.spark, pytest.mark.s3]

TRIAL = pytest.mark.skipif(
    os.environ.get("SPARKCDC_CLUSTER_TRIAL") != "1",
    reason="the full cluster trial runs with SPARKCDC_CLUSTER_TRIAL=1 (scripts/cluster.sh)",
)
MARIADB = pytest.param("mariadb", marks=pytest.mark.mariadb)
POSTGRESQL = pytest.param("postgres", marks=pytest.mark.postgres)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneCluster]:
    """A standalone master and two workers of 1 core and 1 GB each."""
    cluster = StandaloneCluster(tmp_path_factory.mktemp("cluster"), workers=2)
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def source(request: pytest.FixtureRequest) -> Source:
    """The test's source, by its parameter: a database of its own on the session's server."""
    if request.param == "postgres":
        return PostgresSource(request.getfixturevalue("postgres"), request.getfixturevalue("pgdb"))
    return MariaDBSource(request.getfixturevalue("mariadb"), request.getfixturevalue("db"))


def snapshot_committed(checkpoint: Path) -> bool:
    return bool(committed_batches(checkpoint) & snapshot_batches(checkpoint))


def stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the driver: the batch in flight commits, then exit 0."""
    os.kill(proc.pid, signal.SIGTERM)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0, out.decode(errors="replace")


def assert_exactly_once(
    source: Source, lake: str, options: dict[str, str], written: Changes, snapshot_rows: int
) -> None:
    """The change log holds each snapshot row and each change ``written`` once, nothing else."""
    expected = source.changes(written) + Counter(
        ("r", FIRST + i, 0) for i in range(1, snapshot_rows + 1)
    )
    seen = logged_changes(source, lake, options)
    duplicates = {k: n for k, n in seen.items() if n > 1}
    assert not duplicates, f"{len(duplicates)} changes delivered twice, e.g. {list(duplicates)[:5]}"
    assert seen == expected, (list((expected - seen).items())[:5], list(seen - expected)[:5])


# the default run keeps the suite's time: MariaDB there, PostgreSQL in the full trial
POSTGRESQL_IN_TRIAL = pytest.param("postgres", marks=[pytest.mark.postgres, TRIAL])


@pytest.mark.parametrize("source", [MARIADB, POSTGRESQL_IN_TRIAL], indirect=True)
def test_snapshot_on_two_workers_then_the_stream(
    source: Source, s3: MotoS3, cluster: StandaloneCluster, tmp_path: Path
) -> None:
    """20,000 rows in 20 chunks, two tasks per micro-batch: both workers run snapshot tasks;
    500 changes written afterwards reach the replica and the change log once each."""
    rows = 20_000
    source.fill(rows)
    options = s3.options()
    lake = f"s3://{s3.bucket()}/{source.db}"
    cfg = source.config(tmp_path, cluster, lake, storage_options(options))
    checkpoint = tmp_path / "checkpoint"
    proc = start(cfg)
    try:
        wait_for("the snapshot handed off to the log", lambda: snapshot_finished(checkpoint), proc)
        per_worker = snapshot_tasks_per_worker(cfg, checkpoint, cluster)
        assert all(per_worker) and sum(sum(c.values()) for c in per_worker) >= 10, per_worker
        workload = source.workload(500, 1)
        workload.start()
        workload.join()
        assert workload.error is None, workload.error
        wait_for("the replica equal to the source",
                 lambda: replica_equals_source(source, lake, options), proc)  # fmt: skip
    except BaseException:
        crash(proc)
        raise
    stop(proc)
    assert_exactly_once(source, lake, options, workload.expected, rows)


@TRIAL
@pytest.mark.slow
@pytest.mark.parametrize("source", [MARIADB, POSTGRESQL], indirect=True)
def test_a_worker_killed_mid_snapshot_and_the_driver_mid_stream(
    source: Source, s3: MotoS3, cluster: StandaloneCluster, tmp_path: Path
) -> None:
    """200,000 rows in 13 micro-batches; worker 1 killed with ``kill -9`` after the first one
    committed: its tasks run again on worker 0 and the snapshot completes. The worker comes
    back, 3,000 changes stream, the driver is killed with ``kill -9`` once they are being
    written, and a restart from the checkpoint converges exactly."""
    rng = random.Random(11)
    rows = 200_000
    source.fill(rows)
    options = s3.options()
    lake = f"s3://{s3.bucket()}/{source.db}"
    cfg = source.config(tmp_path, cluster, lake, storage_options(options), chunk_size=2000,
                        batch_rows=8000)  # fmt: skip
    checkpoint = tmp_path / "checkpoint"
    changelog = f"{lake}/{source.namespace}/accounts__changelog"
    proc = start(cfg)
    workload = source.workload(3000, 2)
    try:
        wait_for("a snapshot batch committed", lambda: snapshot_committed(checkpoint), proc)
        time.sleep(rng.uniform(0.2, 1.0))  # into the next batch's tasks
        assert not snapshot_finished(checkpoint), "the snapshot ended before the worker's kill"
        cluster.kill_worker(1)
        wait_for("the snapshot handed off to the log", lambda: snapshot_finished(checkpoint), proc)
        per_worker = snapshot_tasks_per_worker(cfg, checkpoint, cluster)
        assert all(per_worker), per_worker
        cluster.restart_worker(1)
        written = version(changelog, options)
        workload.start()
        wait_for("the stream wrote", lambda: version(changelog, options) > written, proc)
        time.sleep(rng.uniform(0.5, 2.0))
        crash(proc)
    except BaseException:
        crash(proc)
        raise
    workload.join()
    assert workload.error is None, workload.error
    available_now(cfg)  # the restarted driver catches up with everything
    assert replica_equals_source(source, lake, options)
    assert_exactly_once(source, lake, options, workload.expected, rows)
