"""LSN offsets: a place in a PostgreSQL write-ahead log (:class:`~sparkcdc.core.offset.Offset`).

::

    lsn    every transaction whose commit record starts before it is delivered, none other
           (a logical slot's confirmed position): at a boundary the end of the last commit
           record delivered, inside a transaction the start of its commit record
    skip   changes of the transaction whose commit record starts at ``lsn`` already
           delivered; 0 at a boundary

pgoutput sends transactions in commit order, each after its commit, and
``START_REPLICATION … LOGICAL lsn`` sends exactly the transactions whose commit record starts
at or after ``lsn``. An exported snapshot taken at a slot's consistent point ``c`` sees exactly
the transactions committed before ``c``, so a change lies after that snapshot exactly when its
offset is at or past ``LsnOffset(c)``.

Ordering rule: by ``lsn``, then ``skip``. ``position_key`` splits the LSN into its two 32-bit
halves (as PostgreSQL prints it, ``X/Y``) so the change log's position text, ten digits a part,
sorts as LSNs do.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

import pyarrow as pa

from sparkcdc.core.offset import Offset, OffsetJSON
from sparkcdc.sources.postgres.wire.lsn import format_lsn, parse_lsn


@dataclass(frozen=True, eq=False)
class LsnOffset(Offset):
    """A place in a PostgreSQL write-ahead log; see the module docstring for the fields."""

    SOURCE_FIELDS = (
        pa.field("lsn", pa.int64()),
        pa.field("txid", pa.int64()),
    )

    lsn: int
    skip: int = 0

    @property
    def position_key(self) -> tuple[int, int]:
        return (self.lsn >> 32, self.lsn & 0xFFFFFFFF)

    @classmethod
    def of(cls, offset: Offset) -> LsnOffset:
        """``offset``, which must be a PostgreSQL one."""
        if not isinstance(offset, LsnOffset):
            raise TypeError(f"{offset!r} is not a PostgreSQL LSN offset")
        return offset

    def with_skip(self, skip: int) -> LsnOffset:
        return replace(self, skip=skip)

    def to_json(self) -> OffsetJSON:
        return {"lsn": format_lsn(self.lsn), "skip": self.skip}

    @classmethod
    def from_json(cls, value: Mapping[str, object]) -> LsnOffset:
        try:
            lsn, skip = parse_lsn(str(value["lsn"])), int(str(value.get("skip", 0)))
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"not a PostgreSQL LSN offset: {value!r}") from exc
        if skip < 0:
            raise ValueError(f"not a PostgreSQL LSN offset: {value!r}")
        return cls(lsn, skip)

    def source_fields(self) -> dict[str, object]:
        """An event at this offset that no WAL record names (a snapshot read, a notification):
        the LSN, no transaction id."""
        return {"lsn": self.lsn, "txid": None}

    def __str__(self) -> str:
        tail = f"+{self.skip} changes" if self.skip else ""
        return f"{format_lsn(self.lsn)}{tail}"
