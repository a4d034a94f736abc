"""Offsets: immutable, totally ordered log positions that serialise to plain JSON.

An offset names the point in a source's log *after* which the next change is delivered. It is
taken only at a transaction boundary, except inside a transaction larger than the store's memory
limit, where a resume counter says how many of that transaction's events were already handed
out (the split-with-resume of Canal's event store)::

    position   where the next transaction starts in the log (a binlog file and byte position,
               a PostgreSQL LSN …); for a split transaction, where that transaction started
    skip       events of the transaction at ``position`` already delivered; 0 at a boundary

Ordering rule: by :attr:`Offset.position_key`, a tuple of integers that each source defines to
order as its log does, then by ``skip``. What else an offset carries (a GTID set) is derived
information and takes no part in order or equality.

Every source has its own subclass (``sources/<db>/offset.py``), a frozen dataclass declared with
``eq=False`` so that this class's ordering holds. Code past the source sees only this class: the
order, boundaries, JSON for Spark's checkpoint, and the source's own fields of the envelope's
``source`` struct (:data:`Offset.SOURCE_FIELDS`, Debezium's per-connector source block).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from functools import total_ordering
from typing import ClassVar, Self

import pyarrow as pa

from sparkcdc.core.json_value import JSONObject, JSONValue

__all__ = ["POSITION_DIGITS", "JSONValue", "Offset", "OffsetJSON", "position_text"]

OffsetJSON = JSONObject
"""An offset as plain JSON, the way Spark's checkpoint keeps it."""

POSITION_DIGITS = 10


_POSITION_FORMAT = f"%0{POSITION_DIGITS}d"


def position_text(*parts: int) -> str:
    """Integers as fixed-width text joined by ``:``, so texts order as the integers do."""
    return ":".join([_POSITION_FORMAT % p for p in parts])


@total_ordering
class Offset(ABC):
    """A log position of one source (see the module docstring)."""

    SOURCE_FIELDS: ClassVar[tuple[pa.Field, ...]] = ()
    """The source's own fields of the envelope's ``source`` struct, in order."""
    EVENT_COUNTER: ClassVar[str | None] = None
    """The one of :data:`SOURCE_FIELDS` that numbers the events of one log record (MySQL's
    ``row``: the index of a row in its rows event), if any."""

    skip: int

    @property
    @abstractmethod
    def position_key(self) -> tuple[int, ...]:
        """Where the transaction at this offset starts, as integers in log order."""

    @abstractmethod
    def with_skip(self, skip: int) -> Self:
        """The offset inside the transaction at this position after ``skip`` of its events."""

    @abstractmethod
    def to_json(self) -> OffsetJSON: ...

    @classmethod
    @abstractmethod
    def from_json(cls, value: Mapping[str, object]) -> Self:
        """The offset :meth:`to_json` wrote (keys it does not know are ignored; ValueError for
        a value that is no offset of this source)."""

    @abstractmethod
    def source_fields(self) -> dict[str, object]:
        """The values of :data:`SOURCE_FIELDS` for an event at this offset (None: null)."""

    def position(self) -> str:
        """The offset's place in the log as text that sorts in log order (``skip`` aside)."""
        return position_text(*self.position_key)

    @property
    def key(self) -> tuple[int, ...]:
        return (*self.position_key, self.skip)

    @property
    def at_boundary(self) -> bool:
        """True when no part of a transaction is pending (``skip == 0``)."""
        return self.skip == 0

    def same_transaction(self, other: Offset) -> bool:
        """Whether both offsets lie in (or at the start of) the same transaction."""
        return self.position_key == other.position_key

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Offset):
            return NotImplemented
        return self.key < other.key

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Offset):
            return NotImplemented
        return self.key == other.key

    def __hash__(self) -> int:
        return hash(self.key)
