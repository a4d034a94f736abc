"""The phases a trial's fault lands in (the issue's list: initial snapshot, hand-off, stream,
incremental snapshot, DDL in flight, a transaction larger than the store, a PostgreSQL
transaction streamed in progress, a re-snapshot after a lost log position), each one small
class:

- what the pipeline file needs (:class:`Settings`) and the table before it starts (``preload``);
- how the running trial is brought there (:meth:`Phase.reach`: the workload started, the phase
  waited for, then ``offset`` seconds), and what it reached (:meth:`Phase.seen`);
- what the checker allows (:meth:`Phase.expected`): the initial snapshot's ``r`` rows, an
  incremental snapshot's (judged at their place in the log) or a re-snapshot's; and checks of
  its own (:meth:`Phase.check`).

A trial makes its own instance (:func:`phase_of`), which keeps what its phase wrote."""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass
from typing import Any, ClassVar

from tests.e2e.workload import ChangeWorkload
from tests.faults.checker import Identity, LakeTables
from tests.faults.kinds import Target
from tests.faults.phase_steps import (
    BigTransaction,
    batch_offset,
    delivered,
    handoff_file,
    in_handoff,
    incremental_chunks,
    log_end,
    lose_log,
    position,
    signal,
    slot_streamed,
    snapshot_splits,
    wait_until,
    workload,
)

PRELOAD = 40_000  # rows an initial or incremental snapshot reads
SPLITS_BEFORE_WRITES = 3 * PRELOAD // 2000 // 5  # 3/5 of the splits (chunk_size 2000)
BIG_TXN_FIRST, BIG_TXN_ROWS = 30_000_000, 30_000
SMALL_STORE = "1MB"  # the store of the big-transaction phases: far smaller than the transaction


@dataclass(frozen=True)
class Settings:
    """The pipeline file's keys a phase sets: ``source`` and ``snapshot``, more keys of
    ``source`` and inside ``source.snapshot`` (``, key: value``)."""

    startup: str = "initial"
    snapshot: str = ""
    max_bytes: str = "8MB"
    source: str = ""


class Phase:
    """Where a trial's fault lands (see the module docstring); the stream's defaults."""

    name: ClassVar[str]
    only_source: ClassVar[str | None] = None
    preload: ClassVar[int] = 0
    reads: ClassVar[bool] = False  # the initial snapshot's r rows allowed
    max_offset: ClassVar[float] = 3.0  # the fault fires up to this many seconds into the phase
    lake: LakeTables | None = None  # the trial's lake, as the checker reads it

    def applies(self, source: str) -> bool:
        return self.only_source in (None, source)

    def settings(self) -> Settings:
        return Settings()

    def prepare(self, t: Target) -> None:
        """Before the pipeline first starts (default: nothing)."""

    def reach(self, t: Target, writes: ChangeWorkload, offset: float) -> None:
        wait_until("the hand-off to the log", lambda: handoff_file(t).exists(), t)
        writes.start()
        time.sleep(offset)

    def seen(self, t: Target) -> str:
        """The phase the pipeline was in at the fault."""
        return "stream" if handoff_file(t).exists() else "snapshot"

    def settle(self, t: Target) -> Counter[Identity]:
        """After the heal: the changes the phase's own writes committed (default: none)."""
        return Counter()

    def expected(self, preloaded: Counter[Identity]) -> dict[str, Any]:
        """The checker's keywords (:func:`~tests.faults.checker.check_trial`): which ``r`` rows
        the change log may hold; ``preloaded``: the table's rows before the pipeline."""
        return {"reads_allowed": self.reads}

    def check(self, t: Target, replica: list[dict[str, Any]] | None) -> list[str]:
        """Violations of the phase's own (default: none)."""
        return []


class Snapshot(Phase):
    """The initial snapshot of PRELOAD rows, the workload writing: after its first split."""

    name = "snapshot"
    preload, reads = PRELOAD, True

    def reach(self, t: Target, writes: ChangeWorkload, offset: float) -> None:
        writes.start()
        wait_until("a snapshot split", lambda: bool(snapshot_splits(t)), t)
        time.sleep(offset)


