"""The ``mysql-cdc`` stream source: a PySpark Python Data Source over the binlog log reader.

Design (PySpark's Python Data Source API, ``pyspark/sql/datasource.py``): Spark runs the stream
reader in one long-lived driver-side Python process and calls it in this order::

    initialOffset()                 new stream only: resolve ``startup`` to a BinlogOffset
    prepareForTriggerAvailableNow() trigger(availableNow=True) only: remember the log end now
    latestOffset(start, limit)      end of the next store batches up to max_bytes, or start
    partitions(start, end)          the change events of (start, end] as Arrow IPC bytes
    commit(end)                     what Spark committed (for the status file)
    stop()

Canal's ack: the store frees a batch as soon as its events are inside the partitions Spark
planned (the partitions carry them from then on), so the log reader refills the store while
Spark runs the micro-batch. Nothing is ever re-read from the store: a micro-batch that fails is
replayed after the restart by a new log reader opened at the checkpointed offset.

The log reader thread and its :class:`~sparkcdc.store.ring.EventStore` live in that process and
start lazily at the first ``start`` Spark hands over: the initial offset for a new stream, the
checkpointed offset on a restart (a ``skip > 0`` start is a split transaction). When Spark
replays an uncommitted micro-batch after a crash, :class:`~sparkcdc.spark.delivery.DeliveryQueue`
rebuilds exactly (start, end] from the reopened log. Offsets are
:meth:`BinlogOffset.to_json` dicts.

Executors never depend on the driver: each :class:`EnvelopePartition` carries its change events
themselves (Arrow IPC bytes), and ``read`` turns them back into ``pyarrow.RecordBatch`` es of
:data:`~sparkcdc.core.event.ENVELOPE_SCHEMA`.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    InputPartition,
)
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxBytes,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

from sparkcdc.core.errors import ConfigError
from sparkcdc.core.event import ENVELOPE_DDL
from sparkcdc.core.offset import BinlogOffset
from sparkcdc.spark.delivery import DeliveryQueue
from sparkcdc.spark.incremental import IncrementalSnapshots
from sparkcdc.spark.options import SourceOptions
from sparkcdc.spark.readers import ReaderFactory, load_reader_factory
from sparkcdc.spark.snapshot import SnapshotPlanner, SplitTask, is_snapshot
from sparkcdc.spark.snapshot_phase import SnapshotPhase
from sparkcdc.spark.split_reads import read_split_task
from sparkcdc.spark.status import StatusWriter, peak_rss_bytes
from sparkcdc.store.ring import EventStore

PARTITION_BYTES = 32 * 1024 * 1024
ARROW_BATCH_ROWS = 65536
IDLE_SECONDS = 3.0  # available-now: a drained reader this long without moving is at the end


class EnvelopePartition(InputPartition):
    """The change events of one Spark task: Arrow IPC stream bytes of envelope batches."""

    def __init__(self, payload: bytes, rows: int) -> None:
        super().__init__(rows)
        self.payload = payload
        self.rows = rows

    def __repr__(self) -> str:
        return f"EnvelopePartition(rows={self.rows}, bytes={len(self.payload)})"


def to_partitions(batches: Sequence[pa.RecordBatch]) -> list[EnvelopePartition]:
    """Pack record batches, in order, into partitions of at most ~PARTITION_BYTES each.

    Items of small transactions are tiny record batches; each partition is rewritten as a few
    large ones, since Spark pays per Arrow batch it receives from ``read``.
    """
    if not batches:
        return []
    table = pa.Table.from_batches(batches).combine_chunks()
    rows_per_part = max(1, int(table.num_rows * PARTITION_BYTES / max(table.nbytes, 1)))
    parts: list[EnvelopePartition] = []
    for lo in range(0, table.num_rows, rows_per_part):
        part = table.slice(lo, rows_per_part)
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, table.schema) as writer:
            writer.write_table(part, max_chunksize=ARROW_BATCH_ROWS)
        parts.append(EnvelopePartition(sink.getvalue().to_pybytes(), part.num_rows))
    return parts


class MySQLCDCDataSource(DataSource):
    """``spark.readStream.format("mysql-cdc")``: change events of MySQL/MariaDB tables."""

    @classmethod
    def name(cls) -> str:
        return "mysql-cdc"

    def schema(self) -> str:
        options = SourceOptions.parse(self.options)
        if options.table is not None and "tables" not in {k.lower() for k in self.options}:
            from sparkcdc.spark.batch import table_schema

            return table_schema(options).spark_ddl()
        return ENVELOPE_DDL

    def reader(self, schema: StructType) -> DataSourceReader:
        from sparkcdc.spark.batch import MySQLSnapshotReader

        options = SourceOptions.parse(self.options)
        if options.table is None:
            raise ConfigError(
                "a batch read of mysql-cdc takes one table: set .option('table', 'db.table').",
                key="table",
            )
        return MySQLSnapshotReader(options)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return MySQLCDCStreamReader(SourceOptions.parse(self.options))


class MySQLCDCStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """The stream reader; see the module docstring for the call order and the offsets."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        self._factory: ReaderFactory | None = None
        self._reader: Any = None
        self._store: EventStore | None = None
        self._queue: DeliveryQueue | None = None
        self._target: BinlogOffset | None = None
        self._settled_since: float | None = None
        self._settled_at: BinlogOffset | None = None
        self._status_position: str | None = None
        self._status_moved = 0.0
        self._inflight: dict[BinlogOffset, tuple[int, int | None]] = {}
        self._committed: BinlogOffset | None = None
        self._committed_ts: int | None = None
        self._committed_rows = 0
        self._store_peak = 0
        self._status: StatusWriter | None = None
        self._snapshot: SnapshotPhase | None = None
        self._handoff_checked = False
        self._incremental: IncrementalSnapshots | None = None

    def __getstate__(self) -> dict[str, Any]:
        # Spark pickles the reader to ship ``read`` to executors: only the options travel
        return {"options": self.options}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["options"])  # type: ignore[misc]

    @property
    def factory(self) -> ReaderFactory:
        if self._factory is None:
            self._factory = load_reader_factory(self.options.reader_factory)
        return self._factory

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
                lambda: self.factory.captured_tables(self.options.source),
            )
        return self._incremental

    @property
    def snapshots(self) -> bool:
        return self.options.source.takes_snapshot

    # ------------------------------------------------------------ Spark calls
    def initialOffset(self) -> dict:
        _source_logging()
        if self.snapshots:
            return self.snapshot.initial(self.factory.captured_tables(self.options.source))
        return self.factory.initial_offset(self.options.source).to_json()

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = self.factory.current_offset(self.options.source)

    def getDefaultReadLimit(self) -> ReadLimit:
        return ReadAllAvailable()

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        _source_logging()
        if is_snapshot(start):
            self._ensure_status()
            return self.snapshot.next(start)
        begin = BinlogOffset.from_json(start)
        if self.snapshots and not self._handoff_checked:
            self._handoff_checked = True
            self._target = self.snapshot.target(begin, self._target)
        queue = self._ensure_started(begin)
        # Spark plans the next micro-batch only after the previous one is committed; acking
        # here frees the store before Spark's own commit(end) call, which comes later
        queue.commit(begin)
        self._raise_reader_error()
        cap = self.options.max_bytes
        if isinstance(limit, ReadMaxBytes):
            cap = max(1, min(cap, int(limit.max_bytes)))
        while True:
            if self._target is not None and self._reached_target(begin):
                if self._status is not None:
                    self._status.flush()  # the final state: Spark may not call stop()
                return start
            end = queue.plan(begin, cap, wait=0.05 if self._target is None else 0.5)
            self._raise_reader_error()
            planned = self.incremental.plan(start, begin, end, queue, self._reader)
            if planned is not None:
                return planned
            if end > begin:
                return end.to_json()
            if self._target is None:
                return start
            # available-now ends at the first "no new data": wait until the reader catches up

    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        if is_snapshot(end):
            return self.snapshot.partitions(end)
        if is_snapshot(start):
            return []  # the hand-off: from the snapshot to the log, no events of its own
        begin, finish = BinlogOffset.from_json(start), BinlogOffset.from_json(end)
        queue = self._ensure_started(begin)
        batches: list[pa.RecordBatch] = []
        if finish >= begin:  # at begin: the schema announcement, if it is still queued
            taken = queue.take(finish, self._raise_reader_error)
            self._inflight[finish] = (taken.rows, taken.last_event_ts_ms)
            batches = taken.batches
        # an incremental snapshot's chunk and notifications follow the batch's log events
        batches = batches + self.incremental.events(end, batches)
        if finish <= begin and not batches:
            return []
        parts = to_partitions(batches)
        # The partitions carry the events from here on, and a failed micro-batch is replayed by
        # a new reader from the checkpointed offset, never from this store: free it now, so the
        # log reader fills it while Spark runs the batch.
        queue.commit(finish)
        return parts

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if isinstance(partition, SplitTask):
            if partition.head:
                yield from pa.ipc.open_stream(partition.head)
            yield from read_split_task(self.options, partition)
            return
        assert isinstance(partition, EnvelopePartition)
        yield from pa.ipc.open_stream(partition.payload)

    def commit(self, end: dict) -> None:
        if is_snapshot(end):
            self.snapshot.committed(end)
            return
        finish = BinlogOffset.from_json(end)
        if self._queue is not None:
            self._queue.commit(finish)
        if self._incremental is not None:
            self._incremental.committed(end)
        for offset in [o for o in self._inflight if o <= finish]:
            rows, ts = self._inflight.pop(offset)
            self._committed_rows += rows
            if ts is not None and (self._committed_ts is None or ts > self._committed_ts):
                self._committed_ts = ts
        self._committed = finish

    def stop(self) -> None:
        self._stop_reader()
        if self._incremental is not None:
            self._incremental.close()
        if self._status is not None:
            self._status.stop()

    # ------------------------------------------------------------ the log reader
    def _ensure_started(self, start: BinlogOffset) -> DeliveryQueue:
        if self._queue is not None and self._queue.cursor == start:
            return self._queue
        self._stop_reader()  # first call, or Spark moved the stream elsewhere: reopen at start
        o = self.options
        store = EventStore(o.max_bytes, o.max_items, o.batch_mode)  # type: ignore[arg-type]
        handoff = self.snapshot.change_filter(start) if self.snapshots else None
        extra = {} if handoff is None else {"change_filter": handoff}
        self._reader = self.factory.open(
            o.source, start, store, o.schema_history, o.item_rows, **extra
        )
        self._reader.start()
        self._store, self._queue = store, DeliveryQueue(store, start)
        self._inflight.clear()
        self._ensure_status()
        return self._queue

    def _ensure_status(self) -> None:
        o = self.options
        if self._status is None and o.status_file:
            self._status = StatusWriter(o.status_file, self.status)
            self._status.start()

    def _stop_reader(self) -> None:
        if self._reader is not None:
            self._reader.stop()
        if self._store is not None:
            self._store.close()
        self._reader = self._store = self._queue = None

    def _raise_reader_error(self) -> None:
        error = getattr(self._reader, "error", None) if self._reader is not None else None
        if error is not None:
            if self._status is not None:
                self._status.flush()
            raise error

    def _reached_target(self, start: BinlogOffset) -> bool:
        """Available-now: everything up to the log end seen at the start was delivered.

        The log end may lie past the last transaction boundary the reader can report (a
        binlog checkpoint event, DDL of tables not captured, the header events of a new binlog
        file), so besides "the reader passed the end" a reader that delivered everything it
        read and has not moved for IDLE_SECONDS counts as having reached it too.
        """
        assert self._target is not None and self._queue is not None and self._store is not None
        if start >= self._target:
            return True
        position = _reader_position(self._reader) or start
        drained = self._queue.idle and self._store.pending_items == 0 and start >= position
        if not drained:
            self._settled_since = None
            return False
        if position >= self._target:
            return True
        now = time.monotonic()
        if self._settled_since is None or self._settled_at != position:
            self._settled_since, self._settled_at = now, position
        return now - self._settled_since >= IDLE_SECONDS

    # ------------------------------------------------------------ status file
    def status(self) -> dict[str, Any]:
        """What the status file holds (see :mod:`sparkcdc.spark.status`)."""
        out: dict[str, Any] = {
            "committed_offset": None if self._committed is None else str(self._committed),
            "committed_ts_ms": self._committed_ts,
            "committed_rows": self._committed_rows,
            "peak_rss_bytes": peak_rss_bytes(),
        }
        if self._snapshot is not None and self._snapshot.progress:
            out["snapshot"] = self._snapshot.figures()
        if self._incremental is not None:
            figures = self._incremental.figures()
            if figures is not None:
                out["incremental"] = figures
        reader, store, queue = self._reader, self._store, self._queue
        if reader is not None:
            try:
                stats = reader.stats()
                position = getattr(stats, "position", None)
                out["position"] = None if position is None else str(position)
                for name in ("events", "rows", "last_event_ts_ms", "connected"):
                    out[name] = getattr(stats, name, None)
            except Exception:
                pass
            error = getattr(reader, "error", None)
            if error is not None:
                out["error"] = {"type": type(error).__name__, "message": str(error)}
        if store is not None:
            s = store.stats()
            self._store_peak = max(self._store_peak, s.used_bytes)
            out["store_pending_bytes"] = s.pending_bytes
            out["store_used_bytes"] = s.used_bytes
            drained = s.pending_items == 0 and queue is not None and queue.idle
            out["caught_up"] = drained and self._reader_idle(out.get("position"))
        out["store_peak_bytes"] = self._store_peak
        return out

    def _reader_idle(self, position: str | None) -> bool:
        """Whether the reader's position stood still for IDLE_SECONDS (it is at the log end)."""
        now = time.monotonic()
        if position != self._status_position:
            self._status_position, self._status_moved = position, now
        return now - self._status_moved >= IDLE_SECONDS


def _reader_position(reader: Any) -> BinlogOffset | None:
    try:
        position = reader.stats().position
    except Exception:
        return None
    return position if isinstance(position, BinlogOffset) else None


def _source_logging() -> None:
    """Spark runs the stream reader in a Python worker process of its own, where nothing set up
    logging: what the log reader and the snapshot planner say goes to that process's stderr
    (which ``sparkcdc run`` shows) at the level the command line asked for, once."""
    level = os.environ.get("SPARKCDC_LOG_LEVEL")
    root = logging.getLogger("sparkcdc")
    if not level or root.handlers:
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(message)s", "%H:%M:%S"))
    root.addHandler(handler)
    root.setLevel(level)
    root.propagate = False
