"""Binlog event streams decoded in process by the log reader's event loop, for fuzzing.

:class:`DecodingReader` is the real :class:`~sparkcdc.sources.mysql.binlog.reader.LogReader`
without a server: :meth:`~DecodingReader.read` runs a list of events through its dispatch
(``follow``), as one dump connection would, and counts the store items instead of putting
them. Every table is captured; a table the stream names without a CREATE TABLE the tracker
could follow gets a schema made from its first TABLE_MAP (:func:`create_table_sql`), so rows of
every real file are decoded, not skipped.

Seeds (:func:`seed_streams`): each whole file of ``../shared/mysql-binlogs/files``, the single
events of ``events/`` behind a MySQL 8.0 format description, and streams of our own MySQL 8
writer (every column type, JSON, compressed transactions, anonymous GTIDs, a rotation).
MariaDB's come from a real server (``tests/integration/test_decoder_fuzz_servers.py``).
"""

from __future__ import annotations

import os
import re
import struct
import tempfile
import zlib
from collections.abc import Iterator
from pathlib import Path

from sparkcdc.config.model import SourceConfig
from sparkcdc.core.errors import SparkCDCError
from sparkcdc.core.logitem import LogItem
from sparkcdc.sources.mysql.binlog import tablemap as tm
from sparkcdc.sources.mysql.binlog.reader import LogReader
from sparkcdc.sources.mysql.offset import BinlogOffset
from sparkcdc.sources.mysql.schema.history import SchemaHistory, Schemas
from sparkcdc.sources.mysql.schema.state import SchemaState
from sparkcdc.sources.mysql.schema.tracker import SchemaTracker
from sparkcdc.store.ring import EventStore
from tests.cases.mysql8 import BinlogWriter, Column, Table, mixed_workload, single_row_inserts
from tests.cases.mysql8 import events as ev

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "mysql-binlogs"
FILE = "mysql-bin.000007"  # the file name every stream is read as
MAGIC = b"\xfebin"
_HEADER = struct.Struct("<IBIIIH")

# --------------------------------------------------------------------------- streams


def split_file(data: bytes) -> list[bytes]:
    """A binlog file's events (after the magic, if there) cut by their header's size field;
    a size that does not fit makes the rest one event (a damaged file stays one stream)."""
    p = 4 if data.startswith(MAGIC) else 0
    events = []
    while p < len(data):
        size = int.from_bytes(data[p + 9 : p + 13], "little") if len(data) - p >= 13 else 0
        if size < 19 or p + size > len(data):
            size = len(data) - p
        events.append(data[p : p + size])
        p += size
    return events


def join_file(events: list[bytes]) -> bytes:
    """The file image of ``events`` (what :func:`split_file` splits)."""
    return MAGIC + b"".join(events)


def fix_size(data: bytes) -> bytes:
    """An event whose header's size field says its length (after a mutation changed it)."""
    if len(data) < 13:
        return data
    return data[:9] + len(data).to_bytes(4, "little") + data[13:]


def _framed(type_code: int, body: bytes, end: int) -> bytes:
    """An event of ``body`` (post-header on) with a header and a CRC32 (MySQL 8.0's)."""
    return ev.event(type_code, body, 1_700_000_000, 1, end)


def _in_transaction(inner: list[bytes]) -> list[bytes]:
    """``inner`` events between a GTID event with its QUERY BEGIN and an XID."""
    sid = bytes(range(16))
    gtid = ev.gtid_body(sid, 1, 0, 1, 1_700_000_000_000_000, 300, 80036, 0)
    return [_framed(ev.GTID, gtid, 900), _framed(ev.QUERY, ev.query_body("", "BEGIN"), 950),
            *inner, _framed(ev.XID, ev.xid_body(1), 1300)]  # fmt: skip


def _with_crc(data: bytes) -> bytes:
    """A whole event kept without its CRC32 (its size says 4 bytes more) given one."""
    if int.from_bytes(data[9:13], "little") == len(data):
        return data
    return fix_size(data + zlib.crc32(data).to_bytes(4, "little"))


def _shared_streams() -> Iterator[tuple[str, list[bytes]]]:
    files = SHARED / "files"
    if not files.is_dir():
        return
    for path in sorted(files.iterdir()):
        yield f"shared:{path.name}", split_file(path.read_bytes())
    fde = split_file((files / "mysql-enum-string-set.000001").read_bytes())[0]
    for path in sorted((SHARED / "events").iterdir()):
        raw = path.read_bytes()
        if path.suffix == ".event":  # a whole event
            yield f"shared:{path.name}", [fde, *_in_transaction([_with_crc(raw)])]
        elif path.suffix in (".body", ".tablemap"):
            stream = [_framed(40 if path.suffix == ".body" else ev.TABLE_MAP, raw, 1000)]
            rows = path.with_suffix(".rows")
            if rows.exists():  # the rows event of this table map (v2 WRITE_ROWS)
                stream.append(_framed(ev.WRITE_ROWS, rows.read_bytes(), 1100))
            yield f"shared:{path.name}", [fde, *_in_transaction(stream)]


