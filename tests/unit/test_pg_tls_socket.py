"""The wire client's TLS socket without a server: over a socket pair whose other end is a TLS
server of the test's own (a certificate made with openssl), the replication stream reads one
record per message, as a WAL sender writes them, many records per socket read, whether the
ciphertext arrives in large pieces or a few bytes at a time; status updates go back inside TLS;
a certificate the client does not trust fails the handshake."""

from __future__ import annotations

import socket
import ssl
import struct
import threading
import time
from pathlib import Path

import pytest

from sparkcdc.config.model import TlsConfig
from sparkcdc.sources.postgres.wire import messages as m
from sparkcdc.sources.postgres.wire.connection import PgConnection
from sparkcdc.sources.postgres.wire.stream import ReplicationStream, unpack_xlog
from sparkcdc.sources.postgres.wire.tls import TlsSocket
from sparkcdc.sources.tls import context
from tests.cases.tls import make_certificates


class TlsServer:
    """The server end of a socket pair: handshakes, then sends messages, one TLS record each,
    as ciphertext cut into ``piece``-byte parts; what the client sends back is decrypted into
    :attr:`received`."""

    def __init__(self, sock: socket.socket, certs: dict[str, Path]) -> None:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(certs["server"], certs["key"])
        self.sock, self._in, self._out = sock, ssl.MemoryBIO(), ssl.MemoryBIO()
        self.tls = ctx.wrap_bio(self._in, self._out, server_side=True)
        self.received = b""

    def handshake(self) -> None:
        while True:
            try:
                self.tls.do_handshake()
                break
            except ssl.SSLWantReadError:
                self.sock.sendall(self._out.read())
                self._in.write(self.sock.recv(65536))
        self.sock.sendall(self._out.read())

    def send(self, messages: list[bytes], piece: int) -> None:
        for message in messages:
            self.tls.write(message)  # one record per write
        data = self._out.read()
        for i in range(0, len(data), piece):
            self.sock.sendall(data[i : i + piece])
            time.sleep(0.0002)

    def receive(self, size: int) -> None:
        """Read from the client until ``size`` bytes of plain text came."""
        while len(self.received) < size:
            try:
                self.received += self.tls.read(65536)
            except ssl.SSLWantReadError:
                self._in.write(self.sock.recv(65536))


def xlog(lsn: int, payload: bytes) -> bytes:
    return m.copy_data(b"w" + struct.pack(">QQQ", lsn, lsn, 0) + payload)


def keepalive(wal_end: int) -> bytes:
    return m.copy_data(b"k" + struct.pack(">QqB", wal_end, 0, 1))


def stream_over(sock: TlsSocket, bufsize: int) -> ReplicationStream:
    """A started stream on the client's TLS socket: a PgConnection as a started one would be."""
    conn = PgConnection.__new__(PgConnection)
    conn.where, conn.user, conn.database, conn.replication = "PostgreSQL at test", "u", "d", True
    conn.sock, conn.status, conn.parameters, conn.columns = sock, "I", {}, []
    conn.reader = m.MessageReader(sock, conn.where, bufsize=bufsize)
    return ReplicationStream(conn, "s1", 0x100, status_interval=60)


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return make_certificates(tmp_path_factory.mktemp("certs"))


@pytest.mark.parametrize(
    ("count", "piece", "bufsize", "batched"), [(3000, 65536, 1 << 20, True), (100, 7, 64, False)]
)
def test_a_record_per_message_is_read_many_records_at_a_time(
    certs: dict[str, Path], count: int, piece: int, bufsize: int, batched: bool
) -> None:
    """``batched``: large pieces into a large buffer, so a read takes many records."""
    payloads = [b"I" + str(i).encode() * 20 for i in range(count)]
    messages = [xlog(0x200 + i, p) for i, p in enumerate(payloads)]
    messages.insert(count // 2, keepalive(0x9000))  # answered inside TLS, at once
    ours, theirs = socket.socketpair()
    with ours, theirs:
        server = TlsServer(theirs, certs)
        handshake = threading.Thread(target=server.handshake)
        handshake.start()
        sock = TlsSocket(ours, context(TlsConfig("verify-ca", ca=str(certs["ca"]))), None)
        handshake.join()
        assert sock.version() == "TLSv1.3"
        stream = stream_over(sock, bufsize)
        stream.confirm(0x250)
        sender = threading.Thread(target=server.send, args=(messages + [m.COPY_DONE], piece))
        sender.start()
        batches = [batch for batch in stream.batches(wait=5.0) if batch]
        sender.join()
        items = [item for batch in batches for item in batch]
        assert [unpack_xlog(item)[2] for item in items] == payloads
        assert stream.server_wal_end == 0x9000
        if batched:
            assert len(batches) < count / 20  # many records per read, not one
        server.receive(39)  # the keepalive's answer: the confirmed position, no more
        kind, size, sub, write, flush, apply, _, _ = struct.unpack(">cIcQQQqB", server.received)
        assert (kind, size, sub, write, flush, apply) == (b"d", 38, b"r", 0x250, 0x250, 0x250)


def test_a_certificate_the_client_does_not_trust_fails_the_handshake(
    certs: dict[str, Path], tmp_path: Path
) -> None:
    other = make_certificates(tmp_path)["ca"]
    ours, theirs = socket.socketpair()
    seen: list[Exception] = []

    def serve() -> None:
        try:
            server.handshake()
        except OSError as exc:
            seen.append(exc)

    with ours, theirs:
        server = TlsServer(theirs, certs)
        handshake = threading.Thread(target=serve)
        handshake.start()
        with pytest.raises(ssl.SSLCertVerificationError):
            TlsSocket(ours, context(TlsConfig("verify-ca", ca=str(other))), None)
        handshake.join()
    assert isinstance(seen[0], ssl.SSLError) and "alert unknown ca" in str(seen[0])
