"""Incremental snapshots in the stream reader: DBLog windows at micro-batch granularity.

DBLog (seed 002) reads a chunk between a low and a high watermark written to the log, drops
every chunk row whose key the log changed between them, and emits the rest at the high
watermark; Debezium (seed 000) does the same for its incremental snapshots, one chunk at a
time. Here the watermarks are log positions, so a user who may only read works too:

1. ``latestOffset(start)``: the micro-batch's start offset is the **low watermark**. Everything
   before it was read from the log, so it was committed before the chunks are read.
2. The chunks of the window are read, ``incremental_chunks`` at a time in parallel threads,
   while ``snapshot.incremental_window`` lasts (each SELECT sees a state at or after the low
   watermark).
3. ``SHOW MASTER STATUS`` after the last read is the **high watermark**: every transaction a read
   saw is in the log before it.
4. The log reader is let run past the high watermark, and the micro-batch ends at the first
   offset after it. The chunks' raw rows are written to ``incremental/<version>.arrow`` *before*
   the offset (with the new state) is handed to Spark.
5. ``partitions(start, end)``: the keys the micro-batch's own log events touched (before and
   after images of the window table) are dropped from the chunks; the rest is kept in
   ``incremental/<version>.rows.arrow`` and sent as one ``k`` event after every log event of
   the batch, so no snapshot row overtakes a newer change. A replayed micro-batch has the same
   log events and the same raw file, so it sends the same rows.

Several chunks in one window keep DBLog's guarantee: each read happens between the same two
watermarks, and a key the window did not touch has the same row at every moment in it. A DDL of
the table inside the window discards the window (its chunks are read again). Signals found in
the batch's log events (the signal table) or in the signal folder apply at the batch's end.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from sparkcdc.core.chunk import KeyColumn, KeyValue
from sparkcdc.core.errors import ConfigError, SparkCDCError
from sparkcdc.core.event import OP_CHUNK, OP_CREATE, OP_DELETE, OP_SCHEMA, OP_UPDATE, snapshot_batch
from sparkcdc.core.offset import BinlogOffset
from sparkcdc.core.schema import TableSchema
from sparkcdc.snapshot.correct import key_text
from sparkcdc.snapshot.incremental import (
    IncrementalState,
    Notice,
    Run,
    add_new_tables,
    apply_signal,
    notice,
)
from sparkcdc.snapshot.signals import parse_signal, read_file_signals, remove_file_signals
from sparkcdc.snapshot.splitter import ChunkSplitter, SplitterSettings
from sparkcdc.spark.delivery import DeliveryQueue
from sparkcdc.spark.notices import notice_batch
from sparkcdc.spark.options import SourceOptions
from sparkcdc.spark.snapshot import load_table, open_dialect

log = logging.getLogger("sparkcdc.incremental")
PASS_TIMEOUT = 60.0  # the log reader must pass the high watermark within this
ALL = 1 << 62


class _Bounded:
    """A dialect whose ``key_after`` counts keys up to the run's maximum only, so the splitter
    ends at the maximum key the table had when its snapshot started."""

    def __init__(self, dialect: Any, upto: KeyValue) -> None:
        self._dialect, self._upto = dialect, upto

    def __getattr__(self, name: str) -> Any:
        return getattr(self._dialect, name)

    def key_after(
        self,
        db: str,
        table: str,
        keys: Sequence[KeyColumn],
        lo: KeyValue | None,
        offset: int,
        upto: KeyValue | None = None,
    ) -> KeyValue | None:
        found: KeyValue | None = self._dialect.key_after(
            db, table, keys, lo, offset, upto=upto or self._upto
        )
        return found


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
        self.signal_table = tuple(signal.split(".", 1)) if signal else None
        self.signal_dir = Path(options.signal_dir) if options.signal_dir else None
        self.parallel = options.source.snapshot.incremental_chunks
        self.settings = SplitterSettings.of(options.source.snapshot)
        self.latest: IncrementalState | None = None
        self.window_seconds = options.source.snapshot.incremental_window
        self.window_hook: Callable[[], None] | None = None  # tests: runs between reads and HW
        self._dialect: Any = None
        self._pool: ThreadPoolExecutor | None = None

    def captured(self, fresh: bool = False) -> list[str]:
        """The tables captured now (asked once per process, or again when ``fresh``)."""
        if self._captured is None or fresh:
            self._captured = sorted(self._captured_of())
        return self._captured

    @property
    def dialect(self) -> Any:
        if self._dialect is None:
            self._dialect = open_dialect(self.options)
        return self._dialect

    def close(self) -> None:
        if self._dialect is not None:
            self._dialect.close()
        if self._pool is not None:
            self._pool.shutdown(wait=False)
        self._dialect = self._pool = None

    # ------------------------------------------------------------ latestOffset
    def plan(
        self, start: dict, begin: BinlogOffset, end: BinlogOffset, queue: DeliveryQueue, reader: Any
    ) -> dict | None:
        """The next micro-batch's end offset with its incremental state (None: nothing to do
        beyond what ``end`` says; the caller then answers as without incremental snapshots)."""
        before = IncrementalState.from_offset(start)
        state = before.settled()
        if not self._checked:  # a restart: tables new to source.tables are snapshotted
            state, self._checked = add_new_tables(state, self.captured()), True
        if state.active and queue.caught_up(end) and hasattr(reader, "passed"):
            state, end = self._window(state, begin, end, queue, reader)
        planned = queue.planned(end)
        state = self._signals(_created(state, planned), planned)
        self.latest = state
        for db, table, note in state.notices:
            log.debug("incremental snapshot%s: %s", f" of {db}.{table}" if db else "s", note)
        if state == before and end == begin:
            return None
        return {**end.to_json(), "incremental": state.to_json()}

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

    def _table_signals(self, batches: list[pa.RecordBatch]) -> list[Any]:
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

    def _window(
        self,
        state: IncrementalState,
        begin: BinlogOffset,
        end: BinlogOffset,
        queue: DeliveryQueue,
        reader: Any,
    ) -> tuple[IncrementalState, BinlogOffset]:
        notes = list(state.notices)
        run, waiting = state.run, state.queue
        while run is None and waiting:
            run, opened = self._start(waiting[0])
            waiting = waiting[1:]
            notes.extend(opened)
        state = replace(state, run=run, queue=waiting, notices=tuple(notes))
        if run is not None and self.options.snapshot_delivery != "store":
            reason = "incremental snapshots need the option snapshot_delivery=store"
            state = replace(
                state, notices=(*state.notices, notice(run.table, "skipped", reason=reason))
            )
            return replace(state, run=None), end
        if run is None or run.max_key is None:
            return self._finish(state), end
        schema = load_table(self.options, run.table)
        keys = [KeyColumn.from_json(k) for k in run.keys]
        bounded: Any = _Bounded(self.dialect, run.max_key)
        splitter = ChunkSplitter(bounded, run.table, keys, self.settings, run.splitter)
        chunks: list[pa.Table] = []
        started = time.monotonic()
        while True:  # one round at least, more while the window's time lasts
            chunks.extend(self._read(schema, keys, splitter.take(self.parallel), run))
            if splitter.done or time.monotonic() - started >= self.window_seconds:
                break
        if self.window_hook is not None:
            self.window_hook()
        high = self.dialect.watermark()
        finish = self._pass(begin, high, queue, reader)
        if finish is None or self._altered(queue.planned(finish), schema):
            return state, end  # the window is read again in a later micro-batch
        rows = pa.concat_tables(chunks) if chunks else None
        n = 0 if rows is None else rows.num_rows
        version = state.version
        path = self.folder / f"{version}.arrow"
        _write(path, rows if rows is not None else _empty(schema))
        window = {
            "table": run.table,
            "path": str(path),
            "schema_id": schema.schema_id(),
            "row_key": list(schema.key or [k.name for k in keys]),
        }
        run = replace(
            run, splitter=splitter.state, rows=run.rows + n, chunks=run.chunks + len(chunks)
        )
        note = notice(
            run.table, "chunk", rows=run.rows, chunks=run.chunks, max_key=list(run.max_key or [])
        )
        state = replace(
            state, run=run, version=version + 1, window=window, notices=(*state.notices, note)
        )
        return (self._finish(state) if splitter.done else state), finish

    def _finish(self, state: IncrementalState) -> IncrementalState:
        """The run is complete: its notification, and the completion when nothing waits."""
        notes: list[Notice] = list(state.notices)
        if state.run is not None:
            notes.append(notice(state.run.table, "table-done", rows=state.run.rows))
        if not state.queue:
            notes.append(("", "", {"type": "completed"}))
        return replace(state, run=None, notices=tuple(notes))

    def _start(self, request: Any) -> tuple[Run | None, list[Notice]]:
        """A new run of ``request``'s table (None with a ``skipped`` notice if it cannot)."""
        table = request.table
        try:
            schema = load_table(self.options, table)
            names = self.options.source.snapshot.chunk_key_columns.get(table) or schema.key
            keys = self.dialect.key_columns(schema.db, schema.table, names)
            if request.where:
                why = self.dialect.check_condition(schema.db, schema.table, request.where)
                if why is not None:
                    reason = f"the condition {request.where!r} does not work: {why}"
                    return None, [notice(table, "skipped", reason=reason)]
            found = self.dialect.key_range(schema.db, schema.table, keys)
        except SparkCDCError as exc:
            return None, [notice(table, "skipped", reason=str(exc))]
        top = None if found is None else tuple(found[1])
        bounded: Any = self.dialect if top is None else _Bounded(self.dialect, top)
        splitter = ChunkSplitter(bounded, table, keys, self.settings)
        run = Run(request, tuple(k.to_json() for k in keys), top, splitter.state)
        start = notice(
            table,
            "started",
            where=request.where,
            max_key=None if top is None else list(top),
            estimate=splitter.state.get("rows"),
        )
        return run, [start]

    def _read(self, schema: TableSchema, keys: list[KeyColumn], splits: list, run: Run) -> list:
        def one(split: Any) -> pa.Table:
            return self.dialect.read_chunk(
                schema, keys, split.lo, split.hi, True, run.max_key, run.request.where
            )

        if len(splits) == 1:
            return [one(splits[0])]
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self.parallel, thread_name_prefix="sparkcdc-chunk")
        return list(self._pool.map(one, splits))

    def _pass(
        self, begin: BinlogOffset, high: BinlogOffset, queue: DeliveryQueue, reader: Any
    ) -> BinlogOffset | None:
        """The end of everything the log reader put once it passed ``high`` (None: it did not
        within PASS_TIMEOUT; its error, if it stopped, is raised)."""
        deadline = time.monotonic() + PASS_TIMEOUT
        while not reader.passed(high):
            error = getattr(reader, "error", None)
            if error is not None:
                raise error
            if time.monotonic() > deadline:
                log.warning("the log reader did not reach the high watermark %s in time", high)
                return None
            time.sleep(0.002)
        return queue.plan(begin, ALL)

    def _altered(self, batches: list[pa.RecordBatch], schema: TableSchema) -> bool:
        """Whether the window holds a schema change of the table read (an announcement of the
        schema at the reader's start is none)."""
        for batch in batches:
            mask = pc.and_(
                pc.equal(batch.column("op"), OP_SCHEMA),
                pc.and_(
                    pc.equal(batch.column("db"), schema.db),
                    pc.equal(batch.column("table"), schema.table),
                ),
            )
            for after in batch.filter(mask).column("after").to_pylist():
                if json.loads(after or "{}").get("kind") != "announce":
                    return True
        return False

    # ------------------------------------------------------------ partitions
    def events(self, end: dict, batches: list[pa.RecordBatch]) -> list[pa.RecordBatch]:
        """The ``k`` event of the window that ``end`` closes and its notifications, to follow
        the micro-batch's log events (``batches``)."""
        state = IncrementalState.from_offset(end)
        if state.window is None and not state.notices:
            return []
        finish = BinlogOffset.from_json(end)
        ts = int(time.time() * 1000)
        out: list[pa.RecordBatch] = []
        if state.window is not None:
            out.append(self._chunk_event(state.window, batches, finish, ts))
        if state.notices:
            out.append(notice_batch(list(state.notices), finish.file, finish.pos, finish.gtid, ts))
        return out

    def _chunk_event(
        self, window: dict, batches: list[pa.RecordBatch], finish: BinlogOffset, ts: int
    ) -> pa.RecordBatch:
        raw = Path(window["path"])
        with pa.memory_map(str(raw)) as source:
            rows = pa.ipc.open_file(source).read_all()
        touched = _touched(batches, window["table"], window["row_key"])
        if touched:
            rows = rows.filter(pc.invert(pc.is_in(rows.column("key"), pa.array(touched))))
        kept = raw.with_name(raw.name.replace(".arrow", ".rows.arrow"))
        _write(kept, rows)
        db, _, table = window["table"].partition(".")
        ref = json.dumps({"path": str(kept), "rows": rows.num_rows, "incremental": True})
        return snapshot_batch(
            pa.nulls(1, pa.string()),
            pa.array([ref], pa.string()),
            db,
            table,
            window["schema_id"],
            server_id=0,
            file=finish.file,
            pos=finish.pos,
            gtid=finish.gtid,
            ts_ms=ts,
            op=OP_CHUNK,
        )

    # ------------------------------------------------------------ commit
    def committed(self, end: dict) -> None:
        """Spark committed ``end``: remove chunk files of earlier windows and the applied
        file-channel signals."""
        state = IncrementalState.from_offset(end)
        if self.folder.is_dir():
            for path in self.folder.glob("*.arrow"):
                head = path.name.split(".", 1)[0]
                if head.isdigit() and int(head) < state.version - 1:
                    path.unlink(missing_ok=True)
        if self.signal_dir is not None and state.signals:
            remove_file_signals(self.signal_dir, state.signals)

    def figures(self) -> dict[str, Any] | None:
        """What the progress display shows (None when no incremental snapshot is known)."""
        state = self.latest
        if state is None or (state.run is None and not state.queue and not state.paused):
            return None
        run = state.run
        return {
            "table": None if run is None else run.table,
            "rows": 0 if run is None else run.rows,
            "estimate": None if run is None else run.splitter.get("rows"),
            "queued": [r.table for r in state.queue],
            "paused": state.paused,
        }


