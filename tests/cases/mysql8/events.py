"""MySQL 8 binlog events, byte by byte (libbinlogevents: ``binlog_event.h``, ``control_events.h``,
``statement_events.h``, ``rows_event.h``).

Every event is the 19-byte common header (timestamp u32, type u8, server_id u32, event size
u32, next position u32 = where this event ends in its file, flags u16), a post-header of the
length the FORMAT_DESCRIPTION announces for its type, a body, and a CRC32 of all of it when
checksums are on. :func:`event` frames a post-header+body; the builders below make the bodies.
"""

from __future__ import annotations

import struct
import zlib

from tests.cases.mysql8.gtids import GtidSet, varlen

QUERY, ROTATE, FORMAT_DESCRIPTION, XID, TABLE_MAP, HEARTBEAT = 2, 4, 15, 16, 19, 27
WRITE_ROWS, UPDATE_ROWS, DELETE_ROWS = 30, 31, 32
GTID, ANONYMOUS_GTID, PREVIOUS_GTIDS = 33, 34, 35
TRANSACTION_PAYLOAD, HEARTBEAT_V2, GTID_TAGGED = 40, 41, 42

BINLOG_IN_USE = 0x1  # LOG_EVENT_BINLOG_IN_USE_F: the file is open (FORMAT_DESCRIPTION)
ARTIFICIAL = 0x20  # LOG_EVENT_ARTIFICIAL_F: made up by the dump thread
STMT_END_F = 0x1  # rows event flag: the last rows event of its statement
TM_BIT_LEN_EXACT_F = 0x1  # TABLE_MAP flag MySQL always sets
FLAG_MAY_HAVE_SBR = 0x1  # GTID flag: the transaction may hold statements (DDL)
ZSTD, NONE = 0, 255  # transaction payload compression types

HEADER = struct.Struct("<IBIIIH")
_GTID_POST = struct.Struct("<B16sqBqq")  # flags, sid, gno, lt_type, last_committed, sequence


def event(
    type_code: int, body: bytes, timestamp: int, server_id: int, end: int, flags: int = 0,
    checksum: bool = True,
) -> bytes:  # fmt: skip
    """One whole event: header (``end`` is its next position), ``body``, CRC32 when on."""
    size = 19 + len(body) + (4 if checksum else 0)
    data = HEADER.pack(timestamp, type_code, server_id, size, end, flags) + body
    if checksum:
        return data + struct.pack("<I", zlib.crc32(data))
    return data


def packed(n: int) -> bytes:
    """A length-encoded (packed) integer (``net_store_length``)."""
    if n < 251:
        return bytes([n])
    if n < 1 << 16:
        return b"\xfc" + n.to_bytes(2, "little")
    if n < 1 << 24:
        return b"\xfd" + n.to_bytes(3, "little")
    return b"\xfe" + n.to_bytes(8, "little")


def post_header_lengths(version: str) -> bytes:
    """The post-header length per event type (1 ..) that MySQL ``version`` announces: 41 types
    for 8.0 (TRANSACTION_PAYLOAD's entry is 40, as 8.0 writes it), 42 for 8.4 (GTID_TAGGED, and
    the removed v1 rows events at 0)."""
    lens = [0, 13, 0, 8, 0, 0, 0, 0, 4, 0, 4, 0, 0, 0, 98, 0, 4, 26, 8, 0, 0, 0, 8, 8, 8, 2,
            0, 0, 0, 10, 10, 10, 42, 42, 0, 18, 52, 0, 10, 40, 0]  # fmt: skip
    major, minor = (int(x) for x in version.split(".")[:2])
    if (major, minor) >= (8, 3):
        lens[22:25] = [0, 0, 0]
        lens.append(0)
        lens[14] = 57 + len(lens)
    return bytes(lens)


