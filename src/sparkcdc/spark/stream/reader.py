"""The stream reader of the ``<type>-cdc`` sources: a PySpark Python Data Source over the port.

Design (PySpark's Python Data Source API, ``pyspark/sql/datasource.py``): Spark runs the stream
reader in one long-lived driver-side Python process and calls it in this order::

    initialOffset()                 new stream only: ``startup`` as an offset, resolved once
    prepareForTriggerAvailableNow() trigger(availableNow=True) only: remember the log end now
    latestOffset(start, limit)      end of the next store batches up to max_bytes, or start
    partitions(start, end)          the change events of (start, end] as Arrow IPC bytes
    commit(end)                     Spark committed ``end``: the source's ``ack(end)``
    stop()

Canal's ack: the store frees a batch as soon as its events are inside the partitions Spark
planned (the partitions carry them from then on), so the log reader refills the store while
Spark runs the micro-batch. Nothing is ever re-read from the store: a micro-batch that fails is
replayed after the restart by a new log reader opened at the checkpointed offset. The source
itself is acknowledged only in ``commit``: a PostgreSQL slot may then forget the log before it.

The log reader thread and its :class:`~sparkcdc.store.ring.EventStore` live in that process and
start lazily at the first ``start`` Spark hands over: the initial offset for a new stream, the
checkpointed offset on a restart (a ``skip > 0`` start is a split transaction). When Spark
replays an uncommitted micro-batch after a crash,
:class:`~sparkcdc.spark.stream.delivery.DeliveryQueue` rebuilds exactly (start, end] from the
reopened log. Every offset Spark hands over is read by :func:`sparkcdc.spark.offsets.parse`
(which migrates those older checkpoints hold) and every offset returned is one of its values'
JSON: a stream or incremental offset wraps the source's
:meth:`~sparkcdc.core.offset.Offset.to_json`, a snapshot offset holds the snapshot's progress.
"""

from __future__ import annotations

import itertools
import os
import time
from collections.abc import Iterator, Sequence
from functools import partial
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxBytes,
    SupportsTriggerAvailableNow,
)

from sparkcdc.core.errors import SourceError, SparkCDCError, as_public
from sparkcdc.core.images import TypedImages
from sparkcdc.core.logs import setup_child_logging
from sparkcdc.core.offset import Offset, OffsetJSON
from sparkcdc.sources.port import ChangeFilter, Source
from sparkcdc.sources.readiness import captured_tables
from sparkcdc.spark.incremental.driver import IncrementalSnapshots
from sparkcdc.spark.offsets import SnapshotOffset, StreamOffset, parse
from sparkcdc.spark.snapshot.phase import SnapshotPhase
from sparkcdc.spark.snapshot.planner import SnapshotPlanner, SplitTask
from sparkcdc.spark.snapshot.split_task import read_split_task
from sparkcdc.spark.stream.delivery import DeliveryQueue
from sparkcdc.spark.stream.feed import IDLE_SECONDS, LogFeed
from sparkcdc.spark.stream.first_offset import FirstOffset
from sparkcdc.spark.stream.options import SourceOptions
from sparkcdc.spark.stream.partitions import EnvelopePartition, to_partitions
from sparkcdc.spark.stream.status import Status, StatusWriter, peak_rss_bytes
from sparkcdc.spark.stream.table_stream import TableStream
from sparkcdc.store.batch_files import BatchFiles

# available-now: a micro-batch of changes to FILL_MIN_TABLES tables or more waits for the log
# reader to fill it, as each batch pays a commit per table it touches (bench section 9): at most
# FILL_SECONDS, or FILL_SECONDS_PER_TABLE for each table it holds so far when that is longer
# (about what the sink spends on a table: a batch cut short would cost the tables it touches
# again); a batch of fewer tables starts at once, its reading overlapping the reader's
FILL_SECONDS = 3.0
FILL_SECONDS_PER_TABLE = 0.015
FILL_MIN_TABLES = 10


class ChangeStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """The stream reader; see the module docstring for the call order and the offsets."""

    def __init__(self, options: SourceOptions, table: TableStream | None = None) -> None:
        self.options = options
        self._source: Source | None = None
        self._feed = LogFeed(options, lambda: self.source, self._change_filter)
        self._target: Offset | None = None
        self._status_position: str | None = None
        self._status_moved = 0.0
        self._rows_seen: tuple[int, int | None] = (0, None)  # rows read, when they last grew
        self._inflight: dict[Offset, tuple[int, int | None]] = {}
        self._committed: Offset | None = None
        self._committed_ts: int | None = None
        self._committed_rows = 0
        self._store_peak = 0
        self._status: StatusWriter | None = None
        self._snapshot: SnapshotPhase | None = None
        self._handoff_checked = False
        self._first = FirstOffset(options.source.startup, options.start_file)
        self._incremental: IncrementalSnapshots | None = None
        self._files = None if options.log_dir is None else BatchFiles(options.log_dir)
        self.table_stream = table  # the typed stream of one table (:mod:`.table_stream`)

    def __getstate__(self) -> dict[str, Any]:
        # Spark pickles the reader to ship ``read`` to executors: only the options travel, and
        # the columns of a typed table stream
        return {"options": self.options, "table": self.table_stream}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["options"], state["table"])  # type: ignore[misc]

    @property
    def source(self) -> Source:
        if self._source is None:
            self._source = self.options.open_source()
        return self._source

    @property
    def snapshot(self) -> SnapshotPhase:
        if self._snapshot is None:
            self._snapshot = SnapshotPhase(self.options)
        return self._snapshot

    @property
    def incremental(self) -> IncrementalSnapshots:
        if self._incremental is None:
            self._incremental = IncrementalSnapshots(
                self.options,
                SnapshotPlanner(self.options).root,
                lambda: captured_tables(self.source),
            )
        return self._incremental

    @property
    def snapshots(self) -> bool:
        return self.options.source.takes_snapshot

    def _stopping(self) -> bool:
        """Whether the run is stopping (its stop file exists: ``sparkcdc run`` writes it on
        SIGTERM/SIGINT), so no micro-batch may start after the one in flight."""
        stop = self.options.stop_file
        return stop is not None and os.path.exists(stop)

    # ------------------------------------------------------------ Spark calls
    def initialOffset(self) -> OffsetJSON:
        _source_logging()
        return self._first.get(self._resolve_startup)  # asked for more than once: kept

    def _resolve_startup(self) -> OffsetJSON:
        if self.snapshots:
            return self.snapshot.initial(captured_tables(self.source)).to_json()
        return StreamOffset(
            self.source.startup_offset(self.options.source.startup).to_json()
        ).to_json()

    def prepareForTriggerAvailableNow(self) -> None:
        with self.source.catalog() as catalog:
            self._target = catalog.log_end()

    def getDefaultReadLimit(self) -> ReadLimit:
        return ReadAllAvailable()

    def latestOffset(self, start: OffsetJSON, limit: ReadLimit) -> OffsetJSON:
        """The end of the next micro-batch; what fails is one sentence (:func:`as_public`)."""
        try:
            return self._latest_offset(start, limit)
        except SparkCDCError as exc:
            public = as_public(exc)
            if public is exc:
                raise
            raise public from None

    def _latest_offset(self, start: OffsetJSON, limit: ReadLimit) -> OffsetJSON:
        _source_logging()
        if self._stopping():
            return start  # the run stops after the batch in flight: no new batch
        at = parse(start)
        if isinstance(at, SnapshotOffset):
            self._ensure_status()
            return self.snapshot.next(at).to_json()
        begin = self.options.offset(at.position)
        if self.snapshots and not self._handoff_checked:
            self._handoff_checked = True
            self._target = self.snapshot.target(begin, self._target)
        queue = self._queue_at(begin)
        # Spark plans the next micro-batch only after the previous one is committed; acking
        # here frees the store before Spark's own commit(end) call, which comes later
        queue.commit(begin)
        self._raise_reader_error()
        cap = self.options.max_bytes
        if isinstance(limit, ReadMaxBytes):
            cap = max(1, min(cap, int(limit.max_bytes)))
        while True:
            if self._target is not None and self._feed.reached(begin, self._target):
                if self._status is not None:
                    self._status.flush()  # the final state: Spark may not call stop()
                return start
            try:
                end = queue.plan(begin, cap, wait=0.05 if self._target is None else 0.5)
            except SparkCDCError:  # the reader's error, from the store: into the status file
                self._raise_reader_error()
                raise
            self._raise_reader_error()
            if (
                self._target is not None  # available-now: fewer batches over many tables
                and end > begin
                and queue.tables_in(end, FILL_MIN_TABLES) >= FILL_MIN_TABLES
            ):
                end = queue.fill(begin, cap, self._target, FILL_SECONDS, FILL_SECONDS_PER_TABLE,
                                 partial(self._feed.reading, self._target))  # fmt: skip
            planned = self.incremental.plan(at, begin, end, queue, self._feed.reader)
            if planned is not None:
                return planned.to_json()
            if end > begin:
                return StreamOffset(end.to_json()).to_json()
            if self._target is None or self._stopping():
                return start
            # available-now ends at the first "no new data": wait until the reader catches up

    def partitions(self, start: OffsetJSON, end: OffsetJSON) -> Sequence[InputPartition]:
        table = self.table_stream
        first, last = parse(start), parse(end)
        if isinstance(last, SnapshotOffset):
            return self.snapshot.partitions(last)
        if isinstance(first, SnapshotOffset):
            return []  # the hand-off: from the snapshot to the log, no events of its own
        begin, finish = self.options.offset(first.position), self.options.offset(last.position)
        queue = self._queue_at(begin)
        batches: list[pa.RecordBatch] = []
        images: list[TypedImages] = []
        if finish >= begin:  # at begin: the schema announcement, if it is still queued
            taken = queue.take(finish, self._raise_reader_error)
            self._inflight[finish] = (taken.rows, taken.last_event_ts_ms)
            batches, images = taken.batches, taken.images
        # an incremental snapshot's chunk and notifications follow the batch's log events
        batches = batches + self.incremental.events(last, finish, batches, images)
        if finish <= begin and not batches:
            return []
        if self._files is not None and batches:
            batches = [self._files.write(finish, batches, images)]
        elif table is not None:
            batches = [table.rows(b, images) for b in batches]
        elif images:
            raise SourceError(
                "typed row images reached a stream without the option log_dir; they travel "
                "only in its batch files"
            )
        parts = to_partitions(batches)
        # The partitions carry the events from here on, and a failed micro-batch is replayed by
        # a new reader from the checkpointed offset, never from this store: free it now, so the
        # log reader fills it while Spark runs the batch.
        queue.commit(finish)
        return parts

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if isinstance(partition, SplitTask):
            table = self.table_stream
            head = pa.ipc.open_stream(partition.head) if partition.head else ()
            for batch in itertools.chain(head, read_split_task(self.options, partition)):
                yield batch if table is None else table.rows(batch)
            return
        assert isinstance(partition, EnvelopePartition)
        yield from pa.ipc.open_stream(partition.payload)

    def commit(self, end: OffsetJSON) -> None:
        last = parse(end)
        if isinstance(last, SnapshotOffset):
            self.snapshot.committed(last)
            return
        finish = self.options.offset(last.position)
        if self._feed.queue is not None:
            self._feed.queue.commit(finish)
        if self._feed.reader is not None:
            self._feed.reader.ack(finish)  # the batch up to ``finish`` is in the sink for good
        if self._incremental is not None:
            self._incremental.committed(last)
        if self._files is not None:
            self._files.release(finish)
        for offset in [o for o in self._inflight if o <= finish]:
            rows, ts = self._inflight.pop(offset)
            self._committed_rows += rows
            if ts is not None and (self._committed_ts is None or ts > self._committed_ts):
                self._committed_ts = ts
        self._committed = finish

    def stop(self) -> None:
        self._feed.stop()
        if self._snapshot is not None:
            self._snapshot.close()
        if self._incremental is not None:
            self._incremental.close()
        if self._status is not None:
            self._status.stop()

    # ------------------------------------------------------------ the log reader
    def _queue_at(self, start: Offset) -> DeliveryQueue:
        queue, opened = self._feed.at(start)
        if opened:
            self._inflight.clear()
            self._ensure_status()
        return queue

    def _change_filter(self, start: Offset) -> ChangeFilter | None:
        """The snapshot's hand-off filter while ``start`` lies inside the hand-off range."""
        return self.snapshot.change_filter(start) if self.snapshots else None

    def _ensure_status(self) -> None:
        o = self.options
        if self._status is None and o.status_file:
            self._status = StatusWriter(o.status_file, self.status)
            self._status.start()

    def _raise_reader_error(self) -> None:
        error = self._feed.error
        if error is not None:
            if self._status is not None:
                self._status.flush()
            if isinstance(error, SparkCDCError):
                raise as_public(error) from None
            raise error

    # ------------------------------------------------------------ status file
    def status(self) -> Status:
        """What the status file holds (see :mod:`sparkcdc.spark.stream.status`)."""
        out: Status = {
            "committed_offset": None if self._committed is None else str(self._committed),
            "committed_ts_ms": self._committed_ts,
            "committed_rows": self._committed_rows,
            "peak_rss_bytes": peak_rss_bytes(),
        }
        if self._snapshot is not None and self._snapshot.progress:
            out["snapshot"] = self._snapshot.figures()
            out["snapshot_running"] = self._snapshot.running
        if self._incremental is not None:
            figures = self._incremental.figures()
            if figures is not None:
                out["incremental"] = figures
        reader, store, queue = self._feed.reader, self._feed.store, self._feed.queue
        if reader is not None:
            stats = reader.stats()
            out["position"] = None if stats.position is None else str(stats.position)
            out.update({"events": stats.events, "rows": stats.rows, "connected": stats.connected,
                        "last_event_ts_ms": stats.last_event_ts_ms,
                        "reconnects": stats.reconnects, "heartbeats": stats.heartbeats,
                        "last_row_read_ms": self._rows_moved(stats.rows)})  # fmt: skip
            if reader.error is not None:
                out["error"] = {"type": type(reader.error).__name__, "message": str(reader.error)}
        if store is not None:
            s = store.stats()
            self._store_peak = max(self._store_peak, s.used_bytes)
            out["store_pending_bytes"] = s.pending_bytes
            out["store_used_bytes"] = s.used_bytes
            drained = queue is not None and queue.settled(queue.cursor)
            out["caught_up"] = drained and self._reader_idle(out.get("position"))
        out["store_peak_bytes"] = self._store_peak
        return out

    def _rows_moved(self, rows: int) -> int | None:
        """When (wall time, ms) the reader's count of row changes was last seen growing; None
        before it read any. A reader reopened at a replay counts from 0 again."""
        seen, at = self._rows_seen
        if rows > seen:
            at = int(time.time() * 1000)
        self._rows_seen = (rows, at)
        return at

    def _reader_idle(self, position: str | None) -> bool:
        """Whether the reader's position stood still for IDLE_SECONDS (it is at the log end)."""
        now = time.monotonic()
        if position != self._status_position:
            self._status_position, self._status_moved = position, now
        return now - self._status_moved >= IDLE_SECONDS


def _source_logging() -> None:
    """Spark runs the stream reader in a Python worker process of its own, where nothing set up
    logging: what the log reader and the snapshot planner say goes to that process's stderr
    (which ``sparkcdc run`` shows) at the level and in the format the command line asked for."""
    setup_child_logging()