class Stream(Phase):
    """The log streaming (an empty table's snapshot handed off), the workload writing."""

    name = "stream"


class Handoff(Snapshot):
    """The snapshot's hand-off to the log: as soon as the hand-off file appears, while the
    first stream batches filter the changes the splits already hold. The workload starts with
    the snapshot's last splits (SPLITS_BEFORE_WRITES done), so their high watermarks differ and
    the hand-off range holds changes."""

    name = "handoff"
    max_offset = 0.5

    def reach(self, t: Target, writes: ChangeWorkload, offset: float) -> None:
        enough = SPLITS_BEFORE_WRITES
        wait_until(f"{enough} snapshot splits", lambda: len(snapshot_splits(t)) >= enough, t)
        writes.start()
        wait_until("the hand-off to the log", lambda: handoff_file(t).exists(), t)
        time.sleep(offset)

    def seen(self, t: Target) -> str:
        if not handoff_file(t).exists():
            return "snapshot"
        return "handoff" if in_handoff(t) else "stream"


class Incremental(Phase):
    """An incremental snapshot of PRELOAD rows the stream never saw (``startup: latest``),
    signalled while the workload writes: after its first window."""

    name = "incremental"
    preload = PRELOAD

    def settings(self) -> Settings:
        return Settings("latest", ", incremental_chunks: 2, incremental_window: 100ms")

    def reach(self, t: Target, writes: ChangeWorkload, offset: float) -> None:
        wait_until("the first offset", lambda: batch_offset(t) is not None, t)
        writes.start()
        time.sleep(t.rng.uniform(0.5, 2.0))  # some of the workload's keys are read too
        table = f"{t.database}.accounts" if t.source == "mysql" else "public.accounts"
        t.notes["signal"] = signal(t, "execute-snapshot", "--tables", table).strip()
        wait_until("an incremental window", lambda: incremental_chunks(t) > 0, t)
        time.sleep(offset)

    def seen(self, t: Target) -> str:
        return "incremental" if incremental_chunks(t) > 0 else "stream"

    def expected(self, preloaded: Counter[Identity]) -> dict[str, Any]:
        return {"reads_allowed": True, "before_log": preloaded}


class Ddl(Phase):
    """``ADD COLUMN note … DEFAULT 'n'`` mid-stream while the workload writes, the fault right
    after: the replica must hold the column, filled as the source holds it."""

    name = "ddl"
    max_offset = 1.0

    def reach(self, t: Target, writes: ChangeWorkload, offset: float) -> None:
        super().reach(t, writes, t.rng.uniform(0.5, 2.0))
        t.server.execute(
            "ALTER TABLE accounts ADD COLUMN note VARCHAR(20) DEFAULT 'n'", database=t.database
        )
        self.at = log_end(t)
        time.sleep(offset)

    def seen(self, t: Target) -> str:
        done = position(batch_offset(t, committed=True))
        return "ddl" if done is None or done < self.at else "stream"

    def check(self, t: Target, replica: list[dict[str, Any]] | None) -> list[str]:
        held = {r["id"]: r.get("note", "(no column)") for r in replica or []}
        source = dict(t.server.query("SELECT id, note FROM accounts", t.database))
        wrong = [(k, held.get(k), v) for k, v in sorted(source.items()) if held.get(k) != v]
        if wrong:
            return [f"replica note != source note for {len(wrong)} rows; e.g. {wrong[:2]}"]
        return []


class BigTxn(Phase):
    """One transaction of BIG_TXN_ROWS rows, far larger than the store (SMALL_STORE), committed
    mid-stream: the fault while its pieces are delivered (an offset inside it)."""

    name = "big-txn"
    max_offset = 1.0

    def settings(self) -> Settings:
        return Settings(max_bytes=SMALL_STORE)

    def reach(self, t: Target, writes: ChangeWorkload, offset: float) -> None:
        super().reach(t, writes, t.rng.uniform(0.2, 1.5))
        self.big = BigTransaction(t, BIG_TXN_FIRST, BIG_TXN_ROWS)
        self.big.open()
        self.committed = self.big.commit()
        wait_until("an offset inside the big transaction", lambda: self._inside(t), t, 120)
        time.sleep(offset)

    def _inside(self, t: Target) -> bool:
        found = position(batch_offset(t))
        return found is not None and found[-1] > 0

    def seen(self, t: Target) -> str:
        return "big-txn" if self._inside(t) else "stream"

    def settle(self, t: Target) -> Counter[Identity]:
        return self.committed


