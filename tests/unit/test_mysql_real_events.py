"""Single events real MySQL servers wrote (``../shared/mysql-binlogs/events``), read by the
project's decoders with the FORMAT_DESCRIPTION of a MySQL 8.0.40 file: TABLE_MAP and rows events
of MySQL 8.0.16 (partition information in the rows event's extra data), MySQL Cluster 8.0.32
(NDB information there) and MySQL 5.7 (none), and three compressed transactions
(TRANSACTION_PAYLOAD). Expected: what go-mysql's ``TestRowsDataExtraData`` and
``TestTransactionPayloadEventDecode``, vitess' ``TestMysql56DecodeTransactionPayload`` and
mysql-binlog-connector-java's ``TransactionPayloadEventDataDeserializerTest`` assert, as the
project's change tuples (op, key, before, after)."""

from __future__ import annotations

import base64
import json
import struct
import zlib
from dataclasses import replace

import pytest

from sparkcdc.core.schema import TableSchema
from sparkcdc.sources.mysql.binlog import events as ev
from sparkcdc.sources.mysql.binlog.payload import inner_events
from sparkcdc.sources.mysql.binlog.rows import RowsDecoder
from sparkcdc.sources.mysql.schema.column_types import column
from tests.cases.mysql8.real import (
    MOVIE_COLUMNS,
    MOVIE_LENGTHS,
    ONCE_UPON_A_TIME,
    description,
    event_bytes,
    file_bytes,
    split_file,
)

FD = description(split_file(file_bytes("minimal_row_metadata.000001")))  # 8.0.40, CRC32
HEADER = struct.Struct("<IBIIIH")  # timestamp, type, server id, size, next position, flags
P_C = TableSchema("bdteste", "t", (column("p", "int", nullable=False), column("c", "int")), ("p",))
ID = TableSchema("test", "test", (column("id", "int", nullable=False),), ("id",))


def framed(event_type: int, body: bytes) -> bytes:
    """``body`` (post-header onwards) as a whole event with its CRC32."""
    data = HEADER.pack(0, event_type, 1, 19 + len(body) + 4, 0, 0) + body
    return data + zlib.crc32(data).to_bytes(4, "little")


def rows_of(name: str, event_type: int, schema: TableSchema) -> list[tuple[object, ...]]:
    table_map = ev.parse_table_map(framed(ev.TABLE_MAP, event_bytes(f"{name}.tablemap")), FD)
    data = framed(event_type, event_bytes(f"{name}.rows"))
    return list(RowsDecoder(table_map, schema).decode(event_type, data, 19, len(data) - 4))


def image(**values: object) -> str:
    return json.dumps(values, separators=(",", ":"))


@pytest.mark.parametrize(
    ("name", "event_type", "schema", "expected"),
    [
        ("gomysql_extra_0", ev.WRITE_ROWS_V2, P_C,  # MySQL Cluster 8.0.32: NDB extra data
         [("c", f"[{k}]", None, image(p=k, c=k)) for k in (1, 2, 4, 3, 5)]),
        ("gomysql_extra_1", ev.WRITE_ROWS_V2, ID,  # MySQL 8.0.16: into partition 3
         [("c", "[3]", None, image(id=3))]),
        ("gomysql_extra_2", ev.UPDATE_ROWS_V2, ID,  # from partition 3 to partition 1
         [("u", "[1]", image(id=3), image(id=1))]),
        ("gomysql_extra_3", ev.WRITE_ROWS_V2, ID, [("c", "[3]", None, image(id=3))]),  # 5.7
        ("gomysql_extra_4", ev.UPDATE_ROWS_V2, ID, [("u", "[1]", image(id=3), image(id=1))]),
    ],
    ids=["ndb-8.0.32", "partition-8.0.16-write", "partition-8.0.16-update", "5.7-write",
         "5.7-update"],
)  # fmt: skip
def test_rows_events_with_and_without_extra_data(
    name: str, event_type: int, schema: TableSchema, expected: list[tuple[object, ...]]
) -> None:
    assert rows_of(name, event_type, schema) == expected


def payload_events(data: bytes) -> tuple[list[bytes], ev.FormatDescription]:
    """The events inside a TRANSACTION_PAYLOAD event (no CRC32 of its own) and the format
    description they are read with (MySQL writes them without checksums)."""
    events, crc = inner_events(data, 19, len(data), "the payload")
    return events, replace(FD, checksum=crc)


def payload_body(name: str) -> bytes:
    body = event_bytes(name)
    return HEADER.pack(0, ev.TRANSACTION_PAYLOAD, 1, 19 + len(body), 0, 0) + body


