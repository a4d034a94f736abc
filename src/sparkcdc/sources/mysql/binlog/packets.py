"""The binlog dump's receive buffer split into its events: the packets held whole, each a binlog
event behind its OK byte. ``_packets.c`` does it when built (``scripts/setup.sh``); its Python
twin :func:`split_packets` runs otherwise, and the tests hold the two to the same output."""

from __future__ import annotations

from collections.abc import Callable

try:
    from sparkcdc.sources.mysql.binlog import _packets  # type: ignore[attr-defined]
except ImportError:  # not built: split in Python
    _packets = None

MAX_PACKET = 0xFFFFFF  # a packet this long continues in the next one


def split_packets(buf: bytearray, start: int, end: int) -> tuple[list[bytes], int, int]:
    """The binlog events whose packets ``buf[start:end]`` holds whole, in order, up to the
    first packet that is not one (held in part, empty, 16 MiB, an error or the end): (events,
    where that packet starts, the last sequence number taken or -1). The twin of
    ``_packets.split``, which runs instead when built."""
    events: list[bytes] = []
    view = memoryview(buf)
    s, seq = start, -1
    while end - s > 4:
        length = buf[s] | buf[s + 1] << 8 | buf[s + 2] << 16
        if length + 4 > end - s or not 0 < length < MAX_PACKET or buf[s + 4] != 0:
            break
        events.append(view[s + 5 : s + 4 + length].tobytes())
        seq = buf[s + 3]
        s += 4 + length
    return events, s, seq


split_events: Callable[[bytearray, int, int], tuple[list[bytes], int, int]] = (
    split_packets if _packets is None else _packets.split
)
