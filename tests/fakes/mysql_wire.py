"""The MySQL client/server protocol's connection phase, server side, for the MySQL 8 test primary:
packets (3-byte length, sequence number, payload; split at 16 MiB - 1), the v10 greeting, the
HandshakeResponse41, ``caching_sha2_password`` (fast path, full authentication over TLS or
under the server's RSA key) and ``mysql_native_password`` through an auth switch request."""

from __future__ import annotations

import hashlib
import random
import socket
import struct
from typing import TYPE_CHECKING, Any

from tests.fakes.mysql_results import err_packet, ok_packet

if TYPE_CHECKING:
    from tests.fakes.mysql_primary import MySQLPrimary

CLIENT_SSL, CLIENT_PLUGIN_AUTH, CLIENT_CONNECT_WITH_DB = 0x800, 1 << 19, 0x8
CLIENT_SECURE_CONNECTION, CLIENT_CONNECT_ATTRS, CLIENT_LENENC_AUTH = 0x8000, 1 << 20, 1 << 21
CLIENT_DEPRECATE_EOF = 1 << 24
# what MySQL 8 offers, less compression, session tracking and query attributes
CAPS = (0x1 | 0x2 | 0x4 | 0x8 | 0x10 | 0x40 | 0x100 | 0x200 | 0x400 | 0x1000 | 0x2000 | 0x4000
        | 0x8000 | 1 << 16 | 1 << 17 | 1 << 18 | CLIENT_PLUGIN_AUTH | CLIENT_CONNECT_ATTRS
        | CLIENT_LENENC_AUTH | 1 << 22 | CLIENT_DEPRECATE_EOF | CLIENT_SSL)  # fmt: skip
OK = ok_packet()
SHA2, NATIVE = "caching_sha2_password", "mysql_native_password"


