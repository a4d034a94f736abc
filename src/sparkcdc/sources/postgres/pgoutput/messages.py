"""pgoutput messages, protocol versions 1 and 2, decoded from the bytes of one XLogData payload.

The layouts are PostgreSQL's "Logical Replication Message Formats" (protocol chapter 55.9 in
the version 15 docs): integers big-endian, strings NUL-terminated, LSNs Int64, timestamps
Int64 microseconds since 2000-01-01 (turned into microseconds since 1970-01-01 here).

Streaming (version 2, ``streaming 'on'``): between Stream Start and Stream Stop the messages
Relation, Type, Insert, Update, Delete, Truncate and Message carry the transaction's xid right
after their type byte. :func:`decode` is a pure function and takes that state as its
``streaming`` argument; :class:`Decoder` tracks it itself from the Stream Start and Stream Stop
it sees, which is what a reader of one replication stream wants.

Row messages are the hot path (a stream carries millions), so their tuples are plain lists:
one entry per column, ``bytes`` (the value's text as sent, 't'), ``None`` (SQL NULL, 'n'),
:data:`UNCHANGED` (a TOASTed value the change left alone and the server did not send, 'u') or
:class:`BinaryValue` ('b', only with the ``binary`` option, which sparkcdc does not ask for).
A type byte this module does not know raises :class:`PgoutputError`: the caller stops the
stream rather than skip data.
"""

from __future__ import annotations

import enum
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, cast

from sparkcdc.core.errors import DecodeError

try:
    from sparkcdc.sources.postgres.pgoutput import _tuples  # type: ignore[attr-defined]
except ImportError:  # not built: tuple_in_python reads every tuple
    _tuples = None

PG_EPOCH_MICROS = 946_684_800_000_000  # 2000-01-01 in microseconds since 1970-01-01


class Unchanged(enum.Enum):
    """The type of :data:`UNCHANGED`."""

    UNCHANGED = "u"


UNCHANGED = Unchanged.UNCHANGED  # a TOASTed value the change did not touch ('u')


@dataclass(frozen=True, slots=True)
class BinaryValue:
    """A value in the type's binary send format ('b')."""

    data: bytes


TupleValue = bytes | None | Literal[Unchanged.UNCHANGED] | BinaryValue
TupleData = list[TupleValue]


class TextTuple(list[TupleValue]):
    """TupleData that :func:`_tuple` found to hold only texts and NULLs (no 'u', no 'b'):
    readers may take its values as texts without looking at each."""

    __slots__ = ()


class PgoutputError(DecodeError, ValueError):
    """A payload this module cannot decode (the stream must stop); the project's
    :class:`~sparkcdc.core.errors.DecodeError`, and a ValueError as it always was."""


ADVICE = (
    "the stream stops here rather than skip or guess it (the slot keeps it, so a restart reads "
    "it again); report it with the server's version if it comes back"
)
NAMES = {
    "B": "Begin", "C": "Commit", "O": "Origin", "R": "Relation", "Y": "Type", "I": "Insert",
    "U": "Update", "D": "Delete", "T": "Truncate", "M": "Message", "S": "Stream Start",
    "E": "Stream Stop", "c": "Stream Commit", "A": "Stream Abort",
}  # fmt: skip


def message_name(payload: bytes) -> str:
    """The kind of the message in ``payload`` as a sentence names it ("pgoutput Insert
    message ('I')")."""
    if not payload:
        return "empty pgoutput message"
    kind = chr(payload[0])
    name = NAMES.get(kind)
    return f"pgoutput {name} message ({kind!r})" if name else f"pgoutput message {kind!r}"


def lsn_text(lsn: int) -> str:
    """An LSN as PostgreSQL writes it (``16/B374D848``)."""
    return f"{lsn >> 32:X}/{lsn & 0xFFFFFFFF:X}"


@dataclass(frozen=True, slots=True)
class Begin:
    final_lsn: int
    commit_time: int  # microseconds since 1970-01-01 UTC
    xid: int


