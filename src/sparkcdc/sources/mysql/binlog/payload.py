"""MySQL 8's compressed transactions (``binlog_transaction_compression=ON``): the events inside a
TRANSACTION_PAYLOAD_EVENT (40).

The event's body (libbinlogevents' ``Transaction_payload_event`` codec) is a header of fields,
each a packed integer type, a packed integer length and a packed integer value, ended by type 0;
types 1, 2 and 3 are the payload size, the compression type (0 zstd, 255 none) and the
uncompressed size. The payload follows: the transaction's events (QUERY ``BEGIN``, TABLE_MAP,
rows events, XID) back to back, each with its common header, compressed as one zstd frame. The
GTID event that opens the transaction stays outside. The events inside carry no CRC32 of their
own (the payload event has one); a stream whose inner events do is read as well.
"""

from __future__ import annotations

import zstandard

from sparkcdc.core.errors import SourceError
from sparkcdc.sources.mysql.binlog.events import HEADER_LEN, verify_checksum
from sparkcdc.sources.mysql.binlog.tablemap import read_packed_int

_SIZE, _COMPRESSION, _UNCOMPRESSED = 1, 2, 3
ZSTD, NONE = 0, 255
_MAX_RATIO = 64  # bytes out per byte in, where nothing declares the inflated size


def inner_events(data: bytes, start: int, end: int, where: str) -> tuple[list[bytes], bool]:
    """The events inside the payload event ``data`` (body ``data[start:end]``) and whether
    they end in a CRC32; ``where`` (file:pos) names the event in errors."""
    fields: dict[int, int] = {}
    p = start
    while p < end:
        kind, p = read_packed_int(data, p)
        if kind == 0:
            break
        length, p = read_packed_int(data, p)
        if kind in (_SIZE, _COMPRESSION, _UNCOMPRESSED):
            fields[kind], p = read_packed_int(data, p)
        else:
            p += length
    size, compression = fields.get(_SIZE), fields.get(_COMPRESSION)
    if size is None or compression is None or p + size > end:
        raise SourceError(
            f"the compressed transaction at {where} has a damaged header; the stream stops "
            "here rather than skip its changes.",
        )
    raw = bytes(data[p : p + size])
    if compression == ZSTD:
        raw = _inflate(raw, fields.get(_UNCOMPRESSED), where)
    elif compression != NONE:
        raise SourceError(
            f"the transaction at {where} is compressed with algorithm {compression}, which "
            "sparkcdc cannot read (only zstd); set binlog_transaction_compression=OFF on the "
            "server.",
        )
    events = _split(raw, where)
    return events, bool(events) and verify_checksum(events[0])


def _inflate(frame: bytes, declared: int | None, where: str) -> bytes:
    """The zstd ``frame`` inflated in pieces, never past the size the header declares (or the
    frame's own, or a generous ratio when neither says): a damaged size or a bomb costs no
    more memory than the transaction it claims to be."""
    limit = declared
    if limit is None:
        known = zstandard.frame_content_size(frame) if len(frame) >= 18 else -1
        limit = known if known >= 0 else _MAX_RATIO * len(frame) + (1 << 20)
    pieces, total = [], 0
    try:
        for piece in zstandard.ZstdDecompressor().read_to_iter(frame, write_size=1 << 20):
            total += len(piece)
            if total > limit:
                raise zstandard.ZstdError(f"it inflates past the {limit} bytes it declares")
            pieces.append(piece)
    except zstandard.ZstdError as exc:
        raise SourceError(
            f"the compressed transaction at {where} does not inflate ({exc}); the stream "
            "stops here rather than skip its changes.",
        ) from exc
    if declared is not None and total != declared:
        raise SourceError(
            f"the compressed transaction at {where} inflates to {total} bytes where its header "
            f"says {declared}; the stream stops here rather than skip its changes.",
        )
    return b"".join(pieces)


def _split(raw: bytes, where: str) -> list[bytes]:
    events, p = [], 0
    while p < len(raw):
        size = int.from_bytes(raw[p + 9 : p + 13], "little")
        if size < HEADER_LEN or p + size > len(raw):
            raise SourceError(
                f"the compressed transaction at {where} holds a damaged event at byte {p} of "
                "its payload; the stream stops here rather than skip its changes.",
            )
        events.append(raw[p : p + size])
        p += size
    return events