def format_description(version: str, created: int) -> bytes:
    """FORMAT_DESCRIPTION body: binlog version 4, server version char[50], create timestamp,
    header length 19, the post-header lengths, the checksum algorithm (CRC32 = 1 or 0)."""
    return (
        struct.pack("<H", 4) + version.encode().ljust(50, b"\0") + struct.pack("<I", created)
        + bytes([19]) + post_header_lengths(version)
    )  # fmt: skip


def previous_gtids(gtids: GtidSet) -> bytes:
    """PREVIOUS_GTIDS body: the encoded GTID set (no post-header)."""
    return gtids.encoded()


def gtid_body(
    sid: bytes, gno: int, last_committed: int, sequence: int, commit_us: int, length: int,
    server_version: int, flags: int = 0,
) -> bytes:  # fmt: skip
    """GTID / ANONYMOUS_GTID body: flags, sid, gno, lt_type 2, last_committed, sequence_number
    [42-byte post-header]; immediate commit timestamp (7 bytes, µs; the original one equal, so
    bit 55 clear), transaction length (packed), immediate server version (4 bytes, bit 31 clear:
    the original one equal)."""
    return (
        _GTID_POST.pack(flags, sid, gno, 2, last_committed, sequence)
        + commit_us.to_bytes(7, "little") + packed(length)
        + struct.pack("<I", server_version)
    )  # fmt: skip


def gtid_event_size(length: int, checksum: bool = True) -> int:
    return 19 + 42 + 7 + len(packed(length)) + 4 + (4 if checksum else 0)


def zigzag(n: int) -> bytes:
    """A signed mysql::serialization integer: ``n << 1``, or ``(-(n + 1) << 1) | 1`` below 0."""
    return varlen(n << 1 if n >= 0 else (-(n + 1) << 1) | 1)


def gtid_tagged_body(
    sid: bytes, tag: str, gno: int, last_committed: int, sequence: int, commit_us: int,
    length: int, server_version: int, flags: int = 0,
) -> bytes:  # fmt: skip
    """GTID_TAGGED_LOG_EVENT body (MySQL 8.3+, a mysql::serialization message): format version
    2, the message's size from that byte on, the last field a reader must know (0), then by field
    id: 0 flags, 1 the uuid (16 integers), 2 gno (signed), 3 the tag (length, characters),
    4 last_committed and 5 sequence_number (signed), 6 the immediate commit timestamp, 8 the
    transaction length, 9 the immediate server version (7 and 10, the original ones, left out
    when equal to the immediate ones)."""
    fields = (
        varlen(0) + varlen(flags) + varlen(1) + b"".join(varlen(b) for b in sid)
        + varlen(2) + zigzag(gno) + varlen(3) + varlen(len(tag)) + tag.encode()
        + varlen(4) + zigzag(last_committed) + varlen(5) + zigzag(sequence)
        + varlen(6) + varlen(commit_us) + varlen(8) + varlen(length)
        + varlen(9) + varlen(server_version)
    )  # fmt: skip
    rest = varlen(0) + fields
    size = 1 + 1 + len(rest)
    while size != 1 + len(varlen(size)) + len(rest):
        size = 1 + len(varlen(size)) + len(rest)
    return b"\x02" + varlen(size) + rest


# QUERY status variables (statement_events.h), always written in increasing code order
Q_FLAGS2, Q_SQL_MODE, Q_CHARSET, Q_CATALOG_NZ, Q_UPDATED_DB_NAMES = 0, 1, 4, 6, 12
Q_EXPLICIT_DEFAULTS_FOR_TIMESTAMP, Q_DDL_LOGGED_WITH_XID = 16, 17
Q_DEFAULT_COLLATION_FOR_UTF8MB4, Q_SQL_REQUIRE_PRIMARY_KEY, Q_DEFAULT_TABLE_ENCRYPTION = 18, 19, 20
SQL_MODE_80 = 0x45A00020  # ONLY_FULL_GROUP_BY,STRICT_TRANS_TABLES,NO_ZERO_IN_DATE,NO_ZERO_DATE,
# ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION: MySQL 8's default sql_mode


