"""The chunk reads of one incremental-snapshot window, ahead of the micro-batch that uses them.

A window's reads only have to start after its low watermark is visible and end before its high
watermark is taken (DBLog, seed 002; see :mod:`sparkcdc.spark.incremental.driver`). The low
watermark of the next window is known the moment ``latestOffset`` returns: it is the end of the
micro-batch Spark is about to run. So :class:`ChunkReads` starts the next window's reads in a
thread then, while Spark writes the current batch, and the next ``latestOffset`` only stops them
and takes the high watermark: reading and writing overlap, and the log events of a batch no longer
wait for its chunk reads. The thread waits for the sink's batch mark first (:mod:`.batch_mark`: the
batch's log changes are committed) and runs at a lower CPU priority, so the reads take their time
from the chunk's write, not from the stream's.

The reads go on for ``incremental_window`` (one round of ``incremental_chunks`` chunks at least)
or until they are collected, each thread with a connection of its own. Reads made for another
start offset or another state of the run (the stream was moved, a signal changed the run) are
dropped, and the window reads in the foreground instead, one round of chunks only, since the
micro-batch's log events wait for those reads.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import pyarrow as pa

from sparkcdc.core.chunk import KeyColumn, Split
from sparkcdc.core.offset import Offset
from sparkcdc.core.schema import TableSchema
from sparkcdc.snapshot.dialect import SnapshotDialect
from sparkcdc.snapshot.incremental import Run
from sparkcdc.snapshot.splitter import ChunkSplitter, SplitterSettings, SplitterState
from sparkcdc.sources.port import TableView
from sparkcdc.spark.incremental.batch_mark import BatchMark

VISIBLE_TIMEOUT = 5.0  # the low watermark must become visible to reads within this
READ_AHEAD_NICE = 10


@dataclass
class Reads:
    """What a window read: the chunks, the splitter's state after them, whether it is done."""

    chunks: list[pa.Table]
    splitter: SplitterState
    done: bool
    visible: bool = True  # False: the low watermark did not become visible; nothing was read


class ChunkReads:
    """One window's reads of ``run`` after ``begin``: :meth:`run` in the foreground, or
    :meth:`start` in a thread and :meth:`collect` later."""

    def __init__(
        self,
        dialect_of: Callable[[], SnapshotDialect],
        run: Run,
        schema: TableSchema,
        begin: Offset,
        settings: SplitterSettings,
        parallel: int,
        seconds: float,
        view: TableView | None = None,
    ) -> None:
        self.dialect_of = dialect_of
        self.view = view  # the log reader's view of the table the dialects read in
        self.run_state = run
        self.schema = schema
        self.begin = begin
        self.settings = settings
        self.parallel = parallel
        self.seconds = seconds
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._result: Reads | None = None
        self._error: BaseException | None = None
        self._mark: BatchMark | None = None
        self._stamp = ""

    def matches(self, begin: Offset, run: Run) -> bool:
        """Whether these reads are the window of ``run`` starting at ``begin``."""
        same_run = json.dumps(run.to_json(), sort_keys=True) == json.dumps(
            self.run_state.to_json(), sort_keys=True
        )
        return same_run and begin.to_json() == self.begin.to_json()

    def start(self, mark: BatchMark | None = None) -> ChunkReads:
        """Read in a thread, from when ``mark`` moves past its state now (:mod:`.batch_mark`)."""
        self._mark, self._stamp = mark, "" if mark is None else mark.stamp()
        self._thread = threading.Thread(
            target=self._background, name="sparkcdc-chunk-reads", daemon=True
        )
        self._thread.start()
        return self

    def collect(self) -> Reads | None:
        """Stop after the round being read and hand the reads over (None: they failed; the
        window then reads in the foreground, where the failure is raised)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        return None if self._error is not None else self._result

    def cancel(self) -> None:
        self._stop.set()

    def _background(self) -> None:
        _lower_priority()
        try:
            if self._mark is not None:
                self._mark.wait_past(self._stamp, self._stop)
            self._result = self.run()
        except BaseException as exc:  # noqa: BLE001 - the foreground read raises it again
            self._error = exc

    def run(self) -> Reads:
        """Wait until ``begin`` is visible to reads, then read rounds of chunks while the
        window's time lasts (one round at least) or until stopped."""
        run = self.run_state
        dialect = self.dialect_of()
        opened: list[SnapshotDialect] = [dialect]
        try:
            if not _visible(dialect, self.begin):
                return Reads([], run.splitter, False, visible=False)
            keys = list(run.keys)
            assert run.max_key is not None
            splitter = ChunkSplitter(
                dialect, run.table, keys, self.settings, run.splitter, upto=run.max_key
            )
            chunks: list[pa.Table] = []
            started = time.monotonic()
            own = self._own_dialect(opened)
            with ThreadPoolExecutor(self.parallel) as pool:
                while True:
                    splits = splitter.take(self.parallel)
                    chunks.extend(pool.map(lambda s: self._chunk(own(), keys, s), splits))
                    if splitter.done or self._stop.is_set():
                        break
                    if time.monotonic() - started >= self.seconds:
                        break
            return Reads(chunks, splitter.state, splitter.done)
        finally:
            for each in opened:
                each.close()

    def _own_dialect(self, opened: list[SnapshotDialect]) -> Callable[[], SnapshotDialect]:
        """The reading thread's own dialect (a connection is not shared between threads),
        opened on its first chunk and kept in ``opened`` to be closed."""
        local = threading.local()
        lock = threading.Lock()

        def own() -> SnapshotDialect:
            found: SnapshotDialect | None = getattr(local, "dialect", None)
            if found is None:
                found = local.dialect = self.dialect_of()
                with lock:
                    opened.append(found)
            return found

        return own

    def _chunk(self, dialect: SnapshotDialect, keys: list[KeyColumn], split: Split) -> pa.Table:
        run = self.run_state
        table: pa.Table = dialect.read_chunk(
            self.schema, keys, split.lo, split.hi, True, run.max_key, run.request.where
        )
        return table


def _lower_priority() -> None:
    """The reads ahead (this thread and the ones it starts) yield the CPU to the micro-batch
    being written (Linux: a thread's nice value)."""
    with contextlib.suppress(AttributeError, OSError):
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), READ_AHEAD_NICE)


def _visible(dialect: SnapshotDialect, begin: Offset) -> bool:
    """Wait until every transaction before ``begin`` is visible to reads started now: the log
    reader may have read a transaction the storage engine has not committed yet (the binary
    log is written first). False if that did not happen within VISIBLE_TIMEOUT."""
    deadline = time.monotonic() + VISIBLE_TIMEOUT
    while dialect.low_watermark() < begin:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)
    return True
