"""A protocol-level MySQL 8 primary for the tests: no MySQL server can be installed here, so this
speaks the documented wire format itself (MySQL's client/server protocol: the v10 handshake,
the SSL request, ``caching_sha2_password``'s fast and full authentication, ``COM_QUERY`` and
``COM_BINLOG_DUMP``), serving the binlog events a test gives it byte by byte."""

from __future__ import annotations

import contextlib
import hashlib
import os
import socket
import ssl
import struct
import threading
from collections.abc import Sequence
from pathlib import Path

CLIENT_SSL = 0x800
CAPS = 0x1 | 0x4 | 0x200 | 0x2000 | 0x8000 | 0x80000 | CLIENT_SSL  # as a MySQL 8 server offers
OK = b"\x00\x00\x00\x02\x00\x00\x00"


class MySQLPrimary:
    """Serves logins for ``user``/``password`` (``cached``: the password's hash is in the
    server's cache, so the fast path answers) and a dump of ``events``; TLS with the
    certificate ``cert``/``key`` when given. ``logins`` records how each login went."""

    def __init__(
        self,
        user: str,
        password: str,
        events: Sequence[bytes] = (),
        *,
        cached: bool = True,
        cert: Path | None = None,
        key: Path | None = None,
    ) -> None:
        self.user, self.password, self.events, self.cached = user, password, events, cached
        self.tls: ssl.SSLContext | None = None
        if cert is not None:
            self.tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            self.tls.load_cert_chain(cert, key)
        self.logins: list[str] = []
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def close(self) -> None:
        self._listener.close()

    def _serve(self) -> None:
        with contextlib.suppress(OSError):
            while True:
                conn, _ = self._listener.accept()
                threading.Thread(target=self._session, args=(conn,), daemon=True).start()

    def _session(self, conn: socket.socket) -> None:
        with contextlib.suppress(OSError, ConnectionError), contextlib.closing(conn):
            link = _Link(conn)
            if self._login(link):
                self._commands(link)

    def _login(self, link: _Link) -> bool:
        scramble = os.urandom(20)
        link.send(_greeting(scramble, CAPS if self.tls else CAPS & ~CLIENT_SSL))
        response = link.read()
        if len(response) == 32 and struct.unpack_from("<I", response)[0] & CLIENT_SSL:
            assert self.tls is not None
            link.sock = self.tls.wrap_socket(link.sock, server_side=True)
            response = link.read()
        user, auth = _login_fields(response)
        if user != self.user or auth != _sha256_answer(self.password, scramble):
            link.send(b"\xff" + struct.pack("<H", 1045) + b"#28000Access denied")
            self.logins.append("refused")
            return False
        if self.cached:
            link.send(b"\x01\x03")
            self.logins.append("fast")
        else:
            link.send(b"\x01\x04")
            if link.read() != self.password.encode() + b"\0":
                link.send(b"\xff" + struct.pack("<H", 1045) + b"#28000Access denied")
                return False
            self.logins.append("full over TLS" if isinstance(link.sock, ssl.SSLSocket) else "full")
        link.send(OK)
        return True

    def _commands(self, link: _Link) -> None:
        while True:
            link.seq = 0
            command = link.read()
            if command[:1] == b"\x03":  # COM_QUERY: every statement the reader sends is a SET
                link.send(OK)
            elif command[:1] == b"\x12":  # COM_BINLOG_DUMP
                for event in self.events:
                    link.send(b"\x00" + event)
                link.send(b"\xfe\x00\x00\x02\x00")
                return
            else:
                return


class _Link:
    """Packets on one connection (3-byte length, sequence number, payload)."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock, self.seq = sock, 0

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
                raise ConnectionError("closed")
            out += chunk
        return out


def _greeting(scramble: bytes, caps: int) -> bytes:
    return (
        b"\x0a8.0.36\0" + struct.pack("<I", 7) + scramble[:8] + b"\0"
        + struct.pack("<HBHH", caps & 0xFFFF, 255, 2, caps >> 16) + bytes([21]) + bytes(10)
        + scramble[8:] + b"\0" + b"caching_sha2_password\0"
    )  # fmt: skip


def _login_fields(response: bytes) -> tuple[str, bytes]:
    """(user, auth answer) of a HandshakeResponse41."""
    p = 32
    end = response.index(b"\0", p)
    user = response[p:end].decode()
    length = response[end + 1]
    return user, response[end + 2 : end + 2 + length]


def _sha256_answer(password: str, scramble: bytes) -> bytes:
    stage1 = hashlib.sha256(password.encode()).digest()
    mix = hashlib.sha256(hashlib.sha256(stage1).digest() + scramble).digest()
    return bytes(a ^ b for a, b in zip(stage1, mix, strict=True))
