"""A Spark standalone cluster on loopback, started from the pyspark package's ``bin/spark-class``.

:class:`StandaloneCluster` starts a master and ``workers`` workers, each its own JVM in its own
process group, on free ports of 127.0.0.1, with logs and work folders under one folder. The
workers inherit this process's environment, so their executors' Python workers run this
interpreter with the same packages: the way of shipping where the package is installed on every
node. :meth:`StandaloneCluster.kill_worker` is a worker machine's crash (``kill -9`` of the
worker, its executor and their Python processes).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

import pyspark

from tests.cases.s3 import free_port

SPARK_HOME = Path(pyspark.__file__).parent


def wait_for_port(port: int, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise TimeoutError(f"nothing listens on 127.0.0.1:{port}")


def spark_class(args: list[str], log: Path) -> subprocess.Popen[bytes]:
    """``spark-class *args`` in a process group of its own, its output into ``log``."""
    env = {**os.environ, "SPARK_HOME": str(SPARK_HOME), "SPARK_LOCAL_IP": "127.0.0.1"}
    with log.open("wb") as out:
        return subprocess.Popen(
            [str(SPARK_HOME / "bin" / "spark-class"), *args],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def stop_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the process group, SIGKILL if it is still there after 30 s."""
    if proc.poll() is not None:
        return
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


class StandaloneCluster:
    """A master and its workers (``cores`` and ``memory`` each); stop it with :meth:`stop`."""

    def __init__(self, root: Path, workers: int = 2, cores: int = 1, memory: str = "1g") -> None:
        self.root, self.cores, self.memory = root, cores, memory
        self.port, self.web_port = free_port(), free_port()
        self.master = spark_class(
            ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
             "--port", str(self.port), "--webui-port", str(self.web_port)],
            root / "master.log",
        )  # fmt: skip
        self.workers: list[subprocess.Popen[bytes]] = []
        self.worker_ports = [free_port() for _ in range(workers)]
        try:
            wait_for_port(self.port)
            for n in range(workers):
                self.workers.append(self._worker(n))
            deadline = time.monotonic() + 60
            while len(self.alive_workers()) < workers:
                assert time.monotonic() < deadline, "the workers did not register in 60 s"
                time.sleep(0.2)
        except BaseException:
            self.stop()
            raise

    @property
    def url(self) -> str:
        return f"spark://127.0.0.1:{self.port}"

    def work_dir(self, n: int) -> Path:
        """Worker ``n``'s work folder: ``app-*/<executor id>/`` for each executor it ran."""
        return self.root / f"work-{n}"

    def _worker(self, n: int) -> subprocess.Popen[bytes]:
        port = self.worker_ports[n]
        proc = spark_class(
            ["org.apache.spark.deploy.worker.Worker", self.url, "--host", "127.0.0.1",
             "--port", str(port), "--cores", str(self.cores), "--memory", self.memory,
             "--webui-port", str(free_port()), "--work-dir", str(self.work_dir(n))],
            self.root / f"worker-{n}.log",
        )  # fmt: skip
        wait_for_port(port)
        return proc

    def state(self) -> dict[str, Any]:
        """The master's JSON state (workers, applications)."""
        url = f"http://127.0.0.1:{self.web_port}/json"
        with urllib.request.urlopen(url, timeout=10) as answer:
            value: dict[str, Any] = json.loads(answer.read())
        return value

    def alive_workers(self) -> list[dict[str, Any]]:
        return [w for w in self.state().get("workers", []) if w.get("state") == "ALIVE"]

    def executors_of(self, n: int, app: str) -> set[str]:
        """The ids of the executors of application ``app`` worker ``n`` has run (its work
        folder holds one folder per executor)."""
        return {p.name for p in (self.work_dir(n) / app).glob("*") if p.is_dir()}

    def kill_worker(self, n: int) -> None:
        """``kill -9`` of worker ``n``'s process group: the worker, its executors and their
        Python workers, as the machine's crash."""
        proc = self.workers[n]
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()

    def restart_worker(self, n: int) -> None:
        """Worker ``n`` started again (the machine back after its crash), registered."""
        self.worker_ports[n] = free_port()
        self.workers[n] = self._worker(n)
        deadline = time.monotonic() + 60
        while self.worker_ports[n] not in {w.get("port") for w in self.alive_workers()}:
            assert time.monotonic() < deadline, f"worker {n} did not register again in 60 s"
            time.sleep(0.2)

    def stop(self) -> None:
        for proc in [*reversed(self.workers), self.master]:
            stop_group(proc)