class PgStreamed(Phase):
    """PostgreSQL only: the trial database's ``logical_decoding_work_mem`` at its least (64kB),
    so one transaction of BIG_TXN_ROWS rows is streamed while it runs; the fault while it is
    open, its commit after the heal (a server restarted under it rolls it back)."""

    name = "pg-streamed"
    only_source = "postgres"
    max_offset = 1.0

    def settings(self) -> Settings:
        return Settings(max_bytes=SMALL_STORE)

    def prepare(self, t: Target) -> None:
        t.server.execute(f"ALTER DATABASE \"{t.database}\" SET logical_decoding_work_mem = '64kB'")

    def reach(self, t: Target, writes: ChangeWorkload, offset: float) -> None:
        super().reach(t, writes, t.rng.uniform(0.2, 1.5))
        self.before = slot_streamed(t)
        self.big = BigTransaction(t, BIG_TXN_FIRST, BIG_TXN_ROWS)
        self.big.open()
        wait_until("the transaction streamed", lambda: slot_streamed(t) > self.before, t, 60)
        time.sleep(offset)

    def seen(self, t: Target) -> str:
        return "pg-streamed" if slot_streamed(t) > self.before else "stream"

    def settle(self, t: Target) -> Counter[Identity]:
        return self.big.commit()


class LogGone(Phase):
    """``on_log_gone: resnapshot``: a run streaming PRELOAD rows it never read (``startup:
    latest``) is stopped once the lake holds its changes; changes are written, the log past
    its position lost (binlogs purged, the slot dropped), and the next run reads the table
    again while the workload writes on the same keys: the fault during that re-snapshot."""

    name = "resnapshot"
    preload = PRELOAD

    def settings(self) -> Settings:
        return Settings("latest", source=", on_log_gone: resnapshot")

    def reach(self, t: Target, writes: ChangeWorkload, offset: float) -> None:
        assert self.lake is not None
        wait_until("the first offset", lambda: batch_offset(t) is not None, t)
        some = t.rng.sample(range(1, PRELOAD + 1), 300)
        self.first = workload(t, 40_000_000, 1500, dict.fromkeys(some, 0))
        self.first.run()
        lake, done = self.lake, self.first.expected
        wait_until("the first run's changes in the lake", lambda: delivered(lake, done), t)
        t.notes["first_run_stop"] = f"exit {t.pipeline.stop()}"
        self.gap = workload(t, 50_000_000, 1500, self.first.live)
        self.gap.run()
        lose_log(t)
        t.pipeline.start()
        writes.live = dict(self.gap.live)
        writes.start()
        wait_until("a re-snapshot split", lambda: bool(snapshot_splits(t)), t)
        time.sleep(offset)

    def seen(self, t: Target) -> str:
        marker = t.checkpoint / "sparkcdc" / "resnapshot.json"
        return "resnapshot" if marker.exists() else "stream"

    def settle(self, t: Target) -> Counter[Identity]:
        for part in (self.first, self.gap):
            if part.error is not None:
                raise RuntimeError(f"a workload of the first run or the gap failed: {part.error}")
        return self.first.expected + self.gap.expected

    def expected(self, preloaded: Counter[Identity]) -> dict[str, Any]:
        return {"reads_allowed": True, "first_run": self.first.expected}


PHASES: dict[str, type[Phase]] = {
    p.name: p for p in (Snapshot, Stream, Handoff, Incremental, Ddl, BigTxn, PgStreamed, LogGone)
}


def phase_of(name: str) -> Phase:
    """A new instance of the phase ``name``, for one trial."""
    return PHASES[name]()
