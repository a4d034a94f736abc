"""Reading a private MariaDB server's binlog through the decoder, and the all-types table whose
rows the decoder tests write and compare."""

from __future__ import annotations

import base64
import datetime as dt
import itertools
from collections.abc import Iterator
from typing import Any

from sparkcdc.config.model import SourceConfig
from sparkcdc.core.images import ColumnarRows, StructMaker
from sparkcdc.core.schema import Column, TableSchema
from sparkcdc.sources.mysql.binlog import events as ev
from sparkcdc.sources.mysql.binlog.compressed import uncompressed
from sparkcdc.sources.mysql.binlog.protocol import ReplicationConnection
from sparkcdc.sources.mysql.binlog.rows import RowsDecoder
from sparkcdc.sources.mysql.schema.column_types import BINARY_TYPES
from sparkcdc.sources.mysql.server.catalog import MySQLCatalog
from sparkcdc.sources.mysql.throwaway import ThrowawayMariaDB

server_ids = itertools.count(7001)


Event = tuple[ev.EventHeader, ev.FormatDescription | None, bytes]


def iter_events(
    host: str,
    port: int,
    user: str,
    password: str,
    file: str,
    pos: int,
    server_id: int,
    stop: tuple[str, int] | None = None,
) -> Iterator[Event]:
    """Raw events from ``file:pos`` with checksums on, each with the format description in
    force; ends after the event that reaches ``stop`` (file, position)."""
    conn = ReplicationConnection(SourceConfig(host, port, user, password, ()))
    try:
        conn.query("SET @master_binlog_checksum='CRC32'")
        conn.query("SET @mariadb_slave_capability=4")
        fd: ev.FormatDescription | None = None
        current = file
        for data in itertools.chain.from_iterable(conn.dump(server_id, file, pos)):
            conn.set_timeout(30)
            header = ev.parse_header(data)
            if header.type == ev.FORMAT_DESCRIPTION:
                fd = ev.parse_format_description(data)
            elif header.type == ev.ROTATE:
                current = ev.parse_rotate(data, fd)[0]
            yield header, fd, data
            if stop and current == stop[0] and header.next_pos >= stop[1]:
                return
    finally:
        conn.close()


Change = tuple[str, str, str | None, Any, Any]


def read_changes(
    server: ThrowawayMariaDB,
    start: tuple[str, int],
    stop: tuple[str, int],
    schemas: dict[str, TableSchema],
    typed: bool = False,
    seen: set[int] | None = None,
) -> list[Change]:
    """Every row change between ``start`` and ``stop`` of the tables in ``schemas`` (``typed``:
    with typed row images; ``seen`` collects the event types met)."""
    decoders: dict[int, RowsDecoder] = {}
    changes: list[Change] = []
    for header, fd, data in iter_events(
        server.host, server.port, server.user, server.password, *start, next(server_ids), stop
    ):
        if seen is not None:
            seen.add(header.type)
        if header.type in ev.COMPRESSED_EVENTS:
            assert fd is not None
            etype, data = uncompressed(header.type, data, fd)
            header = header._replace(type=etype)
        if header.type == ev.TABLE_MAP:
            assert fd is not None
            tmap = ev.parse_table_map(data, fd)
            schema = schemas.get(f"{tmap.db}.{tmap.table}")
            if schema is not None:
                decoders[tmap.table_id] = RowsDecoder(tmap, schema, typed)
        elif header.type in ev.ROWS_EVENTS:
            assert fd is not None
            start_, end_ = ev.body_range(data, fd)
            table_id = int.from_bytes(data[start_ : start_ + 6], "little")
            if table_id in decoders:
                dec = decoders[table_id]
                decoded = dec.decode(header.type, data, start_, end_)
                for op, key, before, after in as_dicts(dec.schema, decoded) if typed else decoded:
                    changes.append((dec.schema.table, op, key, before, after))
    return changes


def as_dicts(schema: TableSchema, decoded: Any) -> list[tuple[Any, ...]]:
    """Typed changes with their images as Arrow gives them back, as dicts (or None)."""
    make = StructMaker(schema)
    if isinstance(decoded, ColumnarRows):  # the compiled decoder's buffers
        before, after = decoded.structs(make.fields)
        ops = [decoded.op] * len(decoded)
        return list(zip(ops, decoded.keys, before.to_pylist(), after.to_pylist(), strict=True))
    return [
        (op, key, make([b]).to_pylist()[0], make([a]).to_pylist()[0]) for op, key, b, a in decoded
    ]


