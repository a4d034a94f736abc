"""No event is skipped by falling through: the log reader's dispatch on hand-built MariaDB event
streams, with event types it does not decode placed anywhere in them."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sparkcdc.config.model import SourceConfig
from sparkcdc.core.errors import SourceError
from sparkcdc.core.logitem import LogItem
from sparkcdc.sources.mysql.binlog import events as ev
from sparkcdc.sources.mysql.binlog.event_kinds import SKIPPED
from sparkcdc.sources.mysql.binlog.reader import LogReader
from sparkcdc.sources.mysql.binlog.rows import RowsDecoder
from sparkcdc.sources.mysql.binlog.tablemap import TableMap
from sparkcdc.sources.mysql.offset import BinlogOffset
from sparkcdc.sources.mysql.schema.history import SchemaHistory
from sparkcdc.store.ring import EventStore
from tests.cases.binlog_events import SCHEMA, TMAP, event, fde, row, rows_event

FILE = "mysql-bin.000001"
DECODED = {
    ev.QUERY, ev.ROTATE, ev.FORMAT_DESCRIPTION, ev.XID, ev.TABLE_MAP, ev.HEARTBEAT, ev.GTID,
    *ev.ROWS_EVENTS, *ev.COMPRESSED_EVENTS, *ev.MYSQL_GTID_EVENTS, ev.MYSQL_PREVIOUS_GTIDS,
    ev.TRANSACTION_PAYLOAD, ev.HEARTBEAT_V2, ev.PARTIAL_UPDATE_ROWS,
}  # fmt: skip
UNKNOWN = st.integers(0, 255).filter(lambda t: t not in DECODED and t not in SKIPPED)


class MappedSchemas:
    """The schema state's part the dispatch uses, for the one table of TMAP (id 1)."""

    def __init__(self) -> None:
        self.mapped: set[int] = set()
        self.decoders = {False: RowsDecoder(TMAP, SCHEMA), True: RowsDecoder(TMAP, SCHEMA, True)}

    def table_map(self, tm: TableMap) -> None:
        self.mapped.add(tm.table_id)

    def has_table_map(self, table_id: int) -> bool:
        return table_id in self.mapped

    def decoder(self, table_id: int, typed: bool = False) -> tuple[TableMap, RowsDecoder, str]:
        return TMAP, self.decoders[typed], "s1"


def table_map_event(table_id: int = 1) -> bytes:
    body = table_id.to_bytes(6, "little") + b"\0\0" + b"\x04shop\0" + b"\x06orders\0"
    body += bytes([3, 3, 15, 246]) + bytes([4]) + struct.pack("<H", 20) + bytes([14, 2, 0b110])
    return body


class Stream:
    """Events at increasing positions of FILE; each one's position is its start."""

    def __init__(self) -> None:
        self.events: list[bytes] = []
        self.positions: list[int] = []
        self.pos = 4

    def add(self, type_: int, body: bytes) -> None:
        size = 19 + len(body) + 4
        self.events.append(event(type_, body, next_pos=self.pos + size))
        self.positions.append(self.pos)
        self.pos += size


def transactions(sizes: list[int], inject: dict[int, int]) -> tuple[Stream, list[int]]:
    """MariaDB transactions of ``sizes`` rows (GTID, TABLE_MAP, a rows event per row, XID) with
    an event of type ``inject[i]`` before the i-th event; the rows committed before each event."""
    s, committed, done = Stream(), [], 0
    s.add(ev.FORMAT_DESCRIPTION, fde()[19:-4] + b"\x01")
    plain: list[tuple[int, bytes, int]] = []
    for seq, size in enumerate(sizes, 1):
        plain.append((ev.GTID, struct.pack("<QIB", seq, 0, 0) + bytes(6), 0))
        plain.append((ev.TABLE_MAP, table_map_event(), 0))
        plain += [(ev.WRITE_ROWS_V1, rows_event(row(seq * 10 + i, b"n", None)), 0)
                  for i in range(size)]  # fmt: skip
        plain.append((ev.XID, struct.pack("<Q", seq), size))
    for i, (type_, body, rows) in enumerate(plain):
        if i in inject:
            s.add(inject[i], bytes(12))
            committed.append(done)
        s.add(type_, body)
        committed.append(done)
        done += rows
    return s, committed


def reader_of(tmp: Path) -> tuple[LogReader, list[LogItem]]:
    source = SourceConfig("127.0.0.1", 3306, "cdc", "", (r"shop\..*",))
    reader = LogReader(source, BinlogOffset(FILE, 4), EventStore(), SchemaHistory(tmp / "h.jsonl"))
    reader.schemas = MappedSchemas()  # type: ignore[assignment]
    put: list[LogItem] = []
    reader._put = reader.cutter.put = put.append  # type: ignore[method-assign]
    return reader, put


def delivered(reader: LogReader, put: list[LogItem]) -> int:
    reader.cutter.flush()
    return sum(item.rows for item in put if not item.is_ddl)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    sizes=st.lists(st.integers(1, 3), min_size=1, max_size=4),
    where=st.integers(0, 40),
    unknown=UNKNOWN,
    skipped=st.lists(st.tuples(st.integers(0, 40), st.sampled_from(sorted(SKIPPED))), max_size=3),
)
def test_an_unknown_event_anywhere_stops_the_stream_and_nothing_after_it_is_delivered(
    tmp_path: Path, sizes: list[int], where: int, unknown: int, skipped: list[tuple[int, int]]
) -> None:
    inject = dict(skipped)
    at = where % (sum(sizes) + 3 * len(sizes))
    inject[at] = unknown
    stream, committed = transactions(sizes, inject)
    index = next(i for i, e in enumerate(stream.events) if e[4] == unknown and i > 0)
    reader, put = reader_of(tmp_path)
    with pytest.raises(SourceError, match=f"type {unknown} at {FILE}:{stream.positions[index]} "):
        reader.follow(BinlogOffset(FILE, 4), iter([stream.events]))
    assert delivered(reader, put) == committed[index]


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    sizes=st.lists(st.integers(1, 3), min_size=1, max_size=4),
    skipped=st.lists(st.tuples(st.integers(0, 40), st.sampled_from(sorted(SKIPPED))), max_size=4),
)
def test_listed_events_are_skipped_and_every_row_arrives(
    tmp_path: Path, sizes: list[int], skipped: list[tuple[int, int]]
) -> None:
    stream, _ = transactions(sizes, dict(skipped))
    reader, put = reader_of(tmp_path)
    reader.follow(BinlogOffset(FILE, 4), iter([stream.events]))
    assert delivered(reader, put) == sum(sizes)


def test_a_rows_event_whose_table_map_never_came_stops_the_stream(tmp_path: Path) -> None:
    stream = Stream()
    stream.add(ev.FORMAT_DESCRIPTION, fde()[19:-4] + b"\x01")
    stream.add(ev.GTID, struct.pack("<QIB", 1, 0, 0) + bytes(6))
    stream.add(ev.WRITE_ROWS_V1, rows_event(row(1, b"n", None)))
    reader, put = reader_of(tmp_path)
    reader.schemas.decoder = lambda table_id, typed=False: None  # type: ignore[method-assign]
    with pytest.raises(SourceError, match=f"rows event at {FILE}:{stream.positions[2]} for table"):
        reader.follow(BinlogOffset(FILE, 4), iter([stream.events]))
    assert delivered(reader, put) == 0
