"""Binlog offsets: immutable, totally ordered log positions that serialise to plain JSON.

An offset names the point in the binary log *after* which the next change is delivered. It is
taken only at a transaction boundary, except inside a transaction larger than the store's memory
limit, where a resume counter says how many of that transaction's row events were already handed
out (the split-with-resume of Canal's event store):

    file, pos   the binlog file and the byte position where the next transaction starts
                (the GTID event that opens it); for a split transaction, where it started
    gtid        the MariaDB GTID position (``domain-server-seq[,...]``) of everything before
    skip        row events of the transaction at (file, pos) already delivered; 0 at a boundary

Ordering rule: by binlog file sequence number, then ``pos``, then ``skip``. Two offsets with equal
(file, pos, skip) are equal whatever their ``gtid`` text says (it is derived information).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import total_ordering
from typing import Any

_FILE_SEQ = re.compile(r"\.(\d+)$")


def file_sequence(binlog_file: str) -> int:
    """The numeric suffix of a binlog file name (``mysql-bin.000012`` → 12)."""
    match = _FILE_SEQ.search(binlog_file)
    if not match:
        raise ValueError(f"not a binlog file name: {binlog_file!r}")
    return int(match.group(1))


@total_ordering
@dataclass(frozen=True)
class BinlogOffset:
    """A position in a MySQL/MariaDB binary log; see the module docstring for the fields."""

    file: str
    pos: int
    gtid: str = ""
    skip: int = 0

    @property
    def key(self) -> tuple[int, int, int]:
        return (file_sequence(self.file), self.pos, self.skip)

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, BinlogOffset):
            return NotImplemented
        return self.key < other.key

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, BinlogOffset):
            return NotImplemented
        return self.key == other.key

    def __hash__(self) -> int:
        return hash(self.key)

    @property
    def at_boundary(self) -> bool:
        """True when no part of a transaction is pending (``skip == 0``)."""
        return self.skip == 0

    def to_json(self) -> dict[str, Any]:
        return {"file": self.file, "pos": self.pos, "gtid": self.gtid, "skip": self.skip}

    @classmethod
    def from_json(cls, value: dict[str, Any]) -> BinlogOffset:
        try:
            return cls(
                file=str(value["file"]),
                pos=int(value["pos"]),
                gtid=str(value.get("gtid", "")),
                skip=int(value.get("skip", 0)),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"not a binlog offset: {value!r}") from exc

    def __str__(self) -> str:
        tail = f"+{self.skip} events" if self.skip else ""
        gtid = f" gtid {self.gtid}" if self.gtid else ""
        return f"{self.file}:{self.pos}{tail}{gtid}"
