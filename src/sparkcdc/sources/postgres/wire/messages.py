"""Protocol v3 message framing (PostgreSQL docs, "Frontend/Backend Protocol": "Message Flow"
and "Message Formats"): every message after the startup packet is a type byte, an Int32 length
that counts itself, and the body.

:class:`MessageReader` reads them through one growing receive buffer (``recv_into``), so a
message costs a slice, not a system call; the replication stream splits that same buffer itself
(:mod:`.stream`). The builders return whole frontend messages ready for ``sendall``; the parsers
take a backend message's body.
"""

from __future__ import annotations

import socket
import struct
from dataclasses import dataclass

from sparkcdc.core.errors import ConnectionFailed

PROTOCOL_3_0 = 196608  # major 3, minor 0

# backend message types (the first byte), as ints: bytes index to ints
AUTHENTICATION = ord("R")
PARAMETER_STATUS = ord("S")
BACKEND_KEY_DATA = ord("K")
READY_FOR_QUERY = ord("Z")
ROW_DESCRIPTION = ord("T")
DATA_ROW = ord("D")
COMMAND_COMPLETE = ord("C")
EMPTY_QUERY = ord("I")
ERROR_RESPONSE = ord("E")
NOTICE_RESPONSE = ord("N")
NEGOTIATE_PROTOCOL = ord("v")
COPY_IN = ord("G")
COPY_OUT = ord("H")
COPY_BOTH = ord("W")
COPY_DATA = ord("d")
COPY_DONE_TYPE = ord("c")

TERMINATE = b"X\0\0\0\4"
COPY_DONE = b"c\0\0\0\4"

_I32 = struct.Struct(">i")
_U32 = struct.Struct(">I")
_I16 = struct.Struct(">h")
_HEADER = struct.Struct(">cI")


MAX_MESSAGE = (1 << 30) + 64
"""The longest message a server sends: PostgreSQL allocates no more than 1 GB for one (a
CopyData holding a whole row of 1 GB values, with its headers)."""


def message_size(buf: bytes | bytearray, at: int, where: str) -> int:
    """The length word of the message whose type byte is ``buf[at]`` (itself included): a
    length under 4 or over :data:`MAX_MESSAGE` is no message a server sends, so the stream is
    out of step (ConnectionFailed: the connection is made again) rather than read on, or made
    to allocate gigabytes, on a wrong length."""
    size: int = _U32.unpack_from(buf, at + 1)[0]
    if 4 <= size <= MAX_MESSAGE:
        return size
    raise ConnectionFailed(
        f"{where} sent a message of type {chr(buf[at])!r} whose length word says {size} bytes, "
        "which no PostgreSQL server sends: the connection is out of step (damaged, or not a "
        "PostgreSQL server); it will be made again",
        where=where,
    )


class MessageReader:
    """Backend messages from a socket through one growing receive buffer.

    ``buf[start:end]`` holds what was received and not consumed yet; :meth:`recv` adds one
    ``recv_into`` worth of bytes (``flags``: e.g. ``MSG_DONTWAIT``, whose ``BlockingIOError``
    passes through), :meth:`read` returns the next whole message."""

    def __init__(self, sock: socket.socket, where: str, bufsize: int = 1 << 20) -> None:
        self.sock = sock
        self.where = where
        self.buf = bytearray(bufsize)
        self.view = memoryview(self.buf)
        self.start = 0
        self.end = 0

    def _room(self, need: int) -> None:
        """Make ``buf`` hold ``need`` bytes from ``start`` and have free space after ``end``."""
        if self.start + need <= len(self.buf) and self.end < len(self.buf):
            return
        pending = self.end - self.start
        if max(need, pending + 1) > len(self.buf):
            grown = bytearray(max(need, 2 * len(self.buf)))
            grown[:pending] = self.view[self.start : self.end]
            self.buf, self.view = grown, memoryview(grown)
        else:
            self.buf[:pending] = self.buf[self.start : self.end]
        self.start, self.end = 0, pending

    def recv(self, need: int = 0, flags: int = 0) -> int:
        """One ``recv_into`` after ``end`` (with room for a message of ``need`` bytes from
        ``start``): the byte count, never 0 (a closed connection raises ConnectionFailed)."""
        self._room(need)
        try:
            n = self.sock.recv_into(self.view[self.end :], 0, flags)
        except BlockingIOError:
            raise
        except TimeoutError as exc:
            raise ConnectionFailed(
                f"{self.where} stopped answering; check that the server is up and reachable, "
                "the connection will be retried",
                where=self.where,
            ) from exc
        except OSError as exc:
            raise ConnectionFailed(
                f"the connection to {self.where} broke ({exc}); it will be retried",
                where=self.where,
            ) from exc
        if n == 0:
            raise ConnectionFailed(
                f"{self.where} closed the connection; it will be retried", where=self.where
            )
        self.end += n
        return n

    def fill(self, need: int) -> None:
        """Wait until ``need`` bytes from ``start`` are received."""
        while self.end - self.start < need:
            self.recv(need)

    def read(self) -> tuple[int, bytes]:
        """The next message: (type byte, body)."""
        self.fill(5)
        size = message_size(self.buf, self.start, self.where)
        self.fill(1 + size)
        s = self.start
        self.start = s + 1 + size
        return self.buf[s], self.view[s + 5 : s + 1 + size].tobytes()


