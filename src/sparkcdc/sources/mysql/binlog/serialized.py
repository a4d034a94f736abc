"""MySQL's self-describing binary format ("mysql::serialization", MySQL 8.3+), and the one event
the log reader needs from it: GTID_TAGGED_LOG_EVENT (42).

Variable-length integers take 1 to 9 bytes, little-endian. The low bits of the first byte say
how many: n - 1 one-bits, then a zero bit, then the value (n <= 8), or eight one-bits and the
value in the 8 bytes that follow (n == 9). A signed integer is stored zig-zag (``x << 1`` for
x >= 0, ``(-(x + 1) << 1) | 1`` below 0). A string is its length, then its bytes; a fixed array
is its elements back to back.

A message is the format version (1 byte), its size in bytes from that byte on, the id of its
last field a reader must know, then its fields in increasing id order, each as its id and its
value (fields equal to their default may be left out). A tagged GTID event's fields::

    0 flags (u8)      1 source uuid (16 x u8)    2 transaction number (i64)    3 tag (string)
    4 last committed  5 sequence number          6 commit timestamp (µs)       7 original one
    8 transaction length  9 server version  10 original server version  11 commit group ticket

The reader needs the first four only; the rest follow in the event and are not read.
"""

from __future__ import annotations

from typing import NamedTuple

_SID, _GNO, _TAG, _FLAGS = 1, 2, 3, 0


def read_varlen(data: bytes, p: int, end: int) -> tuple[int, int]:
    """The unsigned variable-length integer at ``data[p:end]``: (value, position after it);
    ValueError if it runs past ``end``."""
    if p >= end:
        raise ValueError(f"a variable-length integer expected at byte {p}, the data ends there")
    first = data[p]
    size = 1
    while size <= 8 and first >> (size - 1) & 1:
        size += 1
    if p + size > end:
        raise ValueError(f"a {size}-byte integer at byte {p} runs past the end ({end})")
    raw = int.from_bytes(data[p : p + size], "little")
    return raw >> min(size, 8), p + size


def read_signed(data: bytes, p: int, end: int) -> tuple[int, int]:
    """A signed (zig-zag) variable-length integer: (value, position after it)."""
    raw, p = read_varlen(data, p, end)
    return (-(raw >> 1) - 1 if raw & 1 else raw >> 1), p


def varlen(value: int) -> bytes:
    """``value`` (0 <= value < 2**64) as an unsigned variable-length integer."""
    if not 0 <= value < 1 << 64:
        raise ValueError(f"{value} does not fit an unsigned 64-bit integer")
    for size in range(1, 9):
        if value < 1 << (7 * size):
            header = (1 << (size - 1)) - 1
            return ((value << size) | header).to_bytes(size, "little")
    return b"\xff" + value.to_bytes(8, "little")


class TaggedGtid(NamedTuple):
    """What the log reader takes from a GTID_TAGGED_LOG_EVENT."""

    flags: int
    sid: bytes  # the source uuid's 16 bytes
    gno: int
    tag: str  # "" when the event carries none


def parse_tagged_gtid(data: bytes, p: int, end: int) -> TaggedGtid:
    """The tagged GTID message at ``data[p:end]`` (see the module docstring); ValueError if it
    is not one."""
    p += 1  # the format version
    size, q = read_varlen(data, p, end)
    stop = p - 1 + size
    if stop > end or size < 3:
        raise ValueError(f"the message says it holds {size} bytes, the event has {end - p + 1}")
    _, p = read_varlen(data, q, stop)  # the last field a reader must know
    flags, sid, gno, tag = 0, b"", -1, ""
    while p < stop:
        field, p = read_varlen(data, p, stop)
        if field == _FLAGS:
            flags, p = read_varlen(data, p, stop)
        elif field == _SID:
            out = bytearray()
            for _ in range(16):
                byte, p = read_varlen(data, p, stop)
                out.append(byte & 0xFF)
            sid = bytes(out)
        elif field == _GNO:
            gno, p = read_signed(data, p, stop)
        elif field == _TAG:
            length, p = read_varlen(data, p, stop)
            if p + length > stop:
                raise ValueError(f"the tag's {length} bytes run past the message")
            tag = data[p : p + length].decode("ascii").lower()
            p += length
        else:
            break  # the fields after the tag: not needed
    if not sid or gno < 1:
        raise ValueError("the message holds no source uuid or no transaction number")
    return TaggedGtid(flags, sid, gno, tag)
