"""What the event store hands out: batches of consecutive items, and snapshots of its counters."""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from sparkcdc.core.logitem import LogItem
from sparkcdc.core.offset import Offset


@dataclass(frozen=True, slots=True)
class Batch:
    """Consecutive items ``first_seq..last_seq`` handed out by one :meth:`EventStore.get`."""

    first_seq: int
    last_seq: int
    items: tuple[LogItem, ...]
    end: Offset

    @property
    def rows(self) -> int:
        return sum(item.rows for item in self.items)

    @property
    def size(self) -> int:
        return sum(item.size for item in self.items)

    @property
    def is_ddl(self) -> bool:
        return len(self.items) == 1 and self.items[0].is_ddl

    @property
    def is_split(self) -> bool:
        """True when the batch ends inside a transaction (``end.skip > 0``)."""
        return not self.end.at_boundary

    def record_batches(self) -> list[pa.RecordBatch]:
        return [item.batch for item in self.items if item.batch is not None]


@dataclass(frozen=True, slots=True)
class StoreStats:
    """A consistent snapshot of the store's cursors and counters, for progress reports."""

    puts: int
    gets: int
    acks: int
    rollbacks: int
    splits: int
    put_seq: int
    get_seq: int
    ack_seq: int
    put_mem: int
    get_mem: int
    ack_mem: int

    @property
    def pending_items(self) -> int:
        return self.put_seq - self.get_seq

    @property
    def pending_bytes(self) -> int:
        return self.put_mem - self.get_mem

    @property
    def used_bytes(self) -> int:
        return self.put_mem - self.ack_mem
