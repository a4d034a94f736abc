"""The bounded in-memory event store between the log reader thread and Spark.

The design follows Canal's event store (``MemoryEventStoreWithBuffer``): a ring buffer of
``capacity`` slots (a power of two, slot = ``seq & (capacity - 1)``) and three ever-growing
sequences, each starting at -1, with running byte totals beside them::

        ack_seq            get_seq                       put_seq
           |                  |                             |
    ... ---+==================+=============================+--- free slots ---
           | handed out,      | put, waiting to be          |
           | not yet acked    | handed out (pending)        |
           +------------------+-----------------------------+
    put(item)     put_seq += 1, put_mem += size     (blocks while full: backpressure)
    get()         get_seq -> end of the batch       (whole transactions; DDL alone)
    ack(batch)    ack_seq -> batch.last_seq         (frees slots, wakes blocked putters)
    rollback()    get_seq -> ack_seq                (un-acked batches are handed out again)

    invariant: -1 <= ack_seq <= get_seq <= put_seq,   put_seq - ack_seq <= capacity
    MEMSIZE:   put_mem - ack_mem <= max_bytes, except one oversized item in an empty store

A batch ends at the last transaction boundary (an item whose ``after.skip == 0``) within the
caller's limits. Only when no boundary is in reach and the limits are reached, or the store is
full so the open transaction cannot grow, is the transaction split at the last item; that item's
``after`` carries the resume counter (``skip > 0``). A DDL item always travels alone; one inside a
transaction is handed out only once that transaction has ended (or cannot grow). Batches
handed out and then rolled back are replayed exactly as first handed out.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from typing import Literal

from sparkcdc.core.errors import ConfigError, StoreClosed
from sparkcdc.core.logitem import LogItem
from sparkcdc.core.offset import Offset
from sparkcdc.store.batch import Batch, StoreStats

BatchMode = Literal["MEMSIZE", "ITEMSIZE"]


class EventStore:
    """Canal-style ring buffer of :class:`LogItem`; one producer, any number of consumers."""

    def __init__(
        self,
        max_bytes: int = 64 * 1024 * 1024,
        max_items: int = 16384,
        batch_mode: BatchMode = "MEMSIZE",
        ddl_isolation: bool = True,
    ) -> None:
        if max_items < 1 or max_items & (max_items - 1):
            raise ConfigError(
                f"store max_items must be a power of two, got {max_items}; use e.g. 16384.",
                key="pipeline.store.max_items",
            )
        if max_bytes < 1:
            raise ConfigError(
                f"store max_bytes must be positive, got {max_bytes}.",
                key="pipeline.store.max_bytes",
            )
        if batch_mode not in ("MEMSIZE", "ITEMSIZE"):
            raise ConfigError(
                f"store batch_mode must be MEMSIZE or ITEMSIZE, got {batch_mode!r}.",
                key="pipeline.store.batch_mode",
            )
        self.capacity = max_items
        self.max_bytes = max_bytes
        self.batch_mode: BatchMode = batch_mode
        self.ddl_isolation = ddl_isolation
        self._mask = max_items - 1
        self._slots: list[LogItem | None] = [None] * max_items
        self._sizes = [0] * max_items  # item.size, computed once per put
        self._put = self._get = self._ack = -1
        self._put_mem = self._get_mem = self._ack_mem = 0
        self._ready = -1  # newest seq that ends a transaction or is a DDL item
        self._latest: Offset | None = None
        self._acked_end: Offset | None = None
        self._handed: deque[Batch] = deque()  # handed out, not fully acked, in order
        self._replay: deque[Batch] = deque()  # rolled back, to be handed out again first
        self._blocked_putters = 0
        self._waiting_gets: list[tuple[float, int]] = []  # limits of getters waiting for data
        self._closed = False
        self._error: BaseException | None = None
        self._puts = self._gets = self._acks = self._rollbacks = self._splits = 0
        lock = threading.Lock()
        self._not_full = threading.Condition(lock)
        self._not_empty = threading.Condition(lock)

    # ------------------------------------------------------------------ put
    def put(self, item: LogItem, timeout: float | None = None) -> bool:
        """Append ``item``, waiting while the store is full; False if ``timeout`` runs out."""
        deadline = None if timeout is None else time.monotonic() + timeout
        size = item.size
        with self._not_full:
            while True:
                if self._closed:
                    raise StoreClosed("the event store is closed; stop putting items into it.")
                if self._has_room(size):
                    break
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return False
                self._blocked_putters += 1
                self._not_empty.notify_all()  # a consumer may now split an open transaction
                try:
                    self._not_full.wait(remaining)
                finally:
                    self._blocked_putters -= 1
            self._put += 1
            self._slots[self._put & self._mask] = item
            self._sizes[self._put & self._mask] = size
            self._put_mem += size
            self._latest = item.after
            if (item.at_boundary or item.is_ddl) and not item.open_transaction:
                self._ready = self._put
            self._puts += 1
            if self._waiting_gets and self._worth_waking():
                self._not_empty.notify_all()
            return True

    def _worth_waking(self) -> bool:
        """Whether a waiting getter could now have a batch (saves a thread switch per item)."""
        if self._ready > self._get or self._is_full():
            return True
        items, size = self._put - self._get, self._put_mem - self._get_mem
        return any(
            items >= cap_items or size >= cap_bytes for cap_bytes, cap_items in self._waiting_gets
        )

    def _has_room(self, size: int) -> bool:
        if self._put - self._ack >= self.capacity:
            return False
        if self.batch_mode == "ITEMSIZE" or self._put == self._ack:
            return True  # an empty store admits any single item, however large
        return self._put_mem - self._ack_mem + size <= self.max_bytes

    def _is_full(self) -> bool:
        if self._blocked_putters or self._put - self._ack >= self.capacity:
            return True
        return self.batch_mode == "MEMSIZE" and self._put_mem - self._ack_mem >= self.max_bytes

    # ------------------------------------------------------------------ get
    def get(
        self,
        max_bytes: int | None = None,
        max_items: int | None = None,
        timeout: float | None = 0.0,
    ) -> Batch | None:
        """The next batch (see the module docstring), or None if none is ready in ``timeout``.

        ``timeout`` 0 never waits, None waits until a batch is ready or the store is closed.
        Limits of None mean no limit; the first item is taken even if it alone exceeds them.
        Batches rolled back are handed out again first, unchanged, whatever the limits. After
        :meth:`close`, the remaining ready batches are handed out, then None (or the error given
        to :meth:`close` is raised).
        """
        if (max_bytes is not None and max_bytes < 1) or (max_items is not None and max_items < 1):
            raise ValueError("get limits must be positive; pass None for no limit.")
        byte_cap = max_bytes if max_bytes is not None else float("inf")
        item_cap = max_items if max_items is not None else self.capacity
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._not_empty:
            while True:
                batch = self._take(byte_cap, item_cap)
                if batch is not None:
                    return batch
                if self._closed:
                    if self._error is not None:
                        raise self._error
                    return None
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return None
                waiting = (byte_cap, item_cap)
                self._waiting_gets.append(waiting)
                try:
                    self._not_empty.wait(remaining)
                finally:
                    self._waiting_gets.remove(waiting)

    def _take(self, byte_cap: float, item_cap: int) -> Batch | None:
        if self._replay:
            batch = self._replay.popleft()
        else:
            count = self._plan(byte_cap, item_cap)
            if count == 0:
                return None
            first = self._get + 1
            items = tuple(self._item(seq) for seq in range(first, first + count))
            batch = Batch(first, first + count - 1, items, items[-1].after)
            self._splits += batch.is_split
        self._get = batch.last_seq
        self._get_mem += self._bytes(batch.first_seq, batch.last_seq)
        self._handed.append(batch)
        self._gets += 1
        return batch

    def _plan(self, byte_cap: float, item_cap: int) -> int:
        """How many items from the get cursor the next batch takes (0: nothing ready yet)."""
        start = self._get + 1
        pending_items, pending_bytes = self._put - self._get, self._put_mem - self._get_mem
        if pending_items == 0:
            return 0
        fits = pending_items < item_cap and pending_bytes < byte_cap
        if self._ready < start and fits and not self._is_full():
            return 0  # an open transaction that may still grow: wait for its end
        taken = size = cut = 0
        fenced = False
        for seq in range(start, self._put + 1):
            item, item_size = self._item(seq), self._sizes[seq & self._mask]
            if self.ddl_isolation and item.is_ddl:
                if taken == 0:
                    return 1
                fenced = True  # what precedes a DDL cannot grow any more
                break
            if taken and (taken >= item_cap or size + item_size > byte_cap):
                break
            taken += 1
            size += item_size
            if item.at_boundary:
                cut = taken
        if cut:
            return cut
        at_limit = taken >= item_cap or size >= byte_cap or start + taken <= self._put
        if fenced or at_limit or self._is_full():
            return taken  # split inside the transaction; the last item carries the resume skip
        return 0

    def _bytes(self, first: int, last: int) -> int:
        return sum(self._sizes[seq & self._mask] for seq in range(first, last + 1))

    def _item(self, seq: int) -> LogItem:
        item = self._slots[seq & self._mask]
        assert item is not None, f"store slot for seq {seq} is empty"
        return item

    # ------------------------------------------------------------ ack/rollback
    def ack(self, target: Batch | int) -> int:
        """Free every item up to ``target`` (a batch or its ``last_seq``); returns items freed.

        Acking at or below the ack cursor again is a no-op returning 0; acking beyond what was
        handed out raises ValueError.
        """
        seq = target.last_seq if isinstance(target, Batch) else int(target)
        with self._not_full:
            if seq <= self._ack:
                return 0
            if seq > self._get:
                raise ValueError(
                    f"cannot ack seq {seq}: only up to {self._get} was handed out; "
                    "ack batches returned by get()."
                )
            if isinstance(target, Batch) and self._slots[seq & self._mask] is not target.items[-1]:
                raise ValueError(
                    "the acked batch does not come from this store; ack its own batches."
                )
            self._acked_end = self._item(seq).after
            self._ack_mem += self._bytes(self._ack + 1, seq)
            for s in range(self._ack + 1, seq + 1):
                self._slots[s & self._mask] = None
            count, self._ack = seq - self._ack, seq
            while self._handed and self._handed[0].last_seq <= seq:
                self._handed.popleft()
            if self._handed and self._handed[0].first_seq <= seq:
                head = self._handed.popleft()
                rest = head.items[seq + 1 - head.first_seq :]
                self._handed.appendleft(Batch(seq + 1, head.last_seq, rest, head.end))
            self._acks += 1
            self._not_full.notify_all()
            return count

    def rollback(self) -> None:
        """Move the get cursor back to the ack cursor; un-acked batches are replayed unchanged."""
        with self._not_full:
            self._replay.extendleft(reversed(self._handed))
            self._handed.clear()
            self._get, self._get_mem = self._ack, self._ack_mem
            self._rollbacks += 1
            self._not_empty.notify_all()

    def close(self, error: BaseException | None = None) -> None:
        """Refuse further puts and wake every waiter; ``error`` is raised by drained gets."""
        with self._not_full:
            self._closed = True
            if error is not None and self._error is None:
                self._error = error
            self._not_full.notify_all()
            self._not_empty.notify_all()

    # ------------------------------------------------------------ inspection
    @property
    def closed(self) -> bool:
        return self._closed

    def peek_end(self) -> Offset | None:
        """The ``after`` offset of the newest item put (the latest known offset), if any."""
        with self._not_full:
            return self._latest

    @property
    def acked_end(self) -> Offset | None:
        """The ``after`` offset of the newest acked item, if any."""
        with self._not_full:
            return self._acked_end

    @property
    def full(self) -> bool:
        """Whether the producer must wait for an ack to put more."""
        with self._not_full:
            return self._is_full()

    @property
    def pending_items(self) -> int:
        with self._not_full:
            return self._put - self._get

    @property
    def pending_bytes(self) -> int:
        with self._not_full:
            return self._put_mem - self._get_mem

    def stats(self) -> StoreStats:
        with self._not_full:
            return StoreStats(
                puts=self._puts,
                gets=self._gets,
                acks=self._acks,
                rollbacks=self._rollbacks,
                splits=self._splits,
                put_seq=self._put,
                get_seq=self._get,
                ack_seq=self._ack,
                put_mem=self._put_mem,
                get_mem=self._get_mem,
                ack_mem=self._ack_mem,
            )
