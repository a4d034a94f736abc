"""``sparkcdc run`` as the campaign drives it: a process group of its own per run, its output
in a file per run (a pipe nobody reads would stall it), kill -9 of the group, SIGTERM to stop."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path


def one_sentence(output: str) -> bool:
    """Whether a run that failed ended as the pipeline promises: its last line one sentence
    (``sparkcdc: …``) and no traceback or Spark report above it."""
    lines = output.strip().splitlines()
    if not lines:
        return False
    last = lines[-1]
    return (
        last.startswith("sparkcdc: ")
        and "Traceback" not in output
        and "terminated with error" not in output
    )


class Pipeline:
    """One pipeline file's runs, one at a time."""

    def __init__(self, cfg: Path, logs: Path) -> None:
        self.cfg, self.logs = cfg, logs
        self.proc: subprocess.Popen[bytes] | None = None
        self.runs = 0

    @property
    def log(self) -> Path:
        return self.logs / f"run-{self.runs}.log"

    def start(self) -> None:
        self.runs += 1
        with self.log.open("wb") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "sparkcdc.cli.main", "run", str(self.cfg), "--quiet"],
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def output(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def kill9(self) -> None:
        """kill -9 of the whole group: driver, JVM and Python workers, as a machine crash."""
        if self.proc is not None:
            if self.proc.poll() is None:
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
            with contextlib.suppress(ProcessLookupError):  # workers outliving their leader
                os.killpg(self.proc.pid, signal.SIGKILL)

    def wait_exit(self, timeout: float) -> int | None:
        """The exit status once the run ends within ``timeout`` seconds, else None."""
        deadline = time.monotonic() + timeout
        while self.alive() and time.monotonic() < deadline:
            time.sleep(0.2)
        return None if self.proc is None or self.alive() else self.proc.returncode

    def stop(self, timeout: float = 120) -> int:
        """SIGTERM (the pipeline stops at a batch's end), kill -9 if it lingers; its status."""
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.kill9()
        return self.proc.returncode
