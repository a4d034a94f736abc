"""The ``sparkcdc`` command line as a user runs it: a fresh interpreter, its exit status and
what it printed. ``java=False`` runs it where Spark's launcher finds no Java (it runs
``$JAVA_HOME/bin/java``): a command that succeeds there started no Spark."""

from __future__ import annotations

import os
import subprocess
import sys

NO_JAVA = {**os.environ, "JAVA_HOME": os.path.join(os.sep, "nonexistent", "java")}


def sparkcdc(
    *args: str, timeout: float = 120, java: bool = True
) -> subprocess.CompletedProcess[str]:
    """``sparkcdc *args`` to completion, stdout and stderr kept apart."""
    return subprocess.run(
        [sys.executable, "-m", "sparkcdc.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=None if java else NO_JAVA,
    )


def verify(cfg: str | os.PathLike[str], *extra: str) -> tuple[int, str]:
    """``sparkcdc verify`` with its report (not ``--quiet``): its exit status and all it
    printed."""
    done = sparkcdc("verify", str(cfg), *extra, timeout=600)
    return done.returncode, done.stdout + done.stderr