ALL_TYPES = Table("shop", "all_types", [
    Column("id", "int unsigned"), Column("t", "tinyint"), Column("s", "smallint unsigned"),
    Column("m", "mediumint"), Column("b", "bigint"), Column("d", "decimal(12,3)"),
    Column("dd", "decimal(40,10)"), Column("f", "float"), Column("g", "double"),
    Column("bits", "bit(10)"), Column("day", "date"), Column("tm", "time(3)"),
    Column("at", "datetime(6)"), Column("ts", "timestamp(2)"), Column("y", "year"),
    Column("c", "char(4)"), Column("v", "varchar(300)"), Column("bin", "binary(4)"),
    Column("vb", "varbinary(10)"), Column("tt", "tinytext"), Column("bl", "blob"),
    Column("e", "enum('a','b')"), Column("st", "set('x','y')"), Column("j", "json"),
    Column("l1", "varchar(5)", charset="latin1"),
], ["id"], table_id=7)  # fmt: skip
NARROW = Table("shop", "narrow", [Column("id", "bigint"), Column("v", "varchar(20)")], ["id"],
               table_id=8)  # fmt: skip


def _writer_streams() -> Iterator[tuple[str, list[bytes]]]:
    uuid = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
    w = BinlogWriter(FILE, row_metadata="FULL")
    mixed_workload(w, ALL_TYPES, 12, rows_per_transaction=4, gtid_uuid=uuid)
    single_row_inserts(w, NARROW, 2, gtid_uuid=uuid, start_gno=100, compressed=True)
    yield "writer:all-types", list(w.files[FILE])
    w = BinlogWriter(FILE, row_metadata="MINIMAL", checksum=False)
    mixed_workload(w, NARROW, 8, rows_per_transaction=3)  # anonymous GTIDs, no CRC32
    w.rotate()
    single_row_inserts(w, NARROW, 2, first=50)
    yield "writer:anonymous", [e for events in w.files.values() for e in events]


def seed_streams() -> list[tuple[str, list[bytes]]]:
    """(name, events) of every seed stream (the module docstring)."""
    return [*_shared_streams(), *_writer_streams()]


# --------------------------------------------------------------------------- the reader

_INTEGER = {tm.T_TINY: "tinyint", tm.T_SHORT: "smallint", tm.T_INT24: "mediumint",
            tm.T_LONG: "int", tm.T_LONGLONG: "bigint"}  # fmt: skip
_PLAIN = {tm.T_FLOAT: "float", tm.T_DOUBLE: "double", tm.T_YEAR: "year", tm.T_DATE: "date",
          tm.T_NEWDATE: "date", tm.T_TIME: "time", tm.T_DATETIME: "datetime",
          tm.T_TIMESTAMP: "timestamp", tm.T_JSON: "json", tm.T_GEOMETRY: "geometry"}  # fmt: skip
_LOBS = {1: "tinytext", 2: "blob", 3: "mediumtext", 4: "longblob"}
_MEMBERS = ",".join(f"'m{i}'" for i in range(40))


def _sql_type(t: int, meta: int, unsigned: bool) -> str:
    """A column type the binlog type ``t`` with metadata ``meta`` can stand for."""
    if t in _INTEGER:
        return _INTEGER[t] + (" unsigned" if unsigned else "")
    if t in _PLAIN:
        return _PLAIN[t]
    if t == tm.T_NEWDECIMAL:
        return f"decimal({meta >> 8},{meta & 0xFF})"
    if t in (tm.T_TIME2, tm.T_DATETIME2, tm.T_TIMESTAMP2):
        base = {tm.T_TIME2: "time", tm.T_DATETIME2: "datetime", tm.T_TIMESTAMP2: "timestamp"}[t]
        return f"{base}({meta})"
    if t in (tm.T_VARCHAR, tm.T_VAR_STRING):
        return f"varchar({max(1, meta // 4)})"
    if t == tm.T_BIT:
        return f"bit({(meta >> 8) * 8 + (meta & 0xFF)})"
    if t in (tm.T_BLOB, tm.T_TINY_BLOB, tm.T_MEDIUM_BLOB, tm.T_LONG_BLOB):
        return _LOBS.get(meta, "blob")
    if t in (tm.T_STRING, tm.T_ENUM, tm.T_SET):
        real, length = tm.string_type(t, meta)
        if real == tm.T_ENUM:
            return f"enum({_MEMBERS})"
        if real == tm.T_SET:
            return f"set({_MEMBERS[:80].rsplit(',', 1)[0]})"
        return f"char({max(1, length // 4)})"
    return "varchar(10)"


