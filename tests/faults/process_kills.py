"""kill -9 of one process inside a running pipeline instead of its whole group: the driver-side
source process alone (Spark's Python streaming source runner, where the log reader lives), or
one Python task worker (a child forked by Spark's Python worker daemon); found as
:mod:`tests.faults.processes` says, the pid and command killed noted. On the standalone
cluster: one worker JVM with its executor and their Python workers (a worker machine's crash).

Imported by :mod:`tests.faults.kinds` (which registers these kinds), after its base class."""

from __future__ import annotations

import os
import signal
import time

from tests.faults.kinds import Fault, Target
from tests.faults.processes import Proc, busy, connected, source_processes, task_workers

FIND_S = 30.0  # how long to wait for the process to appear
BUSY_S = 10.0  # how long to look for a worker running a task before taking any


def _kill(t: Target, proc: Proc, what: str) -> None:
    os.kill(proc.pid, signal.SIGKILL)
    t.notes["killed"] = f"{what} pid {proc.pid}: {proc.command}"


def _root(t: Target) -> int:
    assert t.pipeline.proc is not None
    return t.pipeline.proc.pid


class SourceKill(Fault):
    """kill -9 of the driver-side source process alone: exactly one must be found."""

    name = "source-kill9"

    def inject(self, t: Target) -> None:
        deadline = time.monotonic() + FIND_S
        while not (found := source_processes(_root(t))) and time.monotonic() < deadline:
            time.sleep(0.2)
        if len(found) != 1:
            raise RuntimeError(f"{len(found)} source processes found, not one: {found}")
        _kill(t, found[0], "the source process")


class WorkerKill(Fault):
    """kill -9 of one Python task worker, one running a task when one is seen within
    :data:`BUSY_S`: connected to the database (a snapshot's split task reading a chunk) or its
    CPU time growing; else any there is (a stream's workers are mostly idle between batches)."""

    name = "worker-kill9"

    def inject(self, t: Target) -> None:
        deadline = time.monotonic() + BUSY_S
        workers: list[Proc] = []
        while time.monotonic() < deadline or (not workers and time.monotonic() < deadline + FIND_S):
            workers = task_workers(_root(t))
            reading = connected(workers, t.proxy.port)
            if reading:
                _kill(t, t.rng.choice(reading), "a task worker reading from the database")
                return
            running = busy(workers) if workers else []
            if running:
                _kill(t, t.rng.choice(running), "a task worker using CPU")
                return
        if not workers:
            raise RuntimeError("no Python task worker found")
        _kill(t, t.rng.choice(workers), "an idle task worker")


class WorkerMachineKill(Fault):
    """kill -9 of one worker of the standalone cluster the pipeline runs on, with its executor
    and their Python workers (a worker machine's crash); the worker started again after a
    while, as the machine coming back."""

    name = "worker-jvm-kill9"
    on_cluster = True

    def inject(self, t: Target) -> None:
        n = t.rng.randrange(len(t.cluster.workers))
        t.cluster.kill_worker(n)
        t.notes["killed"] = f"worker {n} of the cluster, its executor and Python workers"
        time.sleep(t.rng.uniform(0.5, 8.0))

    def heal(self, t: Target) -> None:
        t.cluster.restart_worker(int(t.notes["killed"].split()[1]))