@dataclass(frozen=True, slots=True)
class Commit:
    flags: int
    commit_lsn: int
    end_lsn: int
    commit_time: int


@dataclass(frozen=True, slots=True)
class Origin:
    commit_lsn: int
    name: str


@dataclass(frozen=True, slots=True)
class RelationColumn:
    flags: int  # 1: part of the replica identity key
    name: str
    type_oid: int
    typmod: int

    @property
    def key(self) -> bool:
        return bool(self.flags & 1)


@dataclass(frozen=True, slots=True)
class Relation:
    xid: int | None
    oid: int
    namespace: str  # "pg_catalog" where the server sends ""
    name: str
    replica_identity: str  # d(efault), n(othing), f(ull), i(ndex)
    columns: tuple[RelationColumn, ...]


@dataclass(frozen=True, slots=True)
class Type:
    xid: int | None
    oid: int
    namespace: str
    name: str


@dataclass(slots=True)
class Insert:
    xid: int | None
    relation: int
    new: TupleData


@dataclass(slots=True)
class Update:
    """``old_kind`` 'K': ``old`` has the key columns only (others None), 'O': the whole old
    row (REPLICA IDENTITY FULL), None: no old tuple (the key did not change)."""

    xid: int | None
    relation: int
    old_kind: str | None
    old: TupleData | None
    new: TupleData


@dataclass(slots=True)
class Delete:
    xid: int | None
    relation: int
    old_kind: str  # 'K' or 'O', as for Update
    old: TupleData


@dataclass(frozen=True, slots=True)
class Truncate:
    xid: int | None
    cascade: bool
    restart_identity: bool
    relations: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class LogicalMessage:
    """``pg_logical_emit_message``'s message (sent only with the ``messages`` option)."""

    xid: int | None
    transactional: bool
    lsn: int
    prefix: str
    content: bytes


@dataclass(frozen=True, slots=True)
class StreamStart:
    xid: int
    first_segment: bool


@dataclass(frozen=True, slots=True)
class StreamStop:
    pass


@dataclass(frozen=True, slots=True)
class StreamCommit:
    xid: int
    flags: int
    commit_lsn: int
    end_lsn: int
    commit_time: int


@dataclass(frozen=True, slots=True)
class StreamAbort:
    xid: int
    subxid: int


Message = (
    Begin | Commit | Origin | Relation | Type | Insert | Update | Delete | Truncate
    | LogicalMessage | StreamStart | StreamStop | StreamCommit | StreamAbort
)  # fmt: skip

_U16 = struct.Struct(">H").unpack_from
_U32 = struct.Struct(">I").unpack_from
_U64 = struct.Struct(">Q").unpack_from
_U32X2 = struct.Struct(">II").unpack_from
_BEGIN = struct.Struct(">QqI").unpack_from
_COMMIT = struct.Struct(">BQQq").unpack_from
_STREAM_COMMIT = struct.Struct(">IBQQq").unpack_from
_COLUMN = struct.Struct(">Ii").unpack_from


def _tuple(data: bytes, pos: int) -> tuple[TupleData, int]:
    """TupleData at ``pos``: Int16 column count, then per column a kind byte and for 't'/'b'
    an Int32 length and the bytes. Returns the values and the position after them: read in C
    (``_tuples.c``) when every value is a text or NULL, else by :func:`tuple_in_python`."""
    if _tuples is not None:
        found = _tuples.texts(data, pos, TextTuple)
        if found is not None:
            return cast(tuple[TupleData, int], found)
    return tuple_in_python(data, pos)


