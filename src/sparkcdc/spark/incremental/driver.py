"""Incremental snapshots in the stream reader: DBLog windows at micro-batch granularity.

DBLog (seed 002) reads a chunk between a low and a high watermark written to the log, drops
every chunk row whose key the log changed between them, and emits the rest at the high
watermark; Debezium (seed 000) does the same for its incremental snapshots, one chunk at a
time. Here the watermarks are log positions, so a user who may only read works too:

1. ``latestOffset(start)``: the micro-batch's start offset is the **low watermark**. Everything
   before it was read from the log; the chunks are read once all of it is visible to reads
   (the dialect's ``low_watermark`` has passed it; MariaDB: its consistent-snapshot position).
2. The chunks of the window are read, ``incremental_chunks`` at a time in parallel threads,
   while ``snapshot.incremental_window`` lasts (each SELECT sees a state at or after the low
   watermark).
3. The dialect's ``watermark`` after the last read (MySQL: ``SHOW MASTER STATUS``) is the
   **high watermark**: every transaction a read saw is in the log before it.
4. The log reader is let run past the high watermark, and the micro-batch ends at the first
   offset after it. The chunks' raw rows are written to ``incremental/<version>.arrow`` *before*
   the offset (with the new state) is handed to Spark.
5. ``partitions(start, end)``: the keys the micro-batch's own log events touched (before and
   after images of the window table) are dropped from the chunks (the rest kept in
   ``incremental/<version>.rows.arrow``; with nothing dropped the raw file serves), which are
   sent as one ``k`` event after every log event of the batch, so no snapshot row overtakes a
   newer change. A replayed micro-batch has the same log events and the same raw file, so it
   sends the same rows.

Several chunks in one window keep DBLog's guarantee: each read happens between the same two
watermarks, and a key the window did not touch has the same row at every moment in it. A DDL of
the table inside the window discards the window (its chunks are read again). Signals found in
the batch's log events (the signal table) or in the signal folder apply at the batch's end, as
do the schema changes among them that rewrote their table's rows without row events: each
queues the table whole (:func:`~sparkcdc.snapshot.incremental.resnapshot`), signal table or not.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from sparkcdc.core.errors import ConfigError
from sparkcdc.core.event import OP_CREATE
from sparkcdc.core.images import TypedImages
from sparkcdc.core.offset import Offset
from sparkcdc.core.offset_events import notice_batch
from sparkcdc.core.table_name import TableName
from sparkcdc.snapshot.incremental import (
    IncrementalState,
    add_new_tables,
    apply_signal,
    resnapshot,
)
from sparkcdc.snapshot.signals import Signal, parse_signal, read_file_signals, remove_file_signals
from sparkcdc.sources.port import LogReader
from sparkcdc.spark.incremental.window_events import (
    rewritten,
    schema_changed,
    window_chunk_event,
)
from sparkcdc.spark.incremental.window_reader import WindowReader
from sparkcdc.spark.offsets import IncrementalOffset, SparkOffset
from sparkcdc.spark.stream.delivery import DeliveryQueue
from sparkcdc.spark.stream.options import SourceOptions
from sparkcdc.spark.stream.status import IncrementalFigures

log = logging.getLogger("sparkcdc.incremental")


class IncrementalSnapshots:
    """The stream reader's side of incremental snapshots (see the module docstring)."""

    def __init__(
        self, options: SourceOptions, root: str, captured: Callable[[], list[str]]
    ) -> None:
        self.options = options
        self.folder = Path(root) / "incremental"
        self._captured_of = captured
        self._captured: list[str] | None = None
        self._checked = False
        signal = options.source.signal_table
        self.signal_table = TableName.parse(signal) if signal else None
        self.signal_dir = Path(options.signal_dir) if options.signal_dir else None
        self.latest: IncrementalState | None = None
        self.windows = WindowReader(options, self.folder)

    def captured(self, fresh: bool = False) -> list[str]:
        """The tables captured now (asked once per process, or again when ``fresh``)."""
        if self._captured is None or fresh:
            self._captured = sorted(self._captured_of())
        return self._captured

    def close(self) -> None:
        self.windows.close()

    # ------------------------------------------------------------ latestOffset
    def plan(
        self,
        start: SparkOffset,
        begin: Offset,
        end: Offset,
        queue: DeliveryQueue,
        reader: LogReader | None,
    ) -> IncrementalOffset | None:
        """The next micro-batch's end offset with its incremental state (None: nothing to do
        beyond what ``end`` says; the caller then answers as without incremental snapshots)."""
        before = state_of(start)
        state = before.settled()
        if not self._checked:  # a restart: tables new to source.tables are snapshotted
            state, self._checked = add_new_tables(state, self.captured()), True
        if state.active and reader is not None and queue.caught_up(end):
            state, end = self.windows.read(state, begin, end, queue, reader)
        planned = queue.planned(end)
        ddl = schema_changed(planned)
        self.windows.forget(ddl)
        state = self._signals(_created(state, ddl), planned)
        for table, reason in rewritten(planned):  # the schema changes' rows, read again
            state = resnapshot(state, table, reason)
        self.latest = state
        for db, table, note in state.notices:
            log.debug(
                "incremental snapshot%s: %s", f" of {TableName(db, table)}" if db else "s", note
            )
        if state == before and end == begin:
            return None
        if state.active and reader is not None:
            self.windows.prefetch(state, end, reader)  # the next window, while Spark writes
        return IncrementalOffset(end.to_json(), state)

    def _signals(self, state: IncrementalState, batches: list[pa.RecordBatch]) -> IncrementalState:
        signals = self._table_signals(batches)
        done: tuple[str, ...] = ()
        if self.signal_dir is not None:
            present = {s.id: s for s in read_file_signals(self.signal_dir)}
            done = tuple(i for i in state.signals if i in present)
            signals += [s for i, s in present.items() if i not in done]
            done += tuple(s.id for s in signals if s.id in present and s.id not in done)
        if signals:
            captured = frozenset(self.captured(fresh=True))
            for signal in signals:
                state = apply_signal(state, signal, captured)
        return replace(state, signals=done) if self.signal_dir is not None else state

    def _table_signals(self, batches: list[pa.RecordBatch]) -> list[Signal]:
        if self.signal_table is None or not batches:
            return []
        rows = pa.Table.from_batches(batches)
        db, table = self.signal_table
        mask = pc.and_(
            pc.and_(pc.equal(rows.column("db"), db), pc.equal(rows.column("table"), table)),
            pc.equal(rows.column("op"), OP_CREATE),
        )
        out = []
        for image in rows.filter(mask).column("after").to_pylist():
            row = json.loads(image)
            try:
                out.append(parse_signal(str(row.get("id")), str(row.get("type")), row.get("data")))
            except ConfigError as exc:
                log.warning("signal ignored: %s", exc)
        return out

    # ------------------------------------------------------------ partitions
    def events(
        self,
        end: SparkOffset,
        finish: Offset,
        batches: list[pa.RecordBatch],
        images: Sequence[TypedImages] = (),
    ) -> list[pa.RecordBatch]:
        """The ``k`` event of the window that ``end`` (at ``finish`` in the log) closes and its
        notifications, to follow the micro-batch's log events (``batches``, their ``images``)."""
        state = state_of(end)
        if state.window is None and not state.notices:
            return []
        ts = int(time.time() * 1000)
        out: list[pa.RecordBatch] = []
        database = self.options.source.settings.source_database
        if state.window is not None:  # its read time: the same when the batch is replayed
            read = ts if state.window.read_at_ms is None else state.window.read_at_ms
            out.append(window_chunk_event(state.window, batches, finish, read, images, database))
        if state.notices:
            out.append(notice_batch(state.notices, finish, ts, database))
        return out

    # ------------------------------------------------------------ commit
    def committed(self, end: SparkOffset) -> None:
        """Spark committed ``end``: remove chunk files of earlier windows and the applied
        file-channel signals."""
        state = state_of(end)
        if self.folder.is_dir():
            for path in self.folder.glob("*.arrow"):
                head = path.name.split(".", 1)[0]
                if head.isdigit() and int(head) < state.version - 1:
                    path.unlink(missing_ok=True)
        if self.signal_dir is not None and state.signals:
            remove_file_signals(self.signal_dir, state.signals)

    def figures(self) -> IncrementalFigures | None:
        """What the progress display shows (None when no incremental snapshot is known)."""
        state = self.latest
        if state is None or (state.run is None and not state.queue and not state.paused):
            return None
        run = state.run
        return {
            "table": None if run is None else run.table,
            "rows": 0 if run is None else run.rows,
            "estimate": None if run is None else run.splitter.rows,
            "queued": [r.table for r in state.queue],
            "paused": state.paused,
            "reason": None if run is None else run.request.reason,
            "reasons": {r.table: r.reason for r in state.queue if r.reason},
        }


def state_of(offset: SparkOffset) -> IncrementalState:
    """The incremental snapshots' state an offset carries (a stream offset: none yet)."""
    if isinstance(offset, IncrementalOffset):
        return offset.state
    return IncrementalState()


def _created(state: IncrementalState, ddl: set[str]) -> IncrementalState:
    """``state`` knowing the tables the log created (they need no snapshot when added); ``ddl``:
    the tables with schema events in the micro-batch."""
    if state.known is None:
        return state
    new = sorted(ddl - set(state.known))
    return replace(state, known=state.known + tuple(new)) if new else state
