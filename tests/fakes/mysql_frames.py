"""A binlog file's events framed once as dump packets, for the MySQL 8 test primary.

A dump sends each event as one packet: 3-byte length, sequence number, 0x00, the event. Framing
them one by one in Python makes the test primary, not the reader, the bottleneck of a long dump,
where MySQL's dump thread sends a file's events at memory speed. :class:`FramedFile` keeps the
packets of a file back to back (extended as events are appended) with the offset of each, so a
dump from an event's start is a run of copies with the sequence numbers written in.
"""

from __future__ import annotations

import bisect
from array import array
from collections.abc import Iterator

import numpy as np

LARGEST = 0xFFFFFF - 2  # an event this long or longer needs two packets: framed one by one


def split(item: bytes, at: int = 0) -> Iterator[bytes]:
    """The whole events back to back in ``item`` from byte ``at``."""
    while at < len(item):
        size = int.from_bytes(item[at + 9 : at + 13], "little")
        yield item if at == 0 and size == len(item) else item[at : at + size]
        at += size


class FramedFile:
    """The packets of one file's events; :meth:`extend` with the file's items as they grow."""

    def __init__(self) -> None:
        self.blob = bytearray()
        self.starts = array("q")  # offset of each packet in blob
        self.positions: list[int] = []  # file position where each event starts
        self.items = 0  # how many of the file's items are framed
        self.end = 4  # file position after the last framed event
        self.oversized = False

    def extend(self, items: list[bytes]) -> None:
        """Frame the items appended since the last call."""
        blob, starts, positions = self.blob, self.starts, self.positions
        for item in items[self.items :]:
            for data in split(item):
                size = len(data) + 1
                if size > LARGEST:
                    self.oversized = True
                starts.append(len(blob))
                positions.append(self.end)
                blob += size.to_bytes(3, "little") + b"\0\0" + data
                self.end += len(data)
        self.items = len(items)

    def packets(self, pos: int, seq: int, chunk: int) -> tuple[Iterator[bytes], int] | None:
        """The packets of the events from file position ``pos`` on, numbered from ``seq``, in
        pieces of ``chunk`` bytes, and their count; None where this file cannot be sent so (no
        event starts at ``pos``, or an event needs more than one packet)."""
        at = bisect.bisect_left(self.positions, pos)
        if self.oversized or at == len(self.positions) or self.positions[at] != pos:
            return None
        heads = np.array(self.starts[at:], dtype=np.int64) + 3  # where each number goes
        total = len(self.blob)

        def pieces() -> Iterator[bytes]:
            lo, first = int(heads[0]) - 3, 0
            while lo < total:
                hi = min(lo + chunk, total)
                last = int(np.searchsorted(heads, hi))  # the numbers inside [lo, hi)
                piece = bytearray(self.blob[lo:hi])
                numbers = (np.arange(first, last, dtype=np.int64) + seq) & 0xFF
                np.frombuffer(piece, dtype=np.uint8)[heads[first:last] - lo] = numbers
                yield bytes(piece)
                lo, first = hi, last

        return pieces(), len(heads)
