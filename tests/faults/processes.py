"""The processes of a running pipeline, found by walking ``/proc`` down from its own pid (the
JVM's Python processes put themselves in process groups of their own, so the group alone would
miss them) and matching their command lines: the driver-side source process (Spark's Python
streaming source runner, where the log reader lives) and the Python task workers (children
forked by Spark's Python worker daemon), and which of those run a task."""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass
from pathlib import Path

SOURCE_RUNNER = "pyspark.sql.streaming.python_streaming_source_runner"
TASK_WORKER = "pyspark.worker"  # the module a task worker daemon's children run: its last word
BUSY_WINDOW_S = 0.05  # a worker whose CPU time grows over this window is running a task


@dataclass(frozen=True)
class Proc:
    pid: int
    ppid: int
    args: tuple[str, ...]
    cpu: int  # user + system clock ticks so far

    @property
    def command(self) -> str:
        """The command line with the interpreter's folder left out."""
        return " ".join((Path(self.args[0]).name, *self.args[1:])) if self.args else "?"


def _read(pid: int) -> Proc | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:  # gone meanwhile
        return None
    fields = stat[stat.rindex(")") + 2 :].split()  # after "pid (comm) "
    args = tuple(a.decode(errors="replace") for a in raw.split(b"\0") if a)
    return Proc(pid, int(fields[1]), args, int(fields[11]) + int(fields[12]))


def descendants(root: int) -> list[Proc]:
    """Every live process below ``root`` (children, their children, …), zombies left out."""
    table = [p for p in map(_read, (int(d) for d in os.listdir("/proc") if d.isdigit())) if p]
    children: dict[int, list[Proc]] = {}
    for proc in table:
        if proc.args:  # a zombie has no command line
            children.setdefault(proc.ppid, []).append(proc)
    found, frontier = [], [root]
    while frontier:
        below = children.get(frontier.pop(), [])
        found += below
        frontier += [p.pid for p in below]
    return found


def source_processes(root: int) -> list[Proc]:
    """The source runner processes below ``root`` (``python -m <runner>``)."""
    return [p for p in descendants(root) if SOURCE_RUNNER in p.args and "-m" in p.args]


def task_workers(root: int) -> list[Proc]:
    """The task workers below ``root``: processes running the worker daemon's command line whose
    parent runs the same one (forked by it), the daemon itself left out."""
    procs = descendants(root)
    by_pid = {p.pid: p for p in procs}
    return [
        p
        for p in procs
        if p.args[-1:] == (TASK_WORKER,) and p.ppid in by_pid and by_pid[p.ppid].args == p.args
    ]


def busy(workers: list[Proc], window: float = BUSY_WINDOW_S) -> list[Proc]:
    """The ``workers`` whose CPU time grows over ``window`` seconds."""
    time.sleep(window)
    later = {p.pid: _read(p.pid) for p in workers}
    return [p for p in workers if (now := later[p.pid]) is not None and now.cpu > p.cpu]


def connected(workers: list[Proc], port: int) -> list[Proc]:
    """The ``workers`` holding a TCP connection to loopback ``port`` (a split task's to the
    database): their sockets' inodes against the kernel's table of connections."""
    peers: set[str] = set()
    for table in ("tcp", "tcp6"):
        try:
            lines = Path(f"/proc/net/{table}").read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if int(fields[2].rsplit(":", 1)[1], 16) == port:
                peers.add(fields[9])
    return [p for p in workers if _sockets(p.pid) & peers]


def _sockets(pid: int) -> set[str]:
    found = set()
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            with contextlib.suppress(OSError):
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
                if target.startswith("socket:["):
                    found.add(target[8:-1])
    except OSError:  # gone meanwhile
        pass
    return found
