"""Binlog offsets: a position in a MySQL/MariaDB binary log (:class:`~sparkcdc.core.offset.Offset`).

::

    file, pos   the binlog file and the byte position where the next transaction starts (the
                GTID event that opens it); for a split transaction, where it started
    gtid        the GTID position of everything before, as the server prints it: MariaDB's
                ``domain-server-seq[,...]``, MySQL's GTID set ``uuid:1-9[:tag:1-3][,...]`` (tags:
                MySQL 8.3+; a set without them reads as it always did)
    skip        row events of the transaction at (file, pos) already delivered; 0 at a boundary

Ordering rule: by binlog file sequence number, then ``pos``, then ``skip``; ``gtid`` is derived
and takes no part. ``file == ""`` with a ``gtid`` means "start from this GTID position" and is
resolved to a file and position before the stream opens.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace

import pyarrow as pa

from sparkcdc.core.offset import Offset, OffsetJSON

_FILE_SEQ = re.compile(r"\.(\d+)$")


def file_sequence(binlog_file: str) -> int:
    """The numeric suffix of a binlog file name (``mysql-bin.000012`` → 12)."""
    match = _FILE_SEQ.search(binlog_file)
    if not match:
        raise ValueError(f"not a binlog file name: {binlog_file!r}")
    return int(match.group(1))


@dataclass(frozen=True, eq=False)
class BinlogOffset(Offset):
    """A position in a MySQL/MariaDB binary log; see the module docstring for the fields."""

    SOURCE_FIELDS = (
        pa.field("server_id", pa.int64()),
        pa.field("file", pa.string()),
        pa.field("pos", pa.int64()),
        pa.field("row", pa.int32()),
        pa.field("gtid", pa.string()),
    )
    EVENT_COUNTER = "row"

    file: str
    pos: int
    gtid: str = ""
    skip: int = 0

    @property
    def position_key(self) -> tuple[int, int]:
        return (file_sequence(self.file), self.pos)

    def with_skip(self, skip: int) -> BinlogOffset:
        return replace(self, skip=skip)

    def to_json(self) -> OffsetJSON:
        return {"file": self.file, "pos": self.pos, "gtid": self.gtid, "skip": self.skip}

    @classmethod
    def from_json(cls, value: Mapping[str, object]) -> BinlogOffset:
        try:
            offset = cls(
                file=str(value["file"]),
                pos=int(str(value["pos"])),
                gtid=str(value.get("gtid", "")),
                skip=int(str(value.get("skip", 0))),
            )
            if offset.file:
                file_sequence(offset.file)  # ordered by it
            return offset
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"not a binlog offset: {value!r}") from exc

    def source_fields(self) -> dict[str, object]:
        """An event at this offset that no binlog event names (a snapshot read, a notification):
        its file, position and GTID position; no server id or row."""
        return {"server_id": None, "file": self.file, "pos": self.pos, "row": None,
                "gtid": self.gtid}  # fmt: skip

    def __str__(self) -> str:
        tail = f"+{self.skip} events" if self.skip else ""
        gtid = f" gtid {self.gtid}" if self.gtid else ""
        return f"{self.file}:{self.pos}{tail}{gtid}"
