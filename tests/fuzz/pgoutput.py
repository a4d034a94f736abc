"""pgoutput message streams decoded in process by the PostgreSQL log reader, for fuzzing.

:class:`DecodingReader` is the real :class:`~sparkcdc.sources.postgres.stream.reader.PgLogReader`
without a server: :meth:`~DecodingReader.read` hands it XLogData items one by one
(``receive``, as its stream loop does), then puts what is pending (where typed images become
Arrow). The captured tables are the ones the seed's own Relation messages describe.

Seeds (:func:`seed_streams`) are built byte by byte from PostgreSQL's "Logical Replication
Message Formats" (protocol versions 1 and 2): a transaction touching a table of every type
sparkcdc maps (inserts, updates with a key, a whole old row and an unchanged TOASTed value,
deletes, TRUNCATE, a logical message, an origin) and a large transaction streamed in blocks
with an aborted subtransaction. Those captured from a real server are in
``tests/integration/test_decoder_fuzz_servers.py``.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Iterable, Sequence

from sparkcdc.config.model import SourceConfig
from sparkcdc.core.errors import SparkCDCError
from sparkcdc.core.logitem import LogItem
from sparkcdc.core.schema import TableSchema
from sparkcdc.core.table_name import TableName
from sparkcdc.sources.postgres.offset import LsnOffset
from sparkcdc.sources.postgres.pgoutput import messages as pm
from sparkcdc.sources.postgres.pgoutput.types import relation_columns
from sparkcdc.sources.postgres.settings import PostgresSettings
from sparkcdc.sources.postgres.stream.reader import PgLogReader
from sparkcdc.store.ring import EventStore

Value = bytes | str | None  # a column's text (None: NULL, "u": an unchanged TOASTed value)

# --------------------------------------------------------------------------- messages


def _s(text: str) -> bytes:
    return text.encode() + b"\0"


def tuple_data(values: Sequence[Value]) -> bytes:
    """TupleData: Int16 count, per column 'n', 'u' or 't' with Int32 length and the text."""
    out = struct.pack(">H", len(values))
    for v in values:
        if v is None:
            out += b"n"
        elif v == "u":
            out += b"u"
        else:
            raw = v if isinstance(v, bytes) else v.encode()
            out += b"t" + struct.pack(">I", len(raw)) + raw
    return out


def _xid(xid: int | None) -> bytes:
    return b"" if xid is None else struct.pack(">I", xid)


def begin(final_lsn: int, xid: int) -> bytes:
    return b"B" + struct.pack(">QqI", final_lsn, 760_000_000_000_000, xid)


def commit(lsn: int, end: int) -> bytes:
    return b"C" + struct.pack(">BQQq", 0, lsn, end, 760_000_000_000_000)


def relation(oid: int, name: str, columns: Sequence[tuple[int, str, int, int]],
             xid: int | None = None) -> bytes:  # fmt: skip
    """Relation ``public.name``: columns as (flags, name, type OID, typmod)."""
    out = b"R" + _xid(xid) + struct.pack(">I", oid) + _s("public") + _s(name) + b"d"
    out += struct.pack(">H", len(columns))
    for flags, col, type_oid, typmod in columns:
        out += bytes([flags]) + _s(col) + struct.pack(">Ii", type_oid, typmod)
    return out


def insert(oid: int, new: Sequence[Value], xid: int | None = None) -> bytes:
    return b"I" + _xid(xid) + struct.pack(">I", oid) + b"N" + tuple_data(new)


def update(oid: int, new: Sequence[Value], old: Sequence[Value] | None = None, kind: bytes = b"K",
           xid: int | None = None) -> bytes:  # fmt: skip
    head = b"U" + _xid(xid) + struct.pack(">I", oid)
    if old is not None:
        head += kind + tuple_data(old)
    return head + b"N" + tuple_data(new)


def delete(oid: int, old: Sequence[Value], kind: bytes = b"K", xid: int | None = None) -> bytes:
    return b"D" + _xid(xid) + struct.pack(">I", oid) + kind + tuple_data(old)


def truncate(oids: Sequence[int], xid: int | None = None) -> bytes:
    return b"T" + _xid(xid) + struct.pack(f">IB{len(oids)}I", len(oids), 0, *oids)


def type_message(oid: int, name: str) -> bytes:
    return b"Y" + struct.pack(">I", oid) + _s("public") + _s(name)


def origin(lsn: int, name: str) -> bytes:
    return b"O" + struct.pack(">Q", lsn) + _s(name)


def logical_message(lsn: int, prefix: str, content: bytes) -> bytes:
    return (
        b"M" + struct.pack(">BQ", 1, lsn) + _s(prefix) + struct.pack(">I", len(content)) + content
    )


def stream_start(xid: int, first: bool) -> bytes:
    return b"S" + struct.pack(">IB", xid, int(first))


def stream_commit(xid: int, lsn: int, end: int) -> bytes:
    return b"c" + struct.pack(">IBQQq", xid, 0, lsn, end, 760_000_000_000_000)


def stream_abort(xid: int, subxid: int) -> bytes:
    return b"A" + struct.pack(">II", xid, subxid)


def xlog_items(payloads: Iterable[bytes], first_lsn: int = 0x16B3748) -> list[bytes]:
    """XLogData items (``w``, walStart, walEnd, sendTime, the payload) at rising LSNs."""
    items, lsn = [], first_lsn
    for payload in payloads:
        items.append(b"w" + struct.pack(">QQq", lsn, lsn, 0) + payload)
        lsn += 0x28
    return items


# --------------------------------------------------------------------------- seeds

T_OID, NARROW_OID = 16400, 16401
_NUMERIC_12_2 = (12 << 16 | 2) + 4
# (name, type OID, typmod, a value's text, another one's)
TYPES: list[tuple[str, int, int, str, str]] = [
    ("i2", 21, -1, "-7", "32767"), ("i8", 20, -1, "123456789012", "-1"),
    ("n", 1700, _NUMERIC_12_2, "1234.56", "NaN"), ("nu", 1700, -1, "3.14159", "-0.5"),
    ("r", 700, -1, "3.25", "Infinity"), ("d", 701, -1, "2.5e-05", "-Infinity"),
    ("b", 16, -1, "t", "f"), ("t", 25, -1, "héllo", ""), ("vc", 1043, 24, "abc", "x y"),
    ("c", 1042, 9, "ab   ", "zzzzz"), ("by", 17, -1, "\\x00ff10", "\\x"),
    ("dt", 1082, -1, "2024-02-29", "0044-03-15 BC"), ("tm", 1083, -1, "12:34:56.789", "00:00:00"),
    ("ts", 1114, -1, "2024-02-29 12:34:56.123456", "infinity"),
    ("tz", 1184, -1, "2024-02-29 12:34:56.123456+00", "1999-12-31 23:59:59+05:30"),
    ("iv", 1186, -1, "P1Y2M3DT4H5M6S", "PT0S"),
    ("u", 2950, -1, "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "00000000-0000-0000-0000-000000000000"),
    ("j", 114, -1, '{"a": [1, 2]}', "null"), ("jb", 3802, -1, '{"a": 1}', "[]"),
    ("ia", 1007, -1, "{1,2,NULL}", "{}"), ("ta", 1009, -1, '{"a b",c,NULL}', '{"\\""}'),
]  # fmt: skip
COLUMNS = [(1, "id", 23, -1), *[(0, n, oid, mod) for n, oid, mod, _, _ in TYPES]]
NARROW = [(1, "id", 20, -1), (0, "v", 25, -1)]


def _row(i: int, which: int = 3) -> list[Value]:
    return [str(i), *[t[which] for t in TYPES]]


def _plain() -> list[bytes]:
    """Two transactions of every message kind a stream of protocol version 1 carries."""
    key_only: list[Value] = [str(1), *[None] * len(TYPES)]
    toasted: list[Value] = [str(2), *["u" if n == "t" else v for (n, *_), v in
                                      zip(TYPES, _row(2, 4)[1:], strict=True)]]  # fmt: skip
    return [
        begin(0x16B4000, 700), relation(T_OID, "t", COLUMNS),
        relation(NARROW_OID, "narrow", NARROW), type_message(16500, "mood"),
        insert(T_OID, _row(1)), insert(T_OID, _row(2, 4)),
        update(T_OID, _row(1, 4)), update(T_OID, _row(3), key_only, b"K"),
        update(T_OID, toasted, _row(2, 4), b"O"), update(T_OID, toasted),
        insert(NARROW_OID, ["10", "a"]), insert(NARROW_OID, ["11", None]),
        delete(NARROW_OID, ["10", None]), delete(T_OID, key_only), commit(0x16B4000, 0x16B4100),
        begin(0x16B5000, 701), origin(0x16B5000, "upstream"), truncate([NARROW_OID, T_OID]),
        logical_message(0x16B5010, "sparkcdc", b"beat"), insert(NARROW_OID, ["12", "z"]),
        commit(0x16B5000, 0x16B5100),
    ]  # fmt: skip


def _streamed() -> list[bytes]:
    """A transaction streamed in two blocks around another transaction, with a
    subtransaction aborted, then committed (protocol version 2)."""
    x, sub = 900, 901
    return [
        stream_start(x, True), relation(NARROW_OID, "narrow", NARROW, xid=x),
        insert(NARROW_OID, ["20", "s"], xid=x), insert(NARROW_OID, ["21", "t"], xid=sub),
        b"E", begin(0x16B6000, 902), relation(T_OID, "t", COLUMNS), insert(T_OID, _row(7)),
        commit(0x16B6000, 0x16B6100), stream_start(x, False),
        update(NARROW_OID, ["20", "S"], xid=x), delete(NARROW_OID, ["20", None], xid=x), b"E",
        stream_abort(x, sub), stream_commit(x, 0x16B7000, 0x16B7100),
    ]  # fmt: skip


def seed_streams() -> list[tuple[str, list[bytes]]]:
    """(name, XLogData items) of every seed stream (the module docstring)."""
    return [("built:plain", xlog_items(_plain())), ("built:streamed", xlog_items(_streamed()))]


# --------------------------------------------------------------------------- the reader


def captured_schemas(items: Sequence[bytes]) -> dict[TableName, TableSchema]:
    """The tables the Relation messages among ``items`` describe (the first of each name),
    as the catalog would give them at the start: every column, the flagged ones the key."""
    schemas: dict[TableName, TableSchema] = {}
    decoder = pm.Decoder()
    for item in items:
        try:
            message = decoder(item[25:])
        except SparkCDCError:
            continue  # the reader will say what is wrong with it
        if isinstance(message, pm.Relation):
            name = (message.namespace, message.name)
            key = tuple(c.name for c in message.columns if c.key)
            schemas.setdefault(name, TableSchema(*name, relation_columns(message), key))
    return schemas


SETTINGS = PostgresSettings(database="shop", slot="s", publication="p")
SOURCE = SourceConfig("127.0.0.1", 9, "fuzz", "", (r"public\..*",), type="postgres",
                      settings=SETTINGS)  # fmt: skip


class DecodingReader(PgLogReader):
    """The PostgreSQL log reader fed XLogData items in process (the module docstring)."""

    def __init__(self, schemas: dict[TableName, TableSchema], typed: bool) -> None:
        super().__init__(SOURCE, LsnOffset(0x16B3000), EventStore(), schemas, slot="s",
                         publication="p", item_rows=64, typed=typed)  # fmt: skip
        self.items = 0

    def _put(self, item: LogItem) -> None:
        self.items += 1

    def read(self, items: Sequence[bytes]) -> None:
        for item in items:
            self.receive(item)
        self.cutter.flush()


PLACE = re.compile(r"LSN [0-9A-F]+/[0-9A-F]+|source\.position \S+")


def check(items: Sequence[bytes], schemas: dict[TableName, TableSchema], typed: bool) -> (
    SparkCDCError | None
):  # fmt: skip
    """Read ``items``: None, or the project's error that stopped the stream, whose sentence
    names the message's LSN. Any other exception propagates: that is a finding."""
    try:
        DecodingReader(schemas, typed).read(items)
    except SparkCDCError as err:
        assert PLACE.search(str(err)), f"{type(err).__name__} without a place: {err}"
        return err
    return None
