"""One window of an incremental snapshot: chunks read between two log positions (DBLog, seed 002).

:class:`WindowReader` does steps 2 to 4 of :mod:`sparkcdc.spark.incremental.driver` for the stream
reader's ``latestOffset``: it starts a table's run (chunk key, maximum key, splitter), waits
until the low watermark is visible to reads (the dialect's ``low_watermark`` has passed it: a
transaction reaches the log before the storage engine makes it visible), reads the window's chunks
``incremental_chunks`` at a time in parallel threads for as long as ``incremental_window``
lasts, takes the high watermark, lets the log reader pass it and writes the raw chunk file.
Step 5, the chunk as the micro-batch's ``k`` event, is :mod:`.window_events`.

The splitter is Flink CDC's (:mod:`sparkcdc.snapshot.splitter`, seed 003) bounded by the
maximum key the table had when its run started, as Debezium bounds its incremental snapshots
(seed 000): rows inserted beyond it come from the log.

A window's rows join the replica in the schema the stream has at the window's end. Where the
log reader describes a table otherwise than the catalog does now (PostgreSQL: a DDL reaches the
log only with the table's next change), the source reads the chunks in the reader's schema
(:meth:`~sparkcdc.sources.port.LogReader.table_view`,
:meth:`~sparkcdc.sources.port.Source.view_chunks`), so that the DDL's effect, judged when the log
shows it, applies to them as to rows read before it; elsewhere they are read in the catalog's
schema, which a window holding a DDL of its table reads again.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pyarrow as pa

from sparkcdc.core.errors import SparkCDCError
from sparkcdc.core.offset import Offset
from sparkcdc.core.offset_events import Notice
from sparkcdc.core.schema import TableSchema
from sparkcdc.snapshot.captured import captured_rows
from sparkcdc.snapshot.correct import typed_chunk_schema
from sparkcdc.snapshot.dialect import SnapshotDialect
from sparkcdc.snapshot.incremental import IncrementalState, Request, Run, Window, notice
from sparkcdc.snapshot.splitter import ChunkSplitter, SplitterSettings
from sparkcdc.sources.port import LogReader, TableView
from sparkcdc.spark.incremental.batch_mark import BatchMark
from sparkcdc.spark.incremental.read_ahead import ChunkReads, Reads
from sparkcdc.spark.incremental.window_events import altered, write_arrow
from sparkcdc.spark.snapshot.planner import load_table, open_dialect
from sparkcdc.spark.stream.delivery import DeliveryQueue
from sparkcdc.spark.stream.options import SourceOptions

log = logging.getLogger("sparkcdc.incremental")
PASS_TIMEOUT = 60.0  # the log reader must pass the high watermark within this
ALL = 1 << 62


class WindowReader:
    """Reads the windows of one stream reader (see the module docstring)."""

    def __init__(self, options: SourceOptions, folder: Path) -> None:
        self.options = options
        self.folder = folder
        self.parallel = options.source.snapshot.incremental_chunks
        self.settings = SplitterSettings.of(options.source.snapshot)
        self.seconds = options.source.snapshot.incremental_window
        self.hook: Callable[[], None] | None = None  # tests: runs between the reads and HW
        self._dialect: SnapshotDialect | None = None
        self._ahead: ChunkReads | None = None  # the next window's reads, started early
        self._schemas: dict[str, TableSchema] = {}  # until the log shows a DDL of the table
        self.mark = BatchMark(options.batch_mark) if options.batch_mark else None

    @property
    def dialect(self) -> SnapshotDialect:
        if self._dialect is None:
            self._dialect = open_dialect(self.options)
        return self._dialect

    def close(self) -> None:
        if self._ahead is not None:
            self._ahead.cancel()
        if self._dialect is not None:
            self._dialect.close()
        self._dialect = self._ahead = None

    def read(
        self,
        state: IncrementalState,
        begin: Offset,
        end: Offset,
        queue: DeliveryQueue,
        reader: LogReader,
    ) -> tuple[IncrementalState, Offset]:
        """The window of the micro-batch from ``begin`` (module docstring): the state after it
        and the batch's end (``end`` when no window was read)."""
        state = self._running(state, reader)
        run = state.run
        if run is not None and self.options.snapshot_delivery != "store":
            reason = "incremental snapshots need the option snapshot_delivery=store"
            state = replace(
                state, notices=(*state.notices, notice(run.table, "skipped", reason=reason))
            )
            return replace(state, run=None), end
        if run is None or run.max_key is None:
            return finish_run(state), end
        view = reader.table_view(run.table)  # the reader's own failure is the stream's
        try:
            schema = self._schema(run.table) if view is None else view.schema
        except SparkCDCError as exc:  # dropped, or its key is gone: the run cannot go on
            stop = notice(run.table, "stopped", rows=run.rows, reason=str(exc))
            return replace(state, run=None, notices=(*state.notices, stop)), end
        reads = self._take_prefetched(begin, run, view)
        if reads is None:  # read while the batch waits: one round (the run's first window)
            reads = self._reads(run, schema, view, begin, one_round=True).run()
        if not reads.visible:
            log.warning("the server did not make %s visible in time; window skipped", begin)
            return state, end  # the window is tried again in a later micro-batch
        if self.hook is not None:
            self.hook()
        finish = self._pass(begin, self.dialect.watermark(), queue, reader)
        if finish is None or altered(queue.planned(finish), schema):
            self._schemas.pop(run.table, None)
            return state, end  # the window is read again in a later micro-batch
        state = self._delivered(state, run, schema, reads)
        return (finish_run(state) if reads.done else state), finish

    def _running(self, state: IncrementalState, reader: LogReader) -> IncrementalState:
        """``state`` with a run: the current one, else the first queued table that can start."""
        notes = list(state.notices)
        run, waiting = state.run, state.queue
        while run is None and waiting:
            run, opened = self._start(waiting[0], reader)
            waiting = waiting[1:]
            notes.extend(opened)
        return replace(state, run=run, queue=waiting, notices=tuple(notes))

    def _delivered(
        self, state: IncrementalState, run: Run, schema: TableSchema, reads: Reads
    ) -> IncrementalState:
        """The window's chunks written to its file, and the run moved past them."""
        chunks = reads.chunks
        rows = pa.concat_tables(chunks) if chunks else _empty(schema)
        capture = self.options.source.capture
        rows = captured_rows(capture, schema, rows)  # as the log reader's items are
        path = self.folder / f"{state.version}.arrow"
        write_arrow(path, rows)
        row_key = tuple(schema.key or [k.name for k in run.keys])
        # the schema goes along: the sink keeps it if the stream never announced it
        captured = capture.schema(schema)
        window = Window(run.table, str(path), captured.schema_id(), captured, row_key,
                        int(time.time() * 1000))  # fmt: skip
        run = replace(run, splitter=reads.splitter, rows=run.rows + rows.num_rows,
                      chunks=run.chunks + len(chunks))  # fmt: skip
        note = notice(run.table, "chunk", rows=run.rows, chunks=run.chunks,
                      last_key=_last_key(chunks), max_key=list(run.max_key or []))  # fmt: skip
        return replace(state, run=run, version=state.version + 1, window=window,
                       notices=(*state.notices, note))  # fmt: skip

    def prefetch(self, state: IncrementalState, begin: Offset, reader: LogReader) -> None:
        """Start reading the next window (the one starting at ``begin``, the micro-batch end
        just handed to Spark) while Spark runs the batch; see :mod:`.read_ahead`."""
        if self._ahead is not None:
            self._ahead.cancel()
            self._ahead = None
        run = state.run
        if state.paused or run is None or run.max_key is None:
            return
        if self.options.snapshot_delivery != "store":
            return
        try:
            view = reader.table_view(run.table)
            schema = self._schema(run.table) if view is None else view.schema
        except SparkCDCError:
            return  # the foreground read says what is wrong
        self._ahead = self._reads(run, schema, view, begin).start(self.mark)

    def _schema(self, name: str) -> TableSchema:
        """The catalog's schema of the table ``name``, loaded once and kept until
        :meth:`forget` (where the log reader has no view of the table: the module
        docstring)."""
        if name not in self._schemas:
            self._schemas[name] = load_table(self.options, name)
        return self._schemas[name]

    def forget(self, tables: set[str]) -> None:
        """Drop the kept schemas of ``tables`` (the log holds a DDL or announcement of them):
        the next window loads them again, and finds a dropped table gone."""
        for name in tables:
            self._schemas.pop(name, None)

    def _take_prefetched(self, begin: Offset, run: Run, view: TableView | None) -> Reads | None:
        ahead, self._ahead = self._ahead, None
        if ahead is None:
            return None
        if not ahead.matches(begin, run) or ahead.view != view:
            ahead.cancel()
            log.debug("the chunks read ahead were for another window; reading again")
            return None
        reads = ahead.collect()
        log.debug("window at %s: %s", begin, "read ahead" if reads else "read ahead failed")
        return reads

    def _reads(
        self,
        run: Run,
        schema: TableSchema,
        view: TableView | None,
        begin: Offset,
        one_round: bool = False,
    ) -> ChunkReads:
        return ChunkReads(
            lambda: self._open(view),
            run,
            schema,
            begin,
            self.settings,
            self.parallel,
            0.0 if one_round else self.seconds,
            view,
        )

    def _open(self, view: TableView | None) -> SnapshotDialect:
        """A new chunk dialect, reading in ``view`` when given."""
        return open_dialect(self.options) if view is None else (
            self.options.open_source().view_chunks(view))  # fmt: skip

    def _start(self, request: Request, reader: LogReader) -> tuple[Run | None, list[Notice]]:
        """A new run of ``request``'s table (None with a ``skipped`` notice if it cannot)."""
        table = request.table
        self._schemas.pop(table, None)  # a run starts from the table as it is now
        view = reader.table_view(table)  # the reader's own failure is the stream's
        try:
            schema = self._schema(table) if view is None else view.schema
            names = self.options.source.snapshot.chunk_key_columns.get(table) or schema.key
            with contextlib.ExitStack() as opened:
                dialect = self.dialect if view is None else opened.enter_context(self._open(view))
                keys = dialect.key_columns(schema.db, schema.table, names)
                if request.where:
                    why = dialect.check_condition(schema.db, schema.table, request.where)
                    if why is not None:
                        reason = f"the condition {request.where!r} does not work: {why}"
                        return None, [notice(table, "skipped", reason=reason)]
                found = dialect.key_range(schema.db, schema.table, keys)
                top = None if found is None else tuple(found[1])
                splitter = ChunkSplitter(dialect, table, keys, self.settings, upto=top)
        except SparkCDCError as exc:
            return None, [notice(table, "skipped", reason=str(exc))]
        run = Run(request, tuple(keys), top, splitter.state)
        start = notice(
            table,
            "started",
            where=request.where,
            max_key=None if top is None else list(top),
            estimate=splitter.state.rows,
        )
        return run, [start]

    def _pass(
        self, begin: Offset, high: Offset, queue: DeliveryQueue, reader: LogReader
    ) -> Offset | None:
        """The end of everything the log reader put once it passed ``high`` (None: it did not
        within PASS_TIMEOUT; its error, if it stopped, is raised)."""
        deadline = time.monotonic() + PASS_TIMEOUT
        while not reader.passed(high):
            if reader.error is not None:
                raise reader.error
            if time.monotonic() > deadline:
                log.warning("the log reader did not reach the high watermark %s in time", high)
                return None
            time.sleep(0.002)
        return queue.plan(begin, ALL)


def finish_run(state: IncrementalState) -> IncrementalState:
    """The run is complete: its notification, and the completion when nothing waits."""
    notes: list[Notice] = list(state.notices)
    if state.run is not None:
        notes.append(notice(state.run.table, "table-done", rows=state.run.rows))
    if not state.queue:
        notes.append(("", "", {"type": "completed"}))
    return replace(state, run=None, notices=tuple(notes))


def _last_key(chunks: list[pa.Table]) -> list[Any] | None:
    """The largest key read (chunks come in key order), as a list of values."""
    for chunk in reversed(chunks):
        if chunk.num_rows:
            return list(json.loads(chunk.column("key")[-1].as_py()))
    return None


def _empty(schema: TableSchema) -> pa.Table:
    return typed_chunk_schema(schema).empty_table()