def tuple_in_python(data: bytes, pos: int) -> tuple[TupleData, int]:
    """:func:`_tuple` in Python: any TupleData, and the error naming what is wrong in one."""
    (count,) = _U16(data, pos)
    pos += 2
    values: TupleData = [None] * count
    texts = True
    for i in range(count):
        kind = data[pos]
        if kind == 116:  # 't'
            start = pos + 5
            pos = start + _U32(data, pos + 1)[0]
            values[i] = data[start:pos]
        elif kind == 110:  # 'n'
            pos += 1
        elif kind == 117:  # 'u'
            values[i] = UNCHANGED
            texts = False
            pos += 1
        elif kind == 98:  # 'b'
            start = pos + 5
            pos = start + _U32(data, pos + 1)[0]
            values[i] = BinaryValue(data[start:pos])
            texts = False
        else:
            raise PgoutputError(f"its TupleData column kind {chr(kind)!r} at byte {pos} is unknown")
    if pos > len(data):
        raise PgoutputError(f"its TupleData runs {pos - len(data)} bytes past its end")
    return (TextTuple(values) if texts else values), pos


def _string(data: bytes, pos: int) -> tuple[str, int]:
    end = data.index(0, pos)
    return data[pos:end].decode(), end + 1


def _head(data: bytes, streaming: bool) -> tuple[int | None, int]:
    """The xid a streamed message carries after its type byte, and where its body starts."""
    return (_U32(data, 1)[0], 5) if streaming else (None, 1)


def _lsn(lsn: int) -> int:
    """An LSN that offsets may hold (a signed 64-bit integer, as PostgreSQL's ``pg_lsn``
    arithmetic and every LSN a server writes)."""
    if lsn >> 63:
        raise PgoutputError(f"its LSN {lsn_text(lsn)} lies past any a server writes")
    return lsn


def _begin(data: bytes, streaming: bool) -> Begin:
    lsn, ts, xid = _BEGIN(data, 1)
    return Begin(_lsn(lsn), ts + PG_EPOCH_MICROS, xid)


def _commit(data: bytes, streaming: bool) -> Commit:
    flags, lsn, end, ts = _COMMIT(data, 1)
    return Commit(flags, _lsn(lsn), _lsn(end), ts + PG_EPOCH_MICROS)


def _origin(data: bytes, streaming: bool) -> Origin:
    return Origin(_U64(data, 1)[0], _string(data, 9)[0])


def _relation(data: bytes, streaming: bool) -> Relation:
    xid, pos = _head(data, streaming)
    (oid,) = _U32(data, pos)
    namespace, pos = _string(data, pos + 4)
    name, pos = _string(data, pos)
    identity = chr(data[pos])
    (count,) = _U16(data, pos + 1)
    pos += 3
    columns = []
    for _ in range(count):
        flags = data[pos]
        column, pos = _string(data, pos + 1)
        type_oid, typmod = _COLUMN(data, pos)
        pos += 8
        columns.append(RelationColumn(flags, column, type_oid, typmod))
    return Relation(xid, oid, namespace or "pg_catalog", name, identity, tuple(columns))


def _type(data: bytes, streaming: bool) -> Type:
    xid, pos = _head(data, streaming)
    (oid,) = _U32(data, pos)
    namespace, pos = _string(data, pos + 4)
    return Type(xid, oid, namespace or "pg_catalog", _string(data, pos)[0])


def _insert(data: bytes, streaming: bool) -> Insert:
    if streaming:
        xid, relation = _U32X2(data, 1)
        pos = 9
    else:
        xid, (relation,), pos = None, _U32(data, 1), 5
    if data[pos] != 78:  # 'N'
        _part(data, pos, "N")
    return Insert(xid, relation, _tuple(data, pos + 1)[0])


def _update(data: bytes, streaming: bool) -> Update:
    xid, pos = _head(data, streaming)
    (relation,) = _U32(data, pos)
    kind = _part(data, pos + 4, "KON")
    if kind == "N":
        return Update(xid, relation, None, None, _tuple(data, pos + 5)[0])
    old, pos = _tuple(data, pos + 5)
    _part(data, pos, "N")
    return Update(xid, relation, kind, old, _tuple(data, pos + 1)[0])


def _delete(data: bytes, streaming: bool) -> Delete:
    xid, pos = _head(data, streaming)
    (relation,) = _U32(data, pos)
    return Delete(xid, relation, _part(data, pos + 4, "KO"), _tuple(data, pos + 5)[0])


