"""Between the event store and Spark's offsets: which change events make up (start, end].

The stream reader of :mod:`sparkcdc.spark.stream.datasource` answers three questions for Spark,
and this module holds the bookkeeping behind them (no Spark here, so it is tested on its own):

``plan(start, max_bytes)`` (for ``latestOffset``)
    Pull whole store batches (Canal's ``get``: they end at a transaction boundary, or at a split
    point inside a transaction larger than the store) into the *ready queue* and answer the
    ``after`` offset of the last batch that fits ``max_bytes``; ``start`` when nothing is ready.

``take(start, end)`` (for ``partitions``)
    Hand out the items covering (start, end]. Normally these are exactly the planned batches. On a
    replay after a restart the store is fresh, the log reader was reopened at ``start`` and its
    batches need not align with ``end``: items are taken until ``end`` is reached, and when
    ``end`` falls inside an item (``end.skip`` inside a split transaction's part, or a boundary
    inside an item of coalesced transactions, found by its ``boundaries``), that item's rows are
    sliced; the rest stays queued for the next micro-batch.

``commit(end)`` (once the items are in Spark's partitions)
    Ack every store batch whose end is at or before ``end`` and whose items were all handed out
    (Canal's ``ack``), which frees its memory and lets the log reader put more. ``take`` acks
    what it handed out while it waits for more, so a replayed micro-batch may be larger than
    the store.

Items whose ``after`` equals the start (the schema announcement a log reader sends first) ride
along with the next micro-batch; their store batches are acked as soon as nothing lies past the
start, so they never hold the store the next transaction needs. Row counting for slices follows
the resume counter of :class:`~sparkcdc.core.offset.Offset`: ``skip`` counts the transaction's
delivered rows.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc

from sparkcdc.core.images import TypedImages
from sparkcdc.core.logitem import LogItem
from sparkcdc.core.offset import Offset
from sparkcdc.store.batch import Batch
from sparkcdc.store.ring import EventStore

FILL_POLL_SECONDS = 0.25  # :meth:`DeliveryQueue.fill` waits no longer for the reader's next batch


@dataclass
class Taken:
    """The change events of one micro-batch, in log order, and what they tell about progress."""

    batches: list[pa.RecordBatch]
    rows: int
    last_event_ts_ms: int | None
    images: list[TypedImages] = field(default_factory=list)  # of the batches' typed changes


class _Entry:
    """A ready item with its size and offset key computed once (they are read many times)."""

    __slots__ = ("item", "size", "key")

    def __init__(self, item: LogItem) -> None:
        self.item, self.size, self.key = item, item.size, item.after.key


class DeliveryQueue:
    """The ready queue of one stream reader over one :class:`EventStore` (see module doc)."""

    def __init__(self, store: EventStore, start: Offset) -> None:
        self.store = store
        self.cursor = start  # end of what was handed to Spark (or the reader's start)
        self._ready: deque[_Entry] = deque()
        self._ready_bytes = 0
        self._unacked: deque[tuple[Batch, int]] = deque()  # (batch, items fetched through it)
        self._fetched = 0  # items moved from the store into the ready queue
        self._consumed = 0  # items handed to Spark completely

    # ------------------------------------------------------------------ plan
    def fetch(self, max_bytes: int | None, timeout: float = 0.0) -> bool:
        """Move one store batch into the ready queue; False if none was ready in ``timeout``."""
        batch = self.store.get(max_bytes=max_bytes, timeout=timeout)
        if batch is None:
            return False
        self._fetched += len(batch.items)
        self._unacked.append((batch, self._fetched))
        for item in batch.items:
            entry = _Entry(item)
            self._ready.append(entry)
            self._ready_bytes += entry.size
        return True

    def plan(self, start: Offset, max_bytes: int, wait: float = 0.0) -> Offset:
        """The end offset of the next micro-batch from ``start`` (``start`` if nothing is ready)."""
        if not self._ready:
            self.fetch(max_bytes, timeout=wait)
        while self._ready_bytes < max_bytes and self.fetch(max_bytes - self._ready_bytes):
            pass
        end: Offset = start
        end_key, size = start.key, 0
        for entry in self._ready:
            if size and size + entry.size > max_bytes and end_key > start.key:
                break
            size += entry.size
            if entry.key > end_key:
                end, end_key = entry.item.after, entry.key
        if end == start:
            self._free_riders(start)
        return end

    def _free_riders(self, start: Offset) -> None:
        """Ack the store batches that end at ``start`` (a schema announcement riding along with
        the next micro-batch): they stay in the ready queue, and a store they filled takes the
        log's next item (else a store smaller than both waits for ever)."""
        last: Batch | None = None
        while self._unacked and self._unacked[0][0].end <= start:
            last = self._unacked.popleft()[0]
        if last is not None:
            self.store.ack(last)

    def fill(
        self,
        start: Offset,
        max_bytes: int,
        target: Offset,
        seconds: float,
        seconds_per_table: float = 0.0,
        reading: Callable[[], bool] | None = None,
    ) -> Offset:
        """:meth:`plan` again while the log reader keeps putting batches, until the ready queue
        holds ``max_bytes`` or reaches ``target``: fewer, larger micro-batches while the reader
        is behind (a batch pays fixed costs per table it touches). Waits ``seconds`` at most,
        or ``seconds_per_table`` for each table the ready items hold, when that is longer (the
        tables counted as they arrive). Stops as soon as the reader put nothing for
        :data:`FILL_POLL_SECONDS`, unless ``reading`` says it is still reading towards the target
        (a pause of the reader's, as when it first meets many tables) and the store has room."""
        started = time.monotonic()
        end = self.plan(start, max_bytes)
        seen = _tables_of(self.planned(end)) if seconds_per_table > 0 else set()
        while end < target and self._ready_bytes < max_bytes:
            left = started + max(seconds, seconds_per_table * len(seen)) - time.monotonic()
            fetched = self._fetched
            if left <= 0:
                break
            if not self.fetch(max_bytes - self._ready_bytes, min(left, FILL_POLL_SECONDS)):
                if reading is None or self.store.full or not reading():
                    break
                continue
            if seconds_per_table > 0:
                new = (self._ready[-i].item.batch for i in range(self._fetched - fetched, 0, -1))
                seen |= _tables_of([b for b in new if b is not None])
            end = self.plan(start, max_bytes)
        return end

    def tables_in(self, end: Offset, enough: int | None = None) -> int:
        """How many tables the ready items up to ``end`` hold events of (counted no further
        than ``enough``)."""
        return len(_tables_of(self.planned(end), enough))

    def planned(self, end: Offset) -> list[pa.RecordBatch]:
        """The record batches of the ready items up to ``end`` (they stay queued)."""
        key = end.key
        return [
            e.item.batch
            for e in self._ready
            if e.key <= key and e.item.batch is not None and e.item.batch.num_rows
        ]

    def caught_up(self, end: Offset) -> bool:
        """Whether ``end`` holds everything the log reader has put so far."""
        key = end.key
        return all(e.key <= key for e in self._ready) and self.store.pending_items == 0

    @property
    def ready_bytes(self) -> int:
        return self._ready_bytes

    @property
    def idle(self) -> bool:
        """Nothing queued and nothing handed out but unacked."""
        return not self._ready and not self._unacked

    def settled(self, start: Offset) -> bool:
        """Nothing to deliver past ``start``: the store holds no item, every ready item lies at
        ``start`` or before (a schema announcement waits there for the next micro-batch, which
        may never come on an idle log) and no item handed out waits for its ack. Safe to ask
        from another thread."""
        ready, unacked = list(self._ready), list(self._unacked)  # copies: the status thread asks
        handed_out = bool(unacked) and unacked[0][1] <= self._consumed
        key = start.key
        ahead = any(e.key > key for e in ready)
        return self.store.pending_items == 0 and not handed_out and not ahead

    # ------------------------------------------------------------------ take
    def take(
        self,
        end: Offset,
        wait_more: Callable[[], None],
        deadline_s: float = 600.0,
    ) -> Taken:
        """The items covering (cursor, end], fetching from the store while they are not queued.

        ``wait_more`` is called between store polls (it raises the log reader's error, if any).
        """
        out: list[pa.RecordBatch] = []
        images: dict[int, TypedImages] = {}  # shared by the parts of a sliced item: once
        end_key = end.key
        cursor_key = self.cursor.key
        deadline = time.monotonic() + deadline_s
        while True:
            while self._ready and (cursor_key < end_key or self._ready[0].key <= end_key):
                entry = self._ready[0]
                if entry.key > end_key:
                    if end.at_boundary and not entry.item.rows_before(end):
                        # the item's first transaction starts at or after end
                        self.cursor, cursor_key = end, end_key
                        break
                    item = self._slice_front(end)  # end falls inside this item
                    item_key = end_key
                else:
                    item, item_key = entry.item, entry.key
                    self._ready.popleft()
                    self._ready_bytes -= entry.size
                    self._consumed += 1
                if item.batch is not None and item.batch.num_rows:
                    out.append(item.batch)
                    images.update((id(i), i) for i in item.images)
                if item_key > cursor_key:
                    self.cursor, cursor_key = item.after, item_key
            if cursor_key >= end_key:
                rows = sum(b.num_rows for b in out)
                return Taken(out, rows, _max_ts(out), list(images.values()))
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"the log reader did not reach offset {end} within {deadline_s:.0f}s "
                    f"(it is at {self.cursor})"
                )
            wait_more()
            # the items handed out so far are in ``out`` now: free their store batches, or a
            # replayed micro-batch larger than the store would wait for room forever
            self.commit(self.cursor)
            self.fetch(None, timeout=0.5)

    def _slice_front(self, end: Offset) -> LogItem:
        """Split the first ready item at ``end``; the front part is returned, the rest stays."""
        entry = self._ready[0]
        item = entry.item
        if end.at_boundary:  # between two of the item's coalesced transactions
            n = item.rows_before(end)
        else:
            first_row = self.cursor.skip if self.cursor.same_transaction(end) else 0
            n = end.skip - first_row
        batch = item.batch
        if n <= 0:  # none of this item's rows come before end
            return LogItem(after=end)
        if batch is not None and n == batch.num_rows and end.at_boundary:
            rest = _Entry(LogItem(after=item.after))  # only progress past the item's last rows
        else:
            if batch is None or n >= batch.num_rows:
                raise ValueError(
                    f"offset {end} does not fall inside the transaction slice ending at "
                    f"{item.after}; the checkpoint does not match this binary log"
                )
            end_key = end.key
            boundaries = tuple((r - n, b) for r, b in item.boundaries if b.key > end_key)
            rest = _Entry(
                LogItem(item.after, batch.slice(n), is_ddl=item.is_ddl, boundaries=boundaries,
                        open_transaction=item.open_transaction,
                        images=item.images)
            )  # fmt: skip
        self._ready_bytes += rest.size - entry.size
        self._ready[0] = rest
        return LogItem(after=end, batch=batch.slice(0, n), images=item.images)

    # ---------------------------------------------------------------- commit
    def commit(self, end: Offset) -> int:
        """Ack every store batch ending at or before ``end`` whose items were all handed out."""
        last: Batch | None = None
        count = 0
        while self._unacked:
            batch, through = self._unacked[0]
            if batch.end > end or through > self._consumed:
                break
            last = self._unacked.popleft()[0]
            count += 1
        if last is not None:
            self.store.ack(last)
        return count


def _max_ts(batches: list[pa.RecordBatch]) -> int | None:
    """The newest source commit time among ``batches``."""
    if not batches:
        return None
    column = pa.Table.from_batches(batches).column("source").combine_chunks()
    value = pc.max(column.field("ts_ms")).as_py()
    return None if value is None else int(value)


def _tables_of(batches: list[pa.RecordBatch], enough: int | None = None) -> set[tuple[str, str]]:
    """The (db, table) pairs ``batches`` hold events of (no more than ``enough`` looked for)."""
    found: set[tuple[str, str]] = set()
    for batch in batches:
        if not batch.num_rows:
            continue
        names = pa.Table.from_batches([batch]).select(["db", "table"])
        found.update((n["db"], n["table"]) for n in names.group_by(["db", "table"])
                     .aggregate([]).to_pylist())  # fmt: skip
        if enough is not None and len(found) >= enough:
            break
    return found