def create_table_sql(table_map: tm.TableMap) -> str:
    """A CREATE TABLE statement for the table ``table_map`` describes (names from its
    optional metadata, else ``c0`` …; the first column the key)."""
    count = len(table_map.column_types)
    names = table_map.column_names or tuple(f"c{i}" for i in range(count))
    unsigned = dict(table_map.unsigned)
    columns = [
        f"`{name.replace('`', '``')}` {_sql_type(t, meta, unsigned.get(i, False))}"
        for i, (name, t, meta) in enumerate(
            zip(names, table_map.column_types, table_map.column_meta, strict=False)
        )
    ]
    key = names[0].replace("`", "``") if names else "c0"
    db, table = (x.replace("`", "``") for x in (table_map.db, table_map.table))
    return f"CREATE TABLE `{db}`.`{table}` ({', '.join(columns)}, PRIMARY KEY (`{key}`))"


class _NoHistory(SchemaHistory):
    """A schema history that keeps nothing (a fuzzing run makes thousands of readers)."""

    def record(
        self,
        offset: BinlogOffset,
        schemas: Schemas,
        read_at: dict[tuple[str, str], BinlogOffset] | None = None,
    ) -> None:
        pass


class TableMapSchemas(SchemaState):
    """The schema state with a table's schema made from its first TABLE_MAP when the stream
    gave no CREATE TABLE the tracker could follow (and no catalog to ask)."""

    def __init__(self, source: SourceConfig, history: SchemaHistory) -> None:
        super().__init__(source, history)
        self.tracker = SchemaTracker({}, self.captured)

    def table_map(self, table_map: tm.TableMap) -> None:
        super().table_map(table_map)
        if self.tracker.get(table_map.db, table_map.table) is None and table_map.column_types:
            self.tracker.native_json = tm.T_JSON in table_map.column_types
            self.tracker.apply_ddl(table_map.db, create_table_sql(table_map))


_HISTORY = Path(tempfile.gettempdir()) / f"sparkcdc-fuzz-history-{os.getpid()}.jsonl"
SOURCE = SourceConfig("127.0.0.1", 9, "fuzz", "", (".*",))


class DecodingReader(LogReader):
    """The log reader reading a list of events in process (the module docstring); ``typed``:
    typed row images (the compiled decoder where built and ``SPARKCDC_NATIVE_ROWS`` allows)."""

    def __init__(self, typed: bool = False) -> None:
        super().__init__(SOURCE, BinlogOffset(FILE, 4), EventStore(), _NoHistory(_HISTORY),
                         item_rows=64, typed=typed)  # fmt: skip
        self.schemas = TableMapSchemas(SOURCE, self.history)
        self.items = 0

    def _put(self, item: LogItem) -> None:
        self.items += 1

    def read(self, events: list[bytes]) -> None:
        """Dispatch ``events`` as one dump from the start of :data:`FILE`, then put what is
        pending (where typed images become Arrow)."""
        self.follow(BinlogOffset(FILE, 4), iter([events]))
        self.cutter.flush()


MODES = ("json", "typed-python", "typed-native")


def decode(events: list[bytes], mode: str) -> SparkCDCError | None:
    """Read ``events`` in ``mode`` (:data:`MODES`): None, or the project's error that stopped
    the stream. Any other exception propagates: that is a finding."""
    os.environ["SPARKCDC_NATIVE_ROWS"] = "1" if mode == "typed-native" else "0"
    try:
        DecodingReader(typed=mode != "json").read(events)
    except SparkCDCError as err:
        return err
    finally:
        os.environ.pop("SPARKCDC_NATIVE_ROWS", None)
    return None


PLACE = re.compile(r"[\w.-]+\.\d+:\d+|source\.position \d+:\d+")  # file:pos


def check(events: list[bytes], mode: str) -> SparkCDCError | None:
    """:func:`decode`, and the error's sentence names a place in a binlog file."""
    err = decode(events, mode)
    if err is not None:
        assert PLACE.search(str(err)), f"{type(err).__name__} without a place: {err}"
    return err