def decoded(events: list[bytes], fd: ev.FormatDescription, schema: TableSchema) -> list[object]:
    """Per inner event: the QUERY's statement, the TABLE_MAP's db.table, a rows event's changes,
    "XID"."""
    out: list[object] = []
    table_map = None
    for data in events:
        kind = data[4]
        if kind == ev.QUERY:
            out.append(ev.parse_query(data, fd).sql)
        elif kind == ev.TABLE_MAP:
            table_map = ev.parse_table_map(data, fd)
            out.append(f"{table_map.db}.{table_map.table}")
        elif kind in ev.ROWS_EVENTS:
            assert table_map is not None
            out.append(list(RowsDecoder(table_map, schema).decode(kind, data, 19, len(data))))
        else:
            out.append({ev.XID: "XID"}.get(kind, kind))
    return out


def test_vitess_compressed_insert_of_two_customers() -> None:
    """vitess: BEGIN, vt_commerce.customer, [1 mlord@planetscale.com], [2 sup@…], COMMIT."""
    schema = TableSchema("vt_commerce", "customer", (
        column("customer_id", "bigint", nullable=False),
        column("email", "varbinary", length=128)), ("customer_id",))  # fmt: skip
    events, fd = payload_events(event_bytes("vitess_payload.event"))
    got = decoded(events, fd, schema)
    assert got[:2] == ["BEGIN", "vt_commerce.customer"] and got[3] == "XID"
    rows = [json.loads(after) for _, _, _, after in got[2]]  # type: ignore[union-attr]
    assert [(r["customer_id"], base64.b64decode(r["email"]).decode()) for r in rows] == [
        (1, "mlord@planetscale.com"), (2, "sup@planetscale.com")
    ]  # fmt: skip


def test_mysql_binlog_connector_javas_compressed_update_of_a_movie() -> None:
    """mysql-binlog-connector-java: BEGIN, demo.movies, the update of movie 1, XID."""
    schema = TableSchema("demo", "movies", tuple(
        column(n, "int", nullable=False) if n in ("id", "year") else
        column(n, "varchar", length=MOVIE_LENGTHS.get(n, 256), charset="utf8mb4", nullable=False)
        for n in MOVIE_COLUMNS), ("id",))  # fmt: skip
    events, fd = payload_events(payload_body("osheroff_payload.body"))
    got = decoded(events, fd, schema)
    assert got[0] == "BEGIN" and got[1] == "demo.movies" and got[3] == "XID"
    ((op, key, before, after),) = got[2]  # type: ignore[misc]
    was = ONCE_UPON_A_TIME
    assert (op, key, json.loads(before), json.loads(after)) == (
        "u", "[1]", was, {**was, "genre": "Western|Action"})  # fmt: skip


def test_go_mysqls_compressed_write_update_and_delete() -> None:
    """go-mysql: QUERY, then TABLE_MAP and WRITE, UPDATE and DELETE rows events, then XID. Their
    rows (compression_test.large_data: INT, LONGBLOB, TIMESTAMP) agree with each other: row 2
    as inserted is the before image of its update, both updates set data to 'updated' and keep
    the timestamps, and row 1 is deleted as updated."""
    schema = TableSchema("compression_test", "large_data", (
        column("id", "int", nullable=False), column("data", "longblob"),
        column("ts", "timestamp")), ("id",))  # fmt: skip
    events, fd = payload_events(payload_body("gomysql_payload_8027.body"))
    assert [e[4] for e in events] == [ev.QUERY, ev.TABLE_MAP, ev.WRITE_ROWS_V2, ev.TABLE_MAP,
                                      ev.UPDATE_ROWS_V2, ev.TABLE_MAP, ev.DELETE_ROWS_V2,
                                      ev.XID]  # fmt: skip
    got = decoded(events, fd, schema)
    (insert,), (first, second), (delete,) = got[2], got[4], got[6]  # type: ignore[misc]
    assert [c[:2] for c in (insert, first, second, delete)] == [
        ("c", "[2]"), ("u", "[1]"), ("u", "[2]"), ("d", "[1]")]  # fmt: skip
    assert second[2] == insert[3] and delete[2] == first[3]
    for _, _, before, after in (first, second):
        was, now = json.loads(before), json.loads(after)
        assert base64.b64decode(now["data"]) == b"updated"
        data = base64.b64decode(was["data"])  # a 64-digit hex digest, ten times
        assert data == data[:64] * 10 and int(data[:64], 16) and now["ts"] == was["ts"]
