"""One run per checkpoint: ``sparkcdc run`` holds a lock on ``<checkpoint>/sparkcdc/run.lock``.

The run takes an exclusive ``flock`` on the file for its whole life and writes its process id
and start time into it (``{"pid": 4242, "started": "2025-05-01T10:00:00.000Z"}``), and once
its Spark session is up, where Spark's web UI is (``"spark_ui": "http://host:4040"``). The kernel
drops the lock when the process ends, however it ends: a file left by a ``kill -9`` holds no lock,
so the pipeline reads as stopped and the next run starts. ``sparkcdc status`` tries the lock
without waiting to tell a running pipeline from a stopped one.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from sparkcdc.core import errors
from sparkcdc.core.logs import iso_utc

RUN_LOCK = "run.lock"


@dataclass(frozen=True)
class RunHolder:
    """The process running the pipeline, as its lock file names it."""

    pid: int | None
    started: str | None  # ISO-8601 UTC
    spark_ui: str | None = None  # the address of its Spark web UI, once the session is up


class RunLock:
    """The lock held (:func:`hold_run_lock`): its holder, as its file says it."""

    def __init__(self, fd: int, holder: RunHolder) -> None:
        self._fd, self.holder = fd, holder
        self._write()

    def record_spark_ui(self, address: str | None) -> None:
        """Name the address of the run's Spark web UI in the lock file (None: no UI)."""
        self.holder = replace(self.holder, spark_ui=address)
        self._write()

    def _write(self) -> None:
        fields = {"pid": self.holder.pid, "started": self.holder.started}
        if self.holder.spark_ui is not None:
            fields["spark_ui"] = self.holder.spark_ui
        data = json.dumps(fields).encode()
        os.pwrite(self._fd, data, 0)  # over the old content, then cut: never an empty file
        os.ftruncate(self._fd, len(data))


@contextlib.contextmanager
def hold_run_lock(own: Path, wait: float = 1.0) -> Iterator[RunLock]:
    """Hold the pipeline's lock in ``own`` (``<checkpoint>/sparkcdc``) while the block runs;
    another process holding it past ``wait`` seconds (a ``status`` holds it for an instant)
    stops this run with a sentence naming that process."""
    path = own / RUN_LOCK
    try:
        own.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise errors.ConfigError(
            f"pipeline.checkpoint: the lock file {path} cannot be made ({exc.strerror}); the "
            "checkpoint must be a folder this process can write.",
            key="pipeline.checkpoint",
        ) from None
    try:
        if not _lock(fd, fcntl.LOCK_EX, wait):
            raise errors.SparkCDCError(_running_sentence(own.parent, _holder_of(path)))
        yield RunLock(fd, RunHolder(os.getpid(), iso_utc(time.time())))
    finally:
        os.close(fd)  # drops the lock


def running_holder(own: Path) -> RunHolder | None:
    """The process that holds the pipeline's lock in ``own`` now; None when none does."""
    path = own / RUN_LOCK
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        if _lock(fd, fcntl.LOCK_SH, 0.0):
            return None
        return _holder_of(path)
    finally:
        os.close(fd)


def _lock(fd: int, kind: int, wait: float) -> bool:
    """Take the lock ``kind`` on ``fd``, trying for up to ``wait`` seconds; whether it is held."""
    deadline = time.monotonic() + wait
    while True:
        try:
            fcntl.flock(fd, kind | fcntl.LOCK_NB)
            return True
        except OSError as exc:
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)


def _holder_of(path: Path) -> RunHolder:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return RunHolder(None, None)
    if not isinstance(value, dict):
        return RunHolder(None, None)
    pid, started, ui = value.get("pid"), value.get("started"), value.get("spark_ui")
    return RunHolder(
        pid if isinstance(pid, int) else None,
        started if isinstance(started, str) else None,
        ui if isinstance(ui, str) else None,
    )


def _running_sentence(checkpoint: Path, holder: RunHolder) -> str:
    who = f"process {holder.pid}" if holder.pid is not None else "another process"
    since = f", started {holder.started}" if holder.started else ""
    return (
        f"The pipeline with checkpoint {checkpoint} is already running as {who}{since}; stop it "
        "first, or give this pipeline a pipeline.checkpoint of its own."
    )
