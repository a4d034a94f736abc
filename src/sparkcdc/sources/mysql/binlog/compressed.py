"""MariaDB's compressed binlog events (``log_bin_compress=ON``) turned back into the events they
compress, so the rest of the reader never sees the difference.

MariaDB compresses the statement text of a QUERY event (QUERY_COMPRESSED, 165) and the row
images of a rows event (WRITE/UPDATE/DELETE_ROWS_COMPRESSED: 166–168 for v1, 169–171 for v2);
what comes before them (post-header, status variables and database, or table id, flags, column
count and bitmaps) is written as usual. The compressed part is one record::

    header      1 byte: bit 7 set; bits 4-6 the algorithm (0: zlib); bits 0-2 how many bytes
                hold the original length (1..4)
    length      the original length, big-endian
    data        a zlib stream
"""

from __future__ import annotations

import struct
import zlib

from sparkcdc.core.errors import SourceError
from sparkcdc.sources.mysql.binlog import events as ev
from sparkcdc.sources.mysql.binlog.tablemap import read_packed_int

UNCOMPRESSED = {
    ev.QUERY_COMPRESSED: ev.QUERY,
    ev.WRITE_ROWS_COMPRESSED_V1: ev.WRITE_ROWS_V1,
    ev.UPDATE_ROWS_COMPRESSED_V1: ev.UPDATE_ROWS_V1,
    ev.DELETE_ROWS_COMPRESSED_V1: ev.DELETE_ROWS_V1,
    ev.WRITE_ROWS_COMPRESSED: ev.WRITE_ROWS_V2,
    ev.UPDATE_ROWS_COMPRESSED: ev.UPDATE_ROWS_V2,
    ev.DELETE_ROWS_COMPRESSED: ev.DELETE_ROWS_V2,
}


def uncompressed(event_type: int, data: bytes, fd: ev.FormatDescription) -> tuple[int, bytes]:
    """The event a compressed event of ``event_type`` stands for: (its type, its bytes), the
    header's size and next position and the checksum bytes kept as they were."""
    inner = UNCOMPRESSED[event_type]
    start, end = ev.body_range(data, fd)
    if inner == ev.QUERY:
        status_len = struct.unpack_from("<H", data, start + 11)[0]
        p = start + fd.post_header_len(ev.QUERY) + status_len + data[start + 8] + 1
    else:
        p = start + (4 if fd.post_header_len(ev.WRITE_ROWS_V1) == 6 else 6) + 2
        if inner >= ev.WRITE_ROWS_V2:
            p += data[p] | data[p + 1] << 8
        ncols, p = read_packed_int(data, p)
        p += (ncols + 7) // 8 * (2 if inner in ev.UPDATE_ROWS else 1)
    body = inflate(data[p:end], event_type)
    return inner, data[:4] + bytes([inner]) + data[5:p] + body + data[end:]


def inflate(record: bytes, event_type: int) -> bytes:
    """The original bytes of one compressed record (module docstring)."""
    head = record[0] if record else 0
    width = head & 0x07
    if not head & 0x80 or head & 0x70 or not 1 <= width <= 4 or len(record) <= width:
        raise _unreadable(event_type, f"its record header 0x{head:02x} is not zlib's")
    size = int.from_bytes(record[1 : 1 + width], "big")
    inflater = zlib.decompressobj()
    try:  # never past the size the record declares (a damaged stream is no bomb)
        out = inflater.decompress(record[1 + width :], size + 1)
    except zlib.error as exc:
        raise _unreadable(event_type, str(exc)) from exc
    if len(out) != size or not inflater.eof:
        raise _unreadable(event_type, f"{len(out)} bytes inflated where it says {size}")
    return out


def _unreadable(event_type: int, why: str) -> SourceError:
    return SourceError(
        f"a MariaDB compressed binlog event (type {event_type}) cannot be inflated ({why}); "
        "the binlog is damaged or written by a server sparkcdc does not know",
        event_type=event_type,
    )
