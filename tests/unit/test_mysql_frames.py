"""The MySQL 8 test primary's framed files: the same bytes as framing each event on its own."""

from __future__ import annotations

import struct

from hypothesis import given
from hypothesis import strategies as st

from tests.fakes.mysql_frames import FramedFile


def _event(size: int, tag: int) -> bytes:
    """A stand-in event of ``size`` bytes (the header's length field is all the framing reads)."""
    return bytes([tag]) * 9 + struct.pack("<I", size) + bytes([tag]) * (size - 13)


def _one_by_one(events: list[bytes], seq: int) -> bytes:
    out = bytearray()
    for i, data in enumerate(events):
        out += struct.pack("<I", len(data) + 1)[:3] + bytes([(seq + i) & 0xFF]) + b"\0" + data
    return bytes(out)


@given(
    st.lists(st.integers(19, 90), min_size=1, max_size=300),
    st.integers(0, 255),
    st.integers(1, 200),
    st.data(),
)
def test_pieces_join_to_the_packets_framed_one_by_one(
    sizes: list[int], seq: int, chunk: int, data: st.DataObject
) -> None:
    events = [_event(size, i % 251) for i, size in enumerate(sizes)]
    items = [b"".join(events[:2]), *events[2:]]  # an item may hold several events
    framed = FramedFile()
    framed.extend(items[:1])
    framed.extend(items)  # appended later: framed on
    start = data.draw(st.integers(0, len(events) - 1))
    pos = 4 + sum(sizes[:start])
    found = framed.packets(pos, seq, chunk)
    assert found is not None
    pieces, count = found
    assert count == len(events) - start and framed.end == 4 + sum(sizes)
    assert b"".join(pieces) == _one_by_one(events[start:], seq)
    assert framed.packets(pos + 1, seq, chunk) is None  # not where an event starts