def query_body(
    db: str, sql: str, thread_id: int = 8, ddl_xid: int | None = None, collation: int = 255,
) -> bytes:  # fmt: skip
    """QUERY body: thread id, exec time, db length, error code, status vars length
    [13-byte post-header]; status vars, db, NUL, statement. BEGIN carries FLAGS2, SQL_MODE,
    CATALOG_NZ, CHARSET and DEFAULT_COLLATION_FOR_UTF8MB4; a DDL (``ddl_xid`` given) also the
    updated database, its xid (atomic DDL) and, per statement kind, EXPLICIT_DEFAULTS_FOR_TIMESTAMP,
    SQL_REQUIRE_PRIMARY_KEY or DEFAULT_TABLE_ENCRYPTION."""
    status = bytes([Q_FLAGS2]) + struct.pack("<I", 0)
    status += bytes([Q_SQL_MODE]) + struct.pack("<Q", SQL_MODE_80)
    status += bytes([Q_CATALOG_NZ, 3]) + b"std"
    status += bytes([Q_CHARSET]) + struct.pack("<HHH", collation, collation, collation)
    words = sql.lower().split()
    kind = " ".join(words[:2])
    if ddl_xid is not None:
        status += bytes([Q_UPDATED_DB_NAMES, 1]) + db.encode() + b"\0"
        if kind in ("create table", "alter table") and "timestamp" in words:
            status += bytes([Q_EXPLICIT_DEFAULTS_FOR_TIMESTAMP, 1])
        status += bytes([Q_DDL_LOGGED_WITH_XID]) + struct.pack("<Q", ddl_xid)
    status += bytes([Q_DEFAULT_COLLATION_FOR_UTF8MB4]) + struct.pack("<H", 255)
    if ddl_xid is not None and kind in ("create table", "alter table"):
        status += bytes([Q_SQL_REQUIRE_PRIMARY_KEY, 0])
    if ddl_xid is not None and kind in ("create database", "create schema", "alter database",
                                        "alter schema"):  # fmt: skip
        status += bytes([Q_DEFAULT_TABLE_ENCRYPTION, 0])
    raw_db = db.encode() if ddl_xid is not None else b""
    head = struct.pack("<IIBHH", thread_id, 0, len(raw_db), 0, len(status))
    return head + status + raw_db + b"\0" + sql.encode()


def xid_body(xid: int) -> bytes:
    return struct.pack("<Q", xid)


def rotate_body(next_file: str, pos: int = 4) -> bytes:
    """ROTATE body: the position in the next file u64 [post-header], then its name."""
    return struct.pack("<Q", pos) + next_file.encode()


def heartbeat_v2_body(file: str, pos: int) -> bytes:
    """HEARTBEAT_LOG_EVENT_V2 body (its codec): field 1 the file name, field 2 the position
    (packed), each type, length, value as packed integers; 0 ends the fields."""
    name = file.encode()
    return packed(1) + packed(len(name)) + name + packed(2) + packed(len(packed(pos))) + \
        packed(pos) + packed(0)  # fmt: skip


def payload_body(compressed: bytes, uncompressed_size: int, compression: int = ZSTD) -> bytes:
    """TRANSACTION_PAYLOAD body (libbinlogevents' codec): COMPRESSION_TYPE (2), UNCOMPRESSED_SIZE
    (3, unless NONE), PAYLOAD_SIZE (1), each as packed type, packed length of the value, packed
    value; then the end mark 0 and the payload."""

    def field(kind: int, value: int) -> bytes:
        return packed(kind) + packed(len(packed(value))) + packed(value)

    out = field(2, compression)
    if compression != NONE:
        out += field(3, uncompressed_size)
    return out + field(1, len(compressed)) + packed(0) + compressed