def _part(data: bytes, pos: int, expected: str) -> str:
    """The byte at ``pos`` naming the tuple that follows ('K' key, 'O' old, 'N' new)."""
    kind = chr(data[pos])
    if kind not in expected:
        raise PgoutputError(f"byte {pos} is {kind!r} where a tuple ({'/'.join(expected)}) starts")
    return kind


def _truncate(data: bytes, streaming: bool) -> Truncate:
    xid, pos = _head(data, streaming)
    count, options = _U32(data, pos)[0], data[pos + 4]
    oids = struct.unpack_from(f">{count}I", data, pos + 5)
    return Truncate(xid, bool(options & 1), bool(options & 2), oids)


def _message(data: bytes, streaming: bool) -> LogicalMessage:
    xid, pos = _head(data, streaming)
    flags, (lsn,) = data[pos], _U64(data, pos + 1)
    prefix, pos = _string(data, pos + 9)
    (size,) = _U32(data, pos)
    return LogicalMessage(xid, bool(flags & 1), lsn, prefix, data[pos + 4 : pos + 4 + size])


def _stream_start(data: bytes, streaming: bool) -> StreamStart:
    return StreamStart(_U32(data, 1)[0], data[5] == 1)


def _stream_stop(data: bytes, streaming: bool) -> StreamStop:
    return StreamStop()


def _stream_commit(data: bytes, streaming: bool) -> StreamCommit:
    xid, flags, lsn, end, ts = _STREAM_COMMIT(data, 1)
    return StreamCommit(xid, flags, _lsn(lsn), _lsn(end), ts + PG_EPOCH_MICROS)


def _stream_abort(data: bytes, streaming: bool) -> StreamAbort:
    return StreamAbort(*_U32X2(data, 1))


_BY_KIND: dict[str, Callable[[bytes, bool], Message]] = {
    "B": _begin, "C": _commit, "O": _origin, "R": _relation, "Y": _type, "I": _insert,
    "U": _update, "D": _delete, "T": _truncate, "M": _message, "S": _stream_start,
    "E": _stream_stop, "c": _stream_commit, "A": _stream_abort,
}  # fmt: skip
_DECODERS = {ord(kind): fn for kind, fn in _BY_KIND.items()}


def decode(data: bytes, streaming: bool = False, lsn: int = 0) -> Message:
    """The message in ``data`` (one XLogData payload). ``streaming``: inside a Stream Start ..
    Stream Stop block (the row and schema messages then carry an xid). ``lsn`` (the XLogData's
    WAL start) only names the place in errors. Whatever goes wrong raises
    :class:`PgoutputError` naming the message's kind and LSN."""
    fn = _DECODERS.get(data[0]) if data else None
    if fn is None:
        kind = repr(chr(data[0])) if data else "(empty)"
        raise PgoutputError(
            f"pgoutput message type {kind} at LSN {lsn_text(lsn)} is unknown; {ADVICE}",
            **_where(data, lsn),
        )
    try:
        return fn(data, streaming)
    except Exception as e:  # noqa: BLE001 - PgoutputError, struct.error, IndexError, Unicode…
        raise PgoutputError(
            f"pgoutput message {chr(data[0])!r} at LSN {lsn_text(lsn)} is truncated or"
            f" malformed ({type(e).__name__}: {str(e)[:200]}); {ADVICE}",
            **_where(data, lsn),
        ) from e


def _where(data: bytes, lsn: int) -> dict[str, str]:
    """An error's place: the message's kind and LSN (made only when one is raised)."""
    return {"event": message_name(data), "lsn": lsn_text(lsn)}


class Decoder:
    """Decodes the messages of one replication stream in order, knowing from Stream Start and
    Stream Stop whether the row and schema messages carry an xid."""

    __slots__ = ("streaming",)

    def __init__(self) -> None:
        self.streaming = False

    def __call__(self, data: bytes, lsn: int = 0) -> Message:
        message = decode(data, self.streaming, lsn)
        if type(message) is StreamStart:
            self.streaming = True
        elif type(message) is StreamStop:
            self.streaming = False
        return message
