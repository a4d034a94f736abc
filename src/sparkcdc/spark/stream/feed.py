"""The log side of a stream reader: one log reader, the event store it fills, the delivery queue
over the store.

They are opened together at the offset Spark hands over, and again whenever Spark moves the
stream elsewhere (a restart from the checkpoint, a replayed micro-batch): a new reader from that
offset, never what an old store still holds.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from sparkcdc.core.offset import Offset
from sparkcdc.sources.port import ChangeFilter, LogReader, Source
from sparkcdc.spark.stream.delivery import DeliveryQueue
from sparkcdc.spark.stream.options import SourceOptions
from sparkcdc.store.ring import EventStore

IDLE_SECONDS = 3.0  # a drained reader this long without moving is at the log end


class LogFeed:
    """One log reader into one store, with its delivery queue (see the module docstring)."""

    def __init__(
        self,
        options: SourceOptions,
        source: Callable[[], Source],
        change_filter: Callable[[Offset], ChangeFilter | None],
    ) -> None:
        self.options = options
        self._source = source
        self._change_filter = change_filter
        self.reader: LogReader | None = None
        self.store: EventStore | None = None
        self.queue: DeliveryQueue | None = None
        self._settled_since: float | None = None
        self._settled_at: Offset | None = None

    def at(self, start: Offset) -> tuple[DeliveryQueue, bool]:
        """The queue delivering from ``start``, and whether it was opened just now."""
        if self.queue is not None and self.queue.cursor == start:
            return self.queue, False
        self.stop()  # first call, or Spark moved the stream elsewhere: reopen at start
        o = self.options
        store = EventStore(o.max_bytes, o.max_items, o.batch_mode)  # type: ignore[arg-type]
        self.reader = self._source().open_reader(
            start, store, o.schema_history, o.item_rows, change_filter=self._change_filter(start),
            # typed images travel in the batch files to the sink, or become a table stream's
            typed=o.log_dir is not None or o.table_stream,
        )  # fmt: skip
        self.reader.start()
        self.store, self.queue = store, DeliveryQueue(store, start)
        return self.queue, True

    def stop(self) -> None:
        if self.reader is not None:
            self.reader.stop()
        if self.store is not None:
            self.store.close()
        self.reader = self.store = self.queue = None

    @property
    def error(self) -> BaseException | None:
        """The error that stopped the log reader, if one did."""
        return None if self.reader is None else self.reader.error

    def reading(self, target: Offset) -> bool:
        """Whether the log reader is still reading towards ``target`` (connected, and has not
        read up to it)."""
        if self.reader is None:
            return False
        stats = self.reader.stats()
        return stats.connected and (stats.position is None or stats.position < target)

    def reached(self, start: Offset, target: Offset) -> bool:
        """Available-now: everything up to the log end seen at the start (``target``) was
        delivered.

        The log end may lie past the last transaction boundary the reader can report (log
        records that carry no captured change: a binlog's checkpoint events, DDL of tables not
        captured, the header events of a new file), so besides "the reader passed the end" a
        reader that delivered everything it read and has not moved for IDLE_SECONDS counts as
        having reached it too. Either way the reader must have connected once: connecting is
        when it tells the source what Spark committed (a PostgreSQL slot's confirmed position
        moves to the run's start), which a run ending before would leave to the next one.
        """
        assert self.queue is not None and self.store is not None and self.reader is not None
        stats = self.reader.stats()
        if not stats.connected and not self.store.closed:
            return False
        if start >= target:
            return True
        position = stats.position or start
        drained = self.queue.settled(start) and start >= position
        if not drained:
            self._settled_since = None
            return False
        if position >= target:
            return True
        now = time.monotonic()
        if self._settled_since is None or self._settled_at != position:
            self._settled_since, self._settled_at = now, position
        return now - self._settled_since >= IDLE_SECONDS
