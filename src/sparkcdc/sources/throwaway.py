"""The life cycle of a throwaway database server for the demo, the tests and the benchmarks,
written once: a free loopback port, a temporary folder of its own, start and wait until it
accepts connections, stop (and kill as a crash would), restart in place, and cleanup.

Each database's server (:mod:`.mysql.throwaway`, :mod:`.postgres.throwaway`) says how it is
installed and started, how a client connects, how it is asked to shut down, and where its log
is; nothing is shared with any other server on the machine.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Self


class ThrowawayServerError(RuntimeError):
    """The throwaway server could not be installed or started."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nobody listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def new_root(prefix: str, base_dir: str | os.PathLike[str] | None) -> Path:
    """A new temporary folder for one server (under ``base_dir`` when given)."""
    return Path(tempfile.mkdtemp(prefix=prefix, dir=base_dir))


@dataclass
class ThrowawayServer(ABC):
    """One private server process of ``args``, listening on ``host:port``, with its folder
    ``root_dir`` (a context manager: stopped and removed at the end of a ``with`` block)."""

    NAME: ClassVar[str]  # the server program, as the sentences name it
    STOP_SIGNAL: ClassVar[signal.Signals]  # the shutdown it is asked for
    NOT_READY: ClassVar[tuple[type[Exception], ...]]  # a client's refusal while it starts

    port: int
    root_dir: Path
    args: list[str]
    process: subprocess.Popen[bytes]
    host: str = "127.0.0.1"

    @abstractmethod
    def connect(self, database: str | None = None, **kwargs: Any) -> Any:
        """A new autocommit client connection as the server's superuser."""

    @abstractmethod
    def _spawn(self) -> subprocess.Popen[bytes]:
        """Start the server process of ``args``."""

    @property
    @abstractmethod
    def log_path(self) -> Path:
        """The server's log."""

    def _log_tail(self) -> str:
        """The end of the server's log, for a start that failed."""
        with contextlib.suppress(OSError):
            return self.log_path.read_text(errors="replace")[-1500:]
        return "(no log)"

    @classmethod
    def _started(cls, root: Path, make: Callable[[], Self], timeout: float) -> Self:
        """The server ``make`` spawns in ``root``, once it accepts connections; on failure,
        nothing is left running and ``root`` is removed."""
        try:
            server = make()
        except BaseException:
            shutil.rmtree(root, ignore_errors=True)
            raise
        try:
            server._wait_ready(timeout)
        except BaseException:
            server.stop()
            raise
        return server

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise ThrowawayServerError(
                    f"{self.NAME} exited during start-up:\n{self._log_tail()}"
                )
            try:
                self.connect(connect_timeout=2).close()
                return
            except self.NOT_READY:
                time.sleep(0.1)
        raise ThrowawayServerError(
            f"{self.NAME} did not accept connections within {timeout:.0f}s:\n{self._log_tail()}"
        )

    def execute(self, *statements: str, database: str | None = None) -> None:
        """Run statements on a fresh autocommit connection, in order."""
        with contextlib.closing(self.connect(database)) as conn, conn.cursor() as cur:
            for sql in statements:
                cur.execute(sql)

    def query(self, sql: str, database: str | None = None) -> list[tuple[Any, ...]]:
        with contextlib.closing(self.connect(database)) as conn, conn.cursor() as cur:
            cur.execute(sql)
            return list(cur.fetchall())

    def stop(self, remove: bool = True) -> None:
        """Ask the server to shut down (:attr:`STOP_SIGNAL`; SIGKILL if it lingers 30 s) and
        delete its folder unless not to ``remove`` it."""
        if self.process.poll() is None:
            self.process.send_signal(self.STOP_SIGNAL)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()
        if remove:
            shutil.rmtree(self.root_dir, ignore_errors=True)

    def kill(self) -> None:
        """Kill -9, as a crash would (the folder stays)."""
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()

    def restart(self, timeout: float = 60.0) -> None:
        """Stop the server and start it again on the same port and folder."""
        self.stop(remove=False)
        self.process = self._spawn()
        self._wait_ready(timeout)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
