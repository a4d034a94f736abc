"""Binlog event framing: the common header, the format description and the small events.

Every function takes one whole event as it comes off the replication stream (v4 binlog):

    common header (19 bytes)  timestamp u32, type u8, server_id u32, event size u32,
                              next position u32, flags u16 (all little-endian)
    post-header               fixed size per event type, announced by the FORMAT_DESCRIPTION
    body                      up to the end, minus a 4-byte CRC32 when checksums are on

The FORMAT_DESCRIPTION_EVENT (15) of a checksum-aware server (MySQL >= 5.6.1, MariaDB >= 5.3)
always ends with the checksum algorithm byte and a 4-byte checksum, whatever the setting; the
algorithm byte says whether the *other* events carry a CRC32 (1) or not (0). A replica only gets
checksummed events when it declares ``SET @master_binlog_checksum='CRC32'`` first.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass
from typing import NamedTuple

from sparkcdc.core.errors import SourceError
from sparkcdc.sources.mysql.binlog import tablemap as tm
from sparkcdc.sources.mysql.binlog.tablemap import TableMap, optional_metadata, read_packed_int

# event type codes (MySQL binlog_event.h, MariaDB log_event.h)
QUERY = 2
ROTATE = 4
FORMAT_DESCRIPTION = 15
XID = 16
TABLE_MAP = 19
WRITE_ROWS_V1 = 23
UPDATE_ROWS_V1 = 24
DELETE_ROWS_V1 = 25
HEARTBEAT = 27
WRITE_ROWS_V2 = 30
UPDATE_ROWS_V2 = 31
DELETE_ROWS_V2 = 32
ANNOTATE_ROWS = 160
BINLOG_CHECKPOINT = 161
GTID = 162
GTID_LIST = 163
START_ENCRYPTION = 164
QUERY_COMPRESSED = 165
WRITE_ROWS_COMPRESSED_V1 = 166
UPDATE_ROWS_COMPRESSED_V1 = 167
DELETE_ROWS_COMPRESSED_V1 = 168
WRITE_ROWS_COMPRESSED = 169
UPDATE_ROWS_COMPRESSED = 170
DELETE_ROWS_COMPRESSED = 171

WRITE_ROWS = frozenset({WRITE_ROWS_V1, WRITE_ROWS_V2})
UPDATE_ROWS = frozenset({UPDATE_ROWS_V1, UPDATE_ROWS_V2})
DELETE_ROWS = frozenset({DELETE_ROWS_V1, DELETE_ROWS_V2})
ROWS_EVENTS = WRITE_ROWS | UPDATE_ROWS | DELETE_ROWS
COMPRESSED_EVENTS = frozenset(range(QUERY_COMPRESSED, DELETE_ROWS_COMPRESSED + 1))
MYSQL_GTID = 33  # MySQL 5.6+: GTID_LOG_EVENT
MYSQL_ANONYMOUS_GTID = 34  # ANONYMOUS_GTID_LOG_EVENT (gtid_mode OFF)
MYSQL_PREVIOUS_GTIDS = 35  # PREVIOUS_GTIDS_LOG_EVENT, at the start of every MySQL binlog file
PARTIAL_UPDATE_ROWS = 39  # MySQL 8: an update with JSON diffs (binlog_row_value_options)
TRANSACTION_PAYLOAD = 40  # MySQL 8: a compressed transaction (binlog_transaction_compression)
HEARTBEAT_V2 = 41  # MySQL 8.0.26+: a heartbeat whose position may pass 4 GiB
MYSQL_GTID_TAGGED = 42  # MySQL 8.3+: GTID_TAGGED_LOG_EVENT (a tagged GTID, :mod:`.serialized`)
MYSQL_GTID_EVENTS = frozenset({MYSQL_GTID, MYSQL_ANONYMOUS_GTID, MYSQL_GTID_TAGGED})
TRANSACTION_STARTS = frozenset({GTID, *MYSQL_GTID_EVENTS})
"""The events that open a transaction, in either flavour."""
HEARTBEATS = frozenset({HEARTBEAT, HEARTBEAT_V2})

HEADER_LEN = 19
CHECKSUM_LEN = 4
FL_STANDALONE = 1  # MariaDB GTID flag: the event group has no BEGIN/COMMIT (DDL)
FL_GROUP_COMMIT_ID = 2  # MariaDB GTID flag: an 8-byte commit id follows

_HEADER = struct.Struct("<IBIIIH")


class EventHeader(NamedTuple):
    """The 19-byte common header of every binlog event."""

    timestamp: int
    type: int
    server_id: int
    size: int
    next_pos: int
    flags: int


def parse_header(data: bytes) -> EventHeader:
    return EventHeader._make(_HEADER.unpack_from(data, 0))


unpack_header = _HEADER.unpack_from
"""``unpack_header(data, 0)``: the :class:`EventHeader` fields as a plain tuple (cheaper)."""


@dataclass(frozen=True, slots=True)
class FormatDescription:
    """FORMAT_DESCRIPTION_EVENT: header length, post-header length per type, checksum use."""

    binlog_version: int
    server_version: str
    header_len: int
    post_header_lens: bytes
    checksum: bool

    def post_header_len(self, event_type: int) -> int:
        """The post-header size the server announced for ``event_type`` (0 if unknown)."""
        if 1 <= event_type <= len(self.post_header_lens):
            return self.post_header_lens[event_type - 1]
        return 0


def _checksum_aware(version: str) -> bool:
    """MySQL 5.6.1+ and MariaDB 5.3+ write the checksum algorithm byte into the FDE."""
    parts = [*version.split("-", 1)[0].split("."), "0", "0"][:3]
    major, minor, patch = (int("".join(c for c in d if c.isdigit()) or 0) for d in parts)
    if "mariadb" in version.lower():
        return (major, minor) >= (5, 3)
    return (major, minor, patch) >= (5, 6, 1)


def parse_format_description(data: bytes) -> FormatDescription:
    """Decode a FORMAT_DESCRIPTION_EVENT: binlog version u16, server version char[50],
    create timestamp u32, header length u8, post-header lengths, [algorithm u8, CRC32]."""
    p = HEADER_LEN
    binlog_version = struct.unpack_from("<H", data, p)[0]
    server_version = data[p + 2 : p + 52].split(b"\0", 1)[0].decode("ascii", "replace")
    header_len = data[p + 56]
    if _checksum_aware(server_version):
        algorithm = data[-5]
        lens = bytes(data[p + 57 : len(data) - 5])
    else:
        algorithm = 0
        lens = bytes(data[p + 57 :])
    if algorithm not in (0, 1):
        raise SourceError(
            f"the binlog uses checksum algorithm {algorithm}, which sparkcdc cannot read; "
            "set binlog_checksum to CRC32 or NONE"
        )
    return FormatDescription(binlog_version, server_version, header_len, lens, algorithm == 1)


def verify_checksum(data: bytes) -> bool:
    """True when the last 4 bytes are the CRC32 of everything before them."""
    return len(data) > CHECKSUM_LEN and zlib.crc32(data[:-CHECKSUM_LEN]) == int.from_bytes(
        data[-CHECKSUM_LEN:], "little"
    )


def body_range(data: bytes, fd: FormatDescription) -> tuple[int, int]:
    """(start of the post-header, end of the body before the checksum)."""
    return fd.header_len, len(data) - (CHECKSUM_LEN if fd.checksum else 0)


def parse_rotate(data: bytes, fd: FormatDescription | None) -> tuple[str, int]:
    """ROTATE_EVENT: position u64, then the next file name up to the end of the body.

    The replication stream opens with a fake rotate sent *before* any format description; pass
    ``fd=None`` for it and the checksum is detected by checking the CRC32.
    """
    if fd is None:
        end = len(data) - (CHECKSUM_LEN if verify_checksum(data) else 0)
        start = HEADER_LEN
    else:
        start, end = body_range(data, fd)
    pos = struct.unpack_from("<Q", data, start)[0]
    return data[start + 8 : end].decode("utf-8", "replace"), pos


@dataclass(frozen=True, slots=True)
class MariaGtid:
    """A MariaDB global transaction id ``domain-server_id-seq`` (and the GTID event flags)."""

    domain: int
    server_id: int
    seq: int
    flags: int = 0
    standalone: bool = False

    def __str__(self) -> str:
        return f"{self.domain}-{self.server_id}-{self.seq}"


unpack_gtid = struct.Struct("<QIB").unpack_from
"""``unpack_gtid(data, post-header start)``: (seq_no, domain_id, flags) of a GTID_EVENT."""


def parse_gtid(data: bytes, fd: FormatDescription) -> MariaGtid:
    """MariaDB GTID_EVENT (162): seq_no u64, domain_id u32, flags u8; server id from the header."""
    seq, domain, flags = unpack_gtid(data, fd.header_len)
    server_id = struct.unpack_from("<I", data, 5)[0]
    return MariaGtid(domain, server_id, seq, flags, bool(flags & FL_STANDALONE))


def parse_gtid_list(data: bytes, fd: FormatDescription) -> list[MariaGtid]:
    """MariaDB GTID_LIST_EVENT (163): count u32 (low 28 bits), then (domain u32, server u32,
    seq u64) per replication domain."""
    p = fd.header_len
    count = struct.unpack_from("<I", data, p)[0] & 0x0FFFFFFF
    p += 4
    out = []
    for _ in range(count):
        domain, server_id, seq = struct.unpack_from("<IIQ", data, p)
        out.append(MariaGtid(domain, server_id, seq))
        p += 16
    return out


class Query(NamedTuple):
    """QUERY_EVENT: the default database and the statement text."""

    db: str
    sql: str


def parse_query(data: bytes, fd: FormatDescription) -> Query:
    """QUERY_EVENT (2): thread id u32, exec time u32, db length u8, error code u16, status vars
    length u16 [post-header]; status vars, db, NUL, SQL text [body]."""
    start, end = body_range(data, fd)
    if data[4] == QUERY_COMPRESSED:
        raise ValueError("inflate a compressed query first (binlog.compressed.uncompressed)")
    db_len = data[start + 8]
    status_len = struct.unpack_from("<H", data, start + 11)[0]
    p = start + fd.post_header_len(QUERY) + status_len
    db = data[p : p + db_len].decode("utf-8", "replace")
    sql = data[p + db_len + 1 : end].decode("utf-8", "replace")
    return Query(db, sql)


STMT_END_F = 1  # rows event flag: the last rows event of its statement


def parse_rows_header(data: bytes, fd: FormatDescription) -> tuple[int, int]:
    """(table id, flags) of a WRITE/UPDATE/DELETE_ROWS event: table id u48 (u32 on servers
    that announce a 6-byte rows post-header), flags u16 (``STMT_END_F`` on a statement's last)."""
    start = fd.header_len
    id_len = 4 if fd.post_header_len(WRITE_ROWS_V1) == 6 else 6
    table_id = int.from_bytes(data[start : start + id_len], "little")
    return table_id, struct.unpack_from("<H", data, start + id_len)[0]


unpack_mysql_gtid = struct.Struct("<B16sq").unpack_from
"""``unpack_mysql_gtid(data, post-header start)``: (flags, sid, gno) of MySQL's GTID_LOG_EVENT
(33) and ANONYMOUS_GTID_LOG_EVENT (34, sid and gno zero); logical clock, commit timestamps,
transaction length and server versions follow (libbinlogevents' ``Gtid_event``)."""


_META_2_LE = {tm.T_VARCHAR, tm.T_VAR_STRING}
_META_1 = {
    tm.T_BLOB,
    tm.T_TINY_BLOB,
    tm.T_MEDIUM_BLOB,
    tm.T_LONG_BLOB,
    tm.T_GEOMETRY,
    tm.T_JSON,
    tm.T_FLOAT,
    tm.T_DOUBLE,
    tm.T_TIMESTAMP2,
    tm.T_DATETIME2,
    tm.T_TIME2,
}
_META_2_BE = {tm.T_NEWDECIMAL, tm.T_STRING, tm.T_ENUM, tm.T_SET}


def decode_column_meta(types: bytes, meta: bytes) -> tuple[int, ...]:
    """Per-column metadata as one integer each, in the encoding documented on TableMap."""
    out = []
    p = 0
    for t in types:
        if t in _META_1:
            out.append(meta[p])
            p += 1
        elif t in _META_2_LE:
            out.append(meta[p] | meta[p + 1] << 8)
            p += 2
        elif t in _META_2_BE:  # precision, scale / real type, length: first byte high
            out.append(meta[p] << 8 | meta[p + 1])
            p += 2
        elif t == tm.T_BIT:  # bits % 8, then bytes
            out.append(meta[p + 1] << 8 | meta[p])
            p += 2
        else:
            out.append(0)
    return tuple(out)


def parse_table_map(data: bytes, fd: FormatDescription) -> TableMap:
    """TABLE_MAP_EVENT (19): table id u48 (u32 on ancient servers), flags u16 [post-header];
    db (len u8, name, NUL), table (len u8, name, NUL), column count (packed), type codes,
    metadata (packed length + bytes), null bitmap, optional metadata (names and signedness:
    :func:`~.tablemap.optional_metadata`) [body]."""
    start, end = body_range(data, fd)
    post = fd.post_header_len(TABLE_MAP) or 8
    id_len = 4 if post == 6 else 6
    table_id = int.from_bytes(data[start : start + id_len], "little")
    p = start + post
    db_len = data[p]
    db = data[p + 1 : p + 1 + db_len].decode("utf-8", "replace")
    p += db_len + 2
    t_len = data[p]
    table = data[p + 1 : p + 1 + t_len].decode("utf-8", "replace")
    p += t_len + 2
    ncols, p = read_packed_int(data, p)
    types = bytes(data[p : p + ncols])
    p += ncols
    meta_len, p = read_packed_int(data, p)
    meta = decode_column_meta(types, data[p : p + meta_len])
    p += meta_len
    null_bits = int.from_bytes(data[p : p + (ncols + 7) // 8], "little")
    nullable = tuple(bool(null_bits >> i & 1) for i in range(ncols))
    names, unsigned = optional_metadata(types, data, p + (ncols + 7) // 8, end)
    return TableMap(table_id, db, table, types, meta, nullable, names, unsigned)