def login(self: MySQLPrimary, link: Link) -> dict[str, Any] | None:
    """The login of one connection as the primary's accounts allow: the session (user, user
    variables, whether EOF packets are sent), or None after an ERR packet."""
    scramble = bytes(random.choice(b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKL")
                     for _ in range(20))  # fmt: skip
    caps = CAPS if self.tls else CAPS & ~CLIENT_SSL
    link.send(greeting(self.version, scramble, caps))
    response = link.read()
    tls = False
    if len(response) == 32 and struct.unpack_from("<I", response)[0] & CLIENT_SSL:
        assert self.tls is not None
        link.sock = self.tls.wrap_socket(link.sock, server_side=True)
        response = link.read()
        tls = True
    client_caps = struct.unpack_from("<I", response)[0]
    user, auth, plugin = login_fields(response)
    if self.require_tls and not tls:
        link.send(err_packet(3159, "Connections using insecure transport are prohibited "
                             "while --require_secure_transport=ON."))  # fmt: skip
        self.logins.append("refused: insecure transport")
        return None
    account = self.accounts.get(user)
    denied = err_packet(1045, f"Access denied for user '{user}'@'localhost' (using password: "
                        f"{'YES' if auth else 'NO'})", "28000")  # fmt: skip
    if account is None:
        link.send(denied)
        self.logins.append("refused")
        return None
    password, kind = account
    if kind != plugin:  # auth switch request to the account's plugin
        link.send(b"\xfe" + kind.encode() + b"\0" + scramble + b"\0")
        auth = link.read()
    expected = native_answer(password, scramble) if kind == NATIVE else \
        sha256_answer(password, scramble)  # fmt: skip
    if auth != expected:
        link.send(denied)
        self.logins.append("refused")
        return None
    if kind == NATIVE:
        self.logins.append("native")
    elif self.cached or not password:
        if password:
            link.send(b"\x01\x03")
        self.logins.append("fast")
    else:
        link.send(b"\x01\x04")  # full authentication: the password itself
        answer = link.read()
        how = "full over TLS" if tls else "full"
        if not tls and answer == b"\x02":  # the client asks for the RSA public key
            link.send(b"\x01" + rsa_pem())
            answer, how = rsa_decrypt(link.read(), scramble), "full with RSA"
        if answer != password.encode() + b"\0":
            link.send(denied)
            self.logins.append("refused")
            return None
        self.logins.append(how)
    link.send(OK)
    return {"user": user, "vars": {}, "eof": not client_caps & caps & CLIENT_DEPRECATE_EOF}


class Link:
    """Packets on one connection (3-byte length, sequence number, payload)."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock, self.seq = sock, 0

    def frame(self, payload: bytes) -> bytes:
        """``payload`` as packets (split at 16 MiB - 1), the sequence numbers counted on."""
        out = []
        while True:
            chunk, payload = payload[:0xFFFFFF], payload[0xFFFFFF:]
            out.append(struct.pack("<I", len(chunk))[:3] + bytes([self.seq]) + chunk)
            self.seq = (self.seq + 1) & 0xFF
            if len(chunk) < 0xFFFFFF:
                return b"".join(out)

    def send(self, payload: bytes) -> None:
        self.sock.sendall(self.frame(payload))

    def read(self) -> bytes:
        parts = []
        while True:
            head = self._exactly(4)
            self.seq = (head[3] + 1) & 0xFF
            n = int.from_bytes(head[:3], "little")
            parts.append(self._exactly(n))
            if n < 0xFFFFFF:
                return b"".join(parts)

    def _exactly(self, n: int) -> bytes:
        out = b""
        while len(out) < n:
            chunk = self.sock.recv(n - len(out))
            if not chunk:
                raise ConnectionError("closed")
            out += chunk
        return out


def greeting(version: str, scramble: bytes, caps: int) -> bytes:
    return (
        b"\x0a" + version.encode() + b"\0" + struct.pack("<I", 7) + scramble[:8] + b"\0"
        + struct.pack("<HBHH", caps & 0xFFFF, 255, 2, caps >> 16) + bytes([21]) + bytes(10)
        + scramble[8:] + b"\0" + SHA2.encode() + b"\0"
    )  # fmt: skip


def login_fields(response: bytes) -> tuple[str, bytes, str]:
    """(user, auth answer, auth plugin) of a HandshakeResponse41."""
    caps = struct.unpack_from("<I", response)[0]
    p = 32
    end = response.index(b"\0", p)
    user = response[p:end].decode()
    p = end + 1
    if caps & CLIENT_LENENC_AUTH:
        first = response[p]
        width = {0xFC: 2, 0xFD: 3, 0xFE: 8}.get(first, 0)
        length = int.from_bytes(response[p + 1 : p + 1 + width], "little") if width else first
        p += 1 + width
    else:
        length = response[p]
        p += 1
    auth = response[p : p + length]
    p += length
    if caps & CLIENT_CONNECT_WITH_DB and p < len(response):
        p = response.index(b"\0", p) + 1
    plugin = SHA2 if caps & CLIENT_PLUGIN_AUTH else NATIVE
    if caps & CLIENT_PLUGIN_AUTH and p < len(response):
        plugin = response[p : response.index(b"\0", p)].decode() or NATIVE
    return user, auth, plugin


_RSA: list[Any] = []


def _rsa_key() -> Any:
    """The server's RSA key pair (made once per process, as MySQL's auto-generated keys)."""
    if not _RSA:
        from cryptography.hazmat.primitives.asymmetric import rsa

        _RSA.append(rsa.generate_private_key(public_exponent=65537, key_size=2048))
    return _RSA[0]


def rsa_pem() -> bytes:
    from cryptography.hazmat.primitives import serialization

    return bytes(_rsa_key().public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    ))  # fmt: skip


def rsa_decrypt(secret: bytes, scramble: bytes) -> bytes:
    """``caching_sha2_password`` over clear text: RSA-OAEP (SHA-1) of the password + NUL XOR the
    scramble."""
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import padding

    oaep = padding.OAEP(mgf=padding.MGF1(hashes.SHA1()), algorithm=hashes.SHA1(), label=None)
    try:
        mixed = _rsa_key().decrypt(secret, oaep)
    except ValueError:
        return b""
    return bytes(b ^ scramble[i % len(scramble)] for i, b in enumerate(mixed))


def sha256_answer(password: str, scramble: bytes) -> bytes:
    if not password:
        return b""
    stage1 = hashlib.sha256(password.encode()).digest()
    mix = hashlib.sha256(hashlib.sha256(stage1).digest() + scramble).digest()
    return bytes(a ^ b for a, b in zip(stage1, mix, strict=True))


def native_answer(password: str, scramble: bytes) -> bytes:
    if not password:
        return b""
    stage1 = hashlib.sha1(password.encode()).digest()
    mix = hashlib.sha1(scramble + hashlib.sha1(stage1).digest()).digest()
    return bytes(a ^ b for a, b in zip(stage1, mix, strict=True))
