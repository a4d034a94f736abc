"""Where the CPU goes in ``sparkcdc run``: a py-spy profile of the whole pipeline.

``python -m bench.run --only profile`` writes section 1's mixed workload on a throwaway server
and runs ``sparkcdc run --available-now`` over it under ``py-spy record --subprocesses`` (every
Python process of the run: the driver with the sink, the source process with the log reader,
the task workers; the JVM is not sampled). Samples of running threads only (no ``--idle``) are
summed per process role and, inside each, by the innermost sparkcdc function (else the innermost
frame), so the summary reads as CPU seconds of the run's own code and of the libraries it calls.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench import workload
from sparkcdc.sources.mysql.throwaway import ThrowawayMariaDB

RATE = 97  # samples per second and thread, off the beat of timers
DRIVER = "driver (`sparkcdc run`: session, sink reading batch files, Delta writes)"
ROLES = (
    ("python_streaming_source_runner", "source process (log reader, store, planning)"),
    ("worker", "Spark's Python workers (tasks, data source set-up)"),
    ("pyspark.daemon", "Spark's Python workers (tasks, data source set-up)"),
)
FRAME = re.compile(r"^(?P<fn>.*?) \((?P<file>[^()]*?)(?::\d+)?\)$")

YamlFor = Callable[[Path, ThrowawayMariaDB, str], Path]


def _role(processes: list[str]) -> str:
    """The role of the innermost process of a stack (py-spy nests children in parents)."""
    if len(processes) <= 1:
        return DRIVER
    return next((label for marker, label in ROLES if marker in processes[-1]), "other")


def _name(frame: str) -> str:
    """``function (module path)`` as ``module.function`` with the path from ``sparkcdc/``."""
    match = FRAME.match(frame)
    if match is None:
        return frame
    path = match.group("file")
    for root in ("sparkcdc/", "site-packages/"):
        if root in path:
            path = path.split(root, 1)[1]
            break
    return f"{path.removesuffix('.py').replace('/', '.')}.{match.group('fn')}"


def summarise(raw: str, rate: int = RATE, top: int = 8) -> dict[str, Any]:
    """CPU seconds per process role and its top functions, from py-spy's raw output."""
    roles: Counter[str] = Counter()
    functions: dict[str, Counter[str]] = {}
    for line in raw.splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        frames = stack.split(";")
        processes = [f for f in frames if f.startswith("process ")]
        role = _role(processes)
        roles[role] += int(count)
        python = frames[len(processes) :]
        own = [f for f in python if "sparkcdc/" in f]
        leaf = own[-1] if own else python[-1] if python else "(no Python frame: native code)"
        functions.setdefault(role, Counter())[_name(leaf)] += int(count)
    return {
        "rate": rate,
        "roles": [
            {
                "role": role,
                "cpu_s": n / rate,
                "top": [
                    {"function": f, "cpu_s": k / rate} for f, k in functions[role].most_common(top)
                ],
            }
            for role, n in roles.most_common()
        ],
    }


def run(server: ThrowawayMariaDB, work: Path, inserts: int, rounds: int,
        yaml_for: YamlFor) -> dict[str, Any]:  # fmt: skip
    """The profile of one whole run over the mixed workload."""
    spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    workload.create_schema(server)
    load = workload.write_changes(server, inserts, rounds)
    cfg = yaml_for(work, server, r"bench\.events")
    raw = work / "profile.txt"
    subprocess.run(
        [spy, "record", "--subprocesses", "--nonblocking", "--rate", str(RATE), "--format",
         "raw", "--output", str(raw), "--", sys.executable, "-m", "sparkcdc.cli.main", "run",
         str(cfg), "--available-now", "--quiet"],
        check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    return {"changes": load.changes, **summarise(raw.read_text())}