# -- frontend messages ---------------------------------------------------------------------


def _message(kind: bytes, body: bytes) -> bytes:
    return _HEADER.pack(kind, 4 + len(body)) + body


def startup_message(parameters: dict[str, str]) -> bytes:
    """StartupMessage: protocol 3.0 and ``name\\0value\\0`` pairs (user, database, ...)."""
    body = _I32.pack(PROTOCOL_3_0) + b"".join(
        k.encode() + b"\0" + v.encode() + b"\0" for k, v in parameters.items()
    )
    body += b"\0"
    return _I32.pack(4 + len(body)) + body


def password_message(password: bytes) -> bytes:
    """PasswordMessage: a clear-text or MD5-hashed password, NUL-terminated."""
    return _message(b"p", password + b"\0")


def sasl_initial_response(mechanism: str, data: bytes) -> bytes:
    """SASLInitialResponse: the chosen mechanism and the client-first message."""
    return _message(b"p", mechanism.encode() + b"\0" + _I32.pack(len(data)) + data)


def sasl_response(data: bytes) -> bytes:
    """SASLResponse: a later SASL message (SCRAM's client-final)."""
    return _message(b"p", data)


def query_message(sql: str) -> bytes:
    """Query: one simple-protocol query string."""
    return _message(b"Q", sql.encode() + b"\0")


def copy_data(data: bytes) -> bytes:
    """CopyData: one chunk of a COPY stream (a Streaming Replication Protocol message)."""
    return _message(b"d", data)


def copy_fail(reason: str) -> bytes:
    """CopyFail: abort a COPY FROM STDIN."""
    return _message(b"f", reason.encode() + b"\0")


# -- backend messages ----------------------------------------------------------------------


@dataclass(frozen=True)
class ServerError:
    """An ErrorResponse or NoticeResponse ("Error and Notice Message Fields")."""

    severity: str
    sqlstate: str
    message: str
    detail: str = ""
    hint: str = ""


def parse_error(body: bytes) -> ServerError:
    """ErrorResponse/NoticeResponse fields: code byte + NUL-terminated string, up to a NUL."""
    fields: dict[str, str] = {}
    pos = 0
    while pos < len(body) and body[pos]:
        end = body.index(b"\0", pos + 1)
        fields[chr(body[pos])] = body[pos + 1 : end].decode("utf-8", "replace")
        pos = end + 1
    return ServerError(
        severity=fields.get("V") or fields.get("S", "ERROR"),
        sqlstate=fields.get("C", ""),
        message=fields.get("M", ""),
        detail=fields.get("D", ""),
        hint=fields.get("H", ""),
    )


def parse_parameter_status(body: bytes) -> tuple[str, str]:
    """ParameterStatus: (name, value)."""
    name, value, _ = body.split(b"\0", 2)
    return name.decode(), value.decode("utf-8", "replace")


def parse_backend_key(body: bytes) -> tuple[int, bytes]:
    """BackendKeyData: (process id, cancel key)."""
    return _I32.unpack_from(body)[0], body[4:]


def parse_row_description(body: bytes) -> list[tuple[str, int]]:
    """RowDescription: each column's (name, type OID)."""
    columns: list[tuple[str, int]] = []
    pos = 2
    for _ in range(_I16.unpack_from(body)[0]):
        end = body.index(b"\0", pos)
        name = body[pos:end].decode("utf-8", "replace")
        columns.append((name, _U32.unpack_from(body, end + 7)[0]))
        pos = end + 19  # table OID 4, column 2, type OID 4, size 2, modifier 4, format 2
    return columns


def parse_data_row(body: bytes) -> tuple[str | None, ...]:
    """DataRow in text format: each value decoded as UTF-8, None for NULL (length -1)."""
    values: list[str | None] = []
    unpack = _I32.unpack_from
    pos = 2
    for _ in range(_I16.unpack_from(body)[0]):
        size = unpack(body, pos)[0]
        pos += 4
        if size < 0:
            values.append(None)
        else:
            values.append(body[pos : pos + size].decode())
            pos += size
    return tuple(values)


def parse_command_complete(body: bytes) -> str:
    """CommandComplete: the command tag (``INSERT 0 1``, ``SELECT 3``, ...)."""
    return body.rstrip(b"\0").decode()
