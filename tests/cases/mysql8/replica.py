"""A bare replica client for the tests of the MySQL 8 test primary: the handshake
(``caching_sha2_password`` fast path or ``mysql_native_password``), ``COM_QUERY`` and the two
dump commands with any flags, reading the stream packet by packet (MySQL's client/server
protocol). The project's own reader is tested elsewhere; this one states the wire exactly."""

from __future__ import annotations

import hashlib
import socket
import struct
from collections.abc import Iterator

from tests.cases.mysql8.gtids import GtidSet

_CAPS = 0x1 | 0x4 | 0x200 | 0x2000 | 0x8000 | 1 << 17 | 1 << 19


class ServerError(Exception):
    """An ERR packet: ``code`` and the server's message."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code, self.message = code, message


def _error(packet: bytes) -> ServerError:
    code = struct.unpack_from("<H", packet, 1)[0]
    text = packet[3:]
    return ServerError(code, (text[6:] if text[:1] == b"#" else text).decode())


class Replica:
    """One connection that logs in as ``user`` and can query and dump."""

    def __init__(
        self, port: int, user: str, password: str, timeout: float = 10.0, caps: int = _CAPS
    ) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.seq = 0
        greeting = self.read()
        end = greeting.index(b"\0", 1)
        self.version = greeting[1:end].decode()
        p = end + 5
        scramble = greeting[p : p + 8] + greeting[p + 27 : p + 39]
        plugin = greeting[p + 40 :].split(b"\0", 1)[0]
        auth = _answer(plugin, password, scramble)
        response = struct.pack("<IIB", caps, 1 << 24, 255) + bytes(23) + user.encode() + b"\0"
        self.send(response + bytes([len(auth)]) + auth + plugin + b"\0")
        reply = self.read()
        if reply[:1] == b"\xfe":  # auth switch
            name, _, data = reply[1:].partition(b"\0")
            self.send(_answer(name, password, data[:20]))
            reply = self.read()
        if reply[:2] == b"\x01\x03":
            reply = self.read()
        if reply[:1] == b"\xff":
            raise _error(reply)

    def send(self, payload: bytes) -> None:
        self.sock.sendall(struct.pack("<I", len(payload))[:3] + bytes([self.seq]) + payload)
        self.seq = (self.seq + 1) & 0xFF

    def read(self) -> bytes:
        head = self._exactly(4)
        self.seq = (head[3] + 1) & 0xFF
        return self._exactly(int.from_bytes(head[:3], "little"))

    def _exactly(self, n: int) -> bytes:
        out = b""
        while len(out) < n:
            chunk = self.sock.recv(n - len(out))
            if not chunk:
                raise ConnectionError("the primary closed the connection")
            out += chunk
        return out

    def query(self, sql: str) -> bytes:
        """Run a statement; its first answer packet (OK, ERR raised, or a column count; the rest of
        a result set is then :meth:`read` packet by packet)."""
        self.seq = 0
        self.send(b"\x03" + sql.encode())
        reply = self.read()
        if reply[:1] == b"\xff":
            raise _error(reply)
        return reply

    def dump(self, file: str, pos: int, flags: int = 0, server_id: int = 77) -> None:
        """COM_BINLOG_DUMP."""
        self.seq = 0
        self.send(struct.pack("<BIHI", 0x12, pos, flags, server_id) + file.encode())

    def dump_gtid(self, gtids: GtidSet | str, flags: int = 0, file: str = "", pos: int = 4,
                  server_id: int = 77) -> None:  # fmt: skip
        """COM_BINLOG_DUMP_GTID with the encoded GTID set (flag BINLOG_THROUGH_GTID)."""
        data = (GtidSet(gtids) if isinstance(gtids, str) else gtids).encoded()
        name = file.encode()
        self.seq = 0
        self.send(struct.pack("<BHII", 0x1E, flags | 0x04, server_id, len(name)) + name
                  + struct.pack("<QI", pos, len(data)) + data)  # fmt: skip

    def events(self) -> Iterator[bytes]:
        """The dumped events (the 0x00 byte cut) until EOF; ServerError for an ERR packet."""
        while True:
            packet = self.read()
            if packet[:1] == b"\x00":
                yield packet[1:]
            elif packet[:1] == b"\xfe" and len(packet) < 9:
                return
            else:
                raise _error(packet)

    def close(self) -> None:
        self.sock.close()


def _answer(plugin: bytes, password: str, scramble: bytes) -> bytes:
    if not password:
        return b""
    if plugin == b"caching_sha2_password":
        stage1 = hashlib.sha256(password.encode()).digest()
        mix = hashlib.sha256(hashlib.sha256(stage1).digest() + scramble).digest()
    else:
        stage1 = hashlib.sha1(password.encode()).digest()
        mix = hashlib.sha1(scramble + hashlib.sha1(stage1).digest()).digest()
    return bytes(a ^ b for a, b in zip(stage1, mix, strict=True))