def master_status(server: ThrowawayMariaDB) -> tuple[str, int]:
    file, pos = server.query("SHOW MASTER STATUS")[0][:2]
    return str(file), int(pos)


def load_schema(server: ThrowawayMariaDB, db: str, table: str) -> TableSchema:
    with MySQLCatalog(server.host, server.port, server.user, server.password) as catalog:
        return catalog.load_schema(db, table)


def expected_json(col: Column, value: Any) -> Any:
    """The JSON value core/schema.py promises for a value as the server returns it."""
    if value is None:
        return None
    t = col.data_type
    if t == "decimal":
        return f"{value:f}"
    if t == "bit":
        return int.from_bytes(value, "big")
    if t in BINARY_TYPES:
        return base64.b64encode(value).decode()
    if isinstance(value, str) and t in ("date", "datetime", "timestamp"):
        return None  # zero dates come back as text
    if t == "date":
        return value.isoformat()
    if t in ("datetime", "timestamp"):
        text = f"{value.year:04d}-{value:%m-%dT%H:%M:%S}.{value.microsecond:06d}"
        return text + ("Z" if t == "timestamp" else "")
    if t == "time":
        micros = value // dt.timedelta(microseconds=1)
        sign = "-" if micros < 0 else ""
        secs, us = divmod(abs(micros), 1_000_000)
        return f"{sign}{secs // 3600:02d}:{secs // 60 % 60:02d}:{secs % 60:02d}.{us:06d}"
    if t == "set" and isinstance(value, set):
        return ",".join(m for m in col.values if m in value)
    return value


ALL_TYPES = """
CREATE TABLE all_types (
  id INT PRIMARY KEY,
  ti TINYINT, tiu TINYINT UNSIGNED, si SMALLINT, siu SMALLINT UNSIGNED,
  mi MEDIUMINT, miu MEDIUMINT UNSIGNED, i INT, iu INT UNSIGNED,
  bi BIGINT, biu BIGINT UNSIGNED,
  d142 DECIMAL(14,2), d6530 DECIMAL(65,30), d100 DECIMAL(10,0), d94 DECIMAL(9,4),
  f FLOAT, dbl DOUBLE,
  b1 BIT(1), b10 BIT(10), b64 BIT(64),
  y YEAR,
  c CHAR(10) CHARACTER SET utf8mb4, vc VARCHAR(300) CHARACTER SET utf8mb4,
  tx TEXT CHARACTER SET utf8mb4,
  cl CHAR(5) CHARACTER SET latin1, vcl VARCHAR(20) CHARACTER SET latin1,
  txl TEXT CHARACTER SET latin1,
  j JSON,
  e ENUM('a','b','c'), s SET('x','y','z'),
  bin BINARY(4), vb VARBINARY(10), bl BLOB,
  dd DATE, tm6 TIME(6), tm3 TIME(3), tm1 TIME(1), tm0 TIME,
  dt0 DATETIME, dt1 DATETIME(1), dt2 DATETIME(2), dt3 DATETIME(3), dt4 DATETIME(4),
  dt5 DATETIME(5), dt6 DATETIME(6),
  ts3 TIMESTAMP(3) NULL DEFAULT NULL, ts0 TIMESTAMP NULL DEFAULT NULL
) DEFAULT CHARSET=utf8mb4
"""
COLUMNS = (
    "id, ti, tiu, si, siu, mi, miu, i, iu, bi, biu, d142, d6530, d100, d94, f, dbl, b1, b10, b64,"
    " y, c, vc, tx, cl, vcl, txl, j, e, s, bin, vb, bl, dd, tm6, tm3, tm1, tm0,"
    " dt0, dt1, dt2, dt3, dt4, dt5, dt6, ts3, ts0"
)


