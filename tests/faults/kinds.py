"""The fault kinds: each injects one failure into a running trial and heals it, behind one small
interface (Debezium's named variants; the faults Jepsen's nemeses inject, on one machine).

The campaign restarts a pipeline that died; a fault only breaks things and mends them."""

from __future__ import annotations

import contextlib
import os
import random
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from tests.faults.object_store import OBJECT_STORE_FAULTS
from tests.faults.pipeline import Pipeline
from tests.faults.proxy import Mode, TcpProxy

if TYPE_CHECKING:
    from tests.faults.clock import ServerClock

RECONNECT_LIMIT = 20.0  # the campaign's source.reconnect_timeout, seconds
CLUSTER_SINK = "delta-cluster"  # a Delta folder lake, the pipeline on a standalone Spark cluster


class Target(Protocol):
    """What a fault reaches in a trial."""

    source: str  # "mysql" or "postgres"
    database: str
    server: Any  # the throwaway server: kill(), restart(), stop(), execute()
    proxy: TcpProxy
    pipeline: Pipeline
    checkpoint: Path
    lake_dir: Path
    rng: random.Random
    notes: dict[str, str]
    torn_copies: dict[Path, bytes]  # files a fault cut short, as they were
    clock: ServerClock  # the database's wall clock (tests.faults.clock)
    cluster: Any  # the standalone cluster of a delta-cluster trial (tests.cases.cluster), else None


class Fault:
    """One fault kind. ``writes_pause``: the database goes away, so the workload pauses;
    ``writes_during``: more changes are written while the fault is held (the lake's faults:
    the sink must have something to write); ``on_cluster``: the fault's trials run on the
    standalone cluster (sink ``delta-cluster``), and only they do."""

    name: ClassVar[str]
    only_source: ClassVar[str | None] = None
    local_lake: ClassVar[bool] = False
    on_cluster: ClassVar[bool] = False
    writes_pause: ClassVar[bool] = False
    writes_during: ClassVar[bool] = False

    def applies(self, source: str, sink: str) -> bool:
        return (
            self.only_source in (None, source)
            and not (self.local_lake and "s3" in sink)
            and (sink == CLUSTER_SINK) == self.on_cluster
        )

    def inject(self, t: Target) -> None:
        raise NotImplementedError

    def heal(self, t: Target) -> None:
        """Undo the fault (default: nothing to undo)."""


class PipelineKill(Fault):
    name = "pipeline-kill9"

    def inject(self, t: Target) -> None:
        t.pipeline.kill9()


class DatabaseKill(Fault):
    name = "db-kill9"
    writes_pause = True

    def inject(self, t: Target) -> None:
        t.server.kill()
        time.sleep(t.rng.uniform(0.5, 5.0))

    def heal(self, t: Target) -> None:
        t.server.restart()


class DatabaseRestart(Fault):
    name = "db-restart"
    writes_pause = True

    def inject(self, t: Target) -> None:
        t.server.stop(remove=False)
        time.sleep(t.rng.uniform(0.5, 3.0))

    def heal(self, t: Target) -> None:
        t.server.restart()


class WalsenderTerminate(Fault):
    """PostgreSQL's ``pg_terminate_backend`` of the pipeline's walsender, once or a few times."""

    name = "pg-walsender-kill"
    only_source = "postgres"

    def inject(self, t: Target) -> None:
        for _ in range(t.rng.randint(1, 3)):
            t.server.execute(
                "SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots "
                f"WHERE database = '{t.database}' AND active_pid IS NOT NULL"
            )
            time.sleep(t.rng.uniform(0.2, 3.0))


@dataclass
class ProxyCut(Fault):
    """The network between pipeline and database cut (reset, stall or black hole) for less
    (``long`` false) or more than the reconnect limit, then restored."""

    long: bool = False

    @property
    def name(self) -> str:  # type: ignore[override]
        return "net-cut-long" if self.long else "net-cut-short"

    def inject(self, t: Target) -> None:
        mode = t.rng.choice((Mode.RESET, Mode.STALL, Mode.BLACKHOLE))
        t.notes["mode"] = mode.value
        t.proxy.set(mode)
        held = RECONNECT_LIMIT + 15 if self.long else t.rng.uniform(1.0, RECONNECT_LIMIT / 2)
        t.notes["held_s"] = f"{held:.1f}"
        time.sleep(held)

    def heal(self, t: Target) -> None:
        t.proxy.set(Mode.PASS)


class TornCheckpoint(Fault):
    """kill -9, then the newest file of the Spark checkpoint's ``offsets/`` or ``commits/``
    cut short, as a torn write leaves it."""

    name = "torn-checkpoint"

    def inject(self, t: Target) -> None:
        t.pipeline.kill9()
        folder = t.rng.choice(("offsets", "commits"))
        files = [p for p in t.checkpoint.rglob(f"{folder}/*") if p.is_file() and p.name.isdigit()]
        if not files:
            t.notes["torn"] = f"no {folder} file yet"
            return
        newest = max(files, key=lambda p: int(p.name))
        size = newest.stat().st_size
        t.torn_copies[newest] = newest.read_bytes()  # the operator's backup (the way out)
        with newest.open("r+b") as f:
            f.truncate(t.rng.randrange(0, max(1, size)))
        t.notes["torn"] = f"{newest.relative_to(t.checkpoint)} cut from {size} bytes"


class DiskFull(Fault):
    """The lake's folder (a small tmpfs) filled to the last byte, then freed."""

    name = "disk-full"
    local_lake = True

    def inject(self, t: Target) -> None:
        filler = t.lake_dir / ".filler"
        chunk = b"\0" * (1 << 20)
        with contextlib.suppress(OSError), filler.open("wb") as f:
            while True:
                f.write(chunk)
                f.flush()
                os.fsync(f.fileno())
        time.sleep(t.rng.uniform(3.0, 12.0))

    def heal(self, t: Target) -> None:
        (t.lake_dir / ".filler").unlink(missing_ok=True)


from tests.faults.clock import ClockSkew  # noqa: E402  (subclasses of Fault)
from tests.faults.process_kills import SourceKill, WorkerKill, WorkerMachineKill  # noqa: E402

FAULTS: dict[str, Fault] = {
    f.name: f
    for f in (
        PipelineKill(), DatabaseKill(), DatabaseRestart(), WalsenderTerminate(),
        ProxyCut(long=False), ProxyCut(long=True), TornCheckpoint(), DiskFull(),
        SourceKill(), WorkerKill(), WorkerMachineKill(), ClockSkew(),
    )
}  # fmt: skip
# the object store's 500/503 and slowness (Fault's interface, through the trial's HTTP proxy)
FAULTS.update((f.name, f) for f in OBJECT_STORE_FAULTS)