def _created(state: IncrementalState, batches: list[pa.RecordBatch]) -> IncrementalState:
    """``state`` knowing the tables the log created (they need no snapshot when added)."""
    if state.known is None:
        return state
    names: set[str] = set()
    for batch in batches:
        picked = batch.filter(pc.equal(batch.column("op"), OP_SCHEMA))
        dbs, tables = picked.column("db").to_pylist(), picked.column("table").to_pylist()
        names.update(f"{db}.{table}" for db, table in zip(dbs, tables, strict=True))
    new = sorted(names - set(state.known))
    return replace(state, known=state.known + tuple(new)) if new else state


def _touched(batches: list[pa.RecordBatch], name: str, row_key: list[str]) -> list[str]:
    """The key texts of ``name``'s rows the log events changed (old and new keys)."""
    db, _, table = name.partition(".")
    out: set[str] = set()
    for batch in batches:
        mask = pc.and_(pc.equal(batch.column("db"), db), pc.equal(batch.column("table"), table))
        changes = pa.array([OP_CREATE, OP_UPDATE, OP_DELETE])
        mask = pc.and_(mask, pc.is_in(batch.column("op"), changes))
        picked = batch.filter(mask)
        for image_col in ("before", "after"):
            for image in picked.column(image_col).to_pylist():
                if image is not None:
                    row = json.loads(image)
                    out.add(key_text([row.get(c) for c in row_key]))
    return sorted(out)


def _write(path: Path, rows: pa.Table) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with pa.OSFile(str(tmp), "wb") as sink, pa.ipc.new_file(sink, rows.schema) as writer:
        writer.write_table(rows)
    os.replace(tmp, path)


def _empty(schema: TableSchema) -> pa.Table:
    from sparkcdc.sources.mysql.chunks import typed_chunk_schema

    return typed_chunk_schema(schema).empty_table()