D65_MAX = "9" * 35 + "." + "9" * 30
MIN_ROW = (
    "(1, -128, 0, -32768, 0, -8388608, 0, -2147483648, 0, -9223372036854775808, 0,"
    f" -999999999999.99, -{D65_MAX}, -9999999999, -99999.9999, -3.25, -1.7976931348623157e308,"
    " b'0', b'0', b'0', 1901, '', '', '', '', '', '', '[]', 'a', '', x'', x'', x'',"
    " '1000-01-01', '-838:59:59.000000', '-838:59:59.000', '-838:59:59.0', '-838:59:59',"
    " '1000-01-01 00:00:00', '1000-01-01 00:00:00.0', '1000-01-01 00:00:00.00',"
    " '1000-01-01 00:00:00.000', '1000-01-01 00:00:00.0000', '1000-01-01 00:00:00.00000',"
    " '1000-01-01 00:00:00.000000', '1970-01-01 05:00:01.000', '1970-01-01 05:00:01')"
)
MAX_ROW = (
    "(2, 127, 255, 32767, 65535, 8388607, 16777215, 2147483647, 4294967295,"
    " 9223372036854775807, 18446744073709551615,"
    f" 999999999999.99, {D65_MAX}, 9999999999, 99999.9999, 3.4e38, 1.7976931348623157e308,"
    " b'1', b'1111111111', x'FFFFFFFFFFFFFFFF', 2155,"
    " 'ünï😀 ok', REPEAT('é😀', 150), REPEAT('日本語😀', 5000), 'àéîõü', '€ŠŽœŸ',"
    " 'Ærøskøbing', '{\"a\": [1, 2.5, \"ü😀\"], \"b\": null}', 'c', 'x,y,z',"
    " x'61620000', x'00FF00', x'000102FF00',"
    " '9999-12-31', '838:59:59.000000', '838:59:59.000', '838:59:59.0', '838:59:59',"
    " '9999-12-31 23:59:59', '9999-12-31 23:59:59.9', '9999-12-31 23:59:59.99',"
    " '9999-12-31 23:59:59.999', '9999-12-31 23:59:59.9999', '9999-12-31 23:59:59.99999',"
    " '9999-12-31 23:59:59.999999', '2038-01-19 08:14:07.999', '2038-01-19 08:14:07')"
)
NULL_ROW = "(3" + ", NULL" * 46 + ")"


MISC_ROW = (
    "(4, -1, 1, -1, 1, -1, 1, -1, 1, -1, 9223372036854775808,"
    " -0.01, -0.000000000000000000000000000001, 0, 0.0001, 3.14, 0.1,"
    " b'1', b'1000000001', x'8000000000000001', 0,"
    " 'ab  ', 'ab  ', 'tab\\there \"quoted\" \\\\ back', 'a\u0081',"
    " CONCAT('x', CHAR(129 USING latin1)),"
    " 'line\\nbreak', '\"just a string\"', 'nope', 'x,z',"
    " x'00', x'', x'0000',"
    " '0000-00-00', '-00:00:01.500000', '-00:00:01.500', '-00:00:01.5', '-00:00:01',"
    " '0000-00-00 00:00:00', '2024-02-29 13:14:15.1', '2024-02-29 13:14:15.12',"
    " '2024-02-29 13:14:15.123', '2024-02-29 13:14:15.1234', '2024-02-29 13:14:15.12345',"
    " '2024-02-29 13:14:15.123456', '2024-06-30 12:00:00.5', '0000-00-00 00:00:00')"
)


ROW5 = (
    "(5, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 1.5, 123456789012345678901234567890.5, 42, -1.5,"
    " 1e-10, -2.5e-300, b'0', b'0000000001', x'0000000000000000', 2024,"
    " 'z', '', '', 'Z', '', '', '{}', 'b', 'y',"
    " x'01020304', x'DEADBEEF', x'',"
    " '2024-01-02', '-123:04:05.000006', '100:00:00.001', '24:00:00.1', '00:00:00',"
    " '2000-01-01 00:00:00', '2000-01-01 00:00:00.1', '2000-01-01 00:00:00.01',"
    " '2000-01-01 00:00:00.001', '2000-01-01 00:00:00.0001', '2000-01-01 00:00:00.00001',"
    " '2000-01-01 00:00:00.000001', '2000-01-01 05:00:00.001', '2000-01-01 05:00:00')"
)
