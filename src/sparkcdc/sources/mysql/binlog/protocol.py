"""A minimal MySQL client protocol speaker for one purpose: a binlog dump (replication) stream.

It does exactly what a replica's I/O thread does and nothing more: handshake v10 with
``mysql_native_password`` (and auth switch), a few ``SET`` statements, then
``COM_BINLOG_DUMP``; after that the server pushes one binlog event per packet. Packets are read
through one large receive buffer, so an event costs a slice, not a system call.

Catalog queries use an ordinary driver (pymysql); this module never reaches into its internals.
"""

from __future__ import annotations

import contextlib
import select
import socket
import ssl
import struct
from collections.abc import Callable, Iterator

from sparkcdc.config.model import SourceConfig
from sparkcdc.config.secret import Secret
from sparkcdc.core.errors import ConnectionFailed, LogPositionGone, MissingPrivilege, SourceError
from sparkcdc.sources.mysql.binlog.auth import FIRST_ANSWERS, auth_response, more_data
from sparkcdc.sources.mysql.binlog.packets import MAX_PACKET, split_events
from sparkcdc.sources.tls import context as tls_context
from sparkcdc.sources.tls import handshake_failed, not_encrypted

_CAPS = (
    0x00000001  # LONG_PASSWORD
    | 0x00000004  # LONG_FLAG
    | 0x00000200  # PROTOCOL_41
    | 0x00002000  # TRANSACTIONS
    | 0x00008000  # SECURE_CONNECTION
    | 0x00020000  # MULTI_RESULTS
    | 0x00080000  # PLUGIN_AUTH
)
_CLIENT_SSL = 0x00000800
_COM_QUERY = 0x03
_COM_BINLOG_DUMP = 0x12
_COM_BINLOG_DUMP_GTID = 0x1E  # MySQL: flags u16, server id u32, file, pos u64, GTID set
_THROUGH_GTID = 0x04  # its flag: the GTID set is sent

# server errors that mean "the position you asked for is not on the server (any more)"
_LOG_GONE = {1236}
_NO_PRIVILEGE = {1227, 1045}


class PacketReader:
    """Reads MySQL packets from a socket through one growing receive buffer."""

    def __init__(self, sock: socket.socket, bufsize: int = 1 << 20) -> None:
        self.sock = sock
        self.buf = bytearray(bufsize)
        self.view = memoryview(self.buf)
        self.start = 0
        self.end = 0
        self.seq = 0

    def _fill(self, need: int) -> None:
        """Make at least ``need`` bytes available at ``self.start``."""
        if self.end - self.start >= need:
            return
        if self.start + need > len(self.buf):
            pending = self.end - self.start
            if need > len(self.buf):
                grown = bytearray(max(need, 2 * len(self.buf)))
                grown[:pending] = self.buf[self.start : self.end]
                self.buf, self.view = grown, memoryview(grown)
            else:
                self.buf[:pending] = self.buf[self.start : self.end]
            self.start, self.end = 0, pending
        while self.end - self.start < need:
            try:
                n = self.sock.recv_into(self.view[self.end :])
            except TimeoutError as exc:
                raise ConnectionFailed(
                    "the MySQL server stopped answering on the replication connection; "
                    "it will be retried"
                ) from exc
            except OSError as exc:
                raise ConnectionFailed(
                    f"the replication connection to MySQL broke ({exc}); it will be retried"
                ) from exc
            if n == 0:
                raise ConnectionFailed(
                    "the MySQL server closed the replication connection; it will be retried"
                )
            self.end += n

    def read(self) -> bytes:
        """One logical packet (continuation packets joined)."""
        parts: list[bytes] = []
        while True:
            self._fill(4)
            b = self.buf
            s = self.start
            length = b[s] | (b[s + 1] << 8) | (b[s + 2] << 16)
            self.seq = (b[s + 3] + 1) & 0xFF
            self._fill(4 + length)
            s = self.start
            payload = self.view[s + 4 : s + 4 + length].tobytes()
            self.start = s + 4 + length
            if length < MAX_PACKET:
                if parts:
                    parts.append(payload)
                    return b"".join(parts)
                return payload
            parts.append(payload)


def _packet_kind(first: int) -> str:
    return "an empty packet" if first < 0 else f"a packet starting 0x{first:02x}"


def _err_text(packet: bytes) -> tuple[int, str]:
    """An ERR packet's code and message (a packet too short for a code: code 0)."""
    if len(packet) < 3:
        return 0, "an error packet without its code"
    code = struct.unpack_from("<H", packet, 1)[0]
    text = packet[3:]
    if text[:1] == b"#":
        text = text[6:]
    return code, text.decode("utf-8", "replace")


class ReplicationConnection:
    """One authenticated connection able to run ``SET`` statements and start a binlog dump."""

    def __init__(self, source: SourceConfig) -> None:
        host, port, password = source.host, source.port, source.password
        self.where = f"{host}:{port}"
        self.host = host
        self.user = source.user
        self.tls = source.tls
        try:
            self.sock = socket.create_connection((host, port), timeout=source.connect_timeout)
        except OSError as exc:
            raise ConnectionFailed(
                f"cannot reach MySQL at {self.where} ({exc.strerror or exc}); "
                "check source.host and source.port",
                host=host,
                port=port,
            ) from exc
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        self.reader = PacketReader(self.sock)
        self._poller: select.poll | None = None
        self._handshake(password)

    def _send(self, payload: bytes, seq: int) -> None:
        header = struct.pack("<I", len(payload))[:3] + bytes([seq & 0xFF])
        self.sock.sendall(header + payload)

    def _handshake(self, password: Secret) -> None:
        greeting = self.reader.read()
        if greeting[:1] == b"\xff":
            raise ConnectionFailed(
                f"MySQL at {self.where} refused the connection: {_err_text(greeting)[1]}"
            )
        end = greeting.index(b"\0", 1)
        self.server_version = greeting[1:end].decode("ascii", "replace")
        p = end + 1 + 4  # server version, connection id
        salt = greeting[p : p + 8]
        low, high = struct.unpack_from("<H", greeting, p + 9)[0], 0
        if len(greeting) > p + 16:
            high = struct.unpack_from("<H", greeting, p + 14)[0]
        caps = _CAPS | self._start_tls(low | high << 16)
        p += 8 + 1 + 2 + 1 + 2 + 2  # salt part 1, filler, caps, charset, status, caps
        auth_len = greeting[p]
        p += 1 + 10
        part2 = max(13, auth_len - 8)
        salt += greeting[p : p + part2].rstrip(b"\0")
        self._scramble = salt
        plugin = greeting[p + part2 :].split(b"\0", 1)[0]
        if plugin not in FIRST_ANSWERS:
            plugin = b"mysql_native_password"
        auth = FIRST_ANSWERS[plugin](password.reveal(), salt)
        response = (
            struct.pack("<IIB", caps, MAX_PACKET, 45)
            + b"\0" * 23
            + self.user.encode()
            + b"\0"
            + bytes([len(auth)])
            + auth
            + plugin
            + b"\0"
        )
        self._send(response, self.reader.seq)
        self._login_rounds(password, self.reader.read())

    def _login_rounds(self, password: Secret, reply: bytes) -> None:
        """The server's answers to the login until OK: an auth switch request (``0xfe``),
        ``caching_sha2_password``'s more data (``0x01``), or an error."""
        if reply[:1] == b"\xfe":  # auth switch request
            name, _, data = reply[1:].partition(b"\0")
            self._scramble = data.rstrip(b"\0")
            answer = auth_response(name, password.reveal(), data)
            if answer is None:
                raise ConnectionFailed(
                    f"MySQL at {self.where} asks for the {name.decode()} authentication plugin; "
                    "give the CDC user a mysql_native_password, caching_sha2_password or "
                    "ed25519 password"
                )
            self._send(answer, self.reader.seq)
            reply = self.reader.read()
        while reply[:1] == b"\x01":
            try:
                encrypted = isinstance(self.sock, ssl.SSLSocket)
                answer = more_data(reply, password.reveal(), encrypted, self._scramble)
            except ValueError as exc:
                raise ConnectionFailed(f"MySQL at {self.where}: {exc}", key="source.tls") from exc
            if answer is not None:
                self._send(answer, self.reader.seq)
            reply = self.reader.read()
        if reply[:1] == b"\xff":
            code, text = _err_text(reply)
            raise ConnectionFailed(
                f"MySQL at {self.where} refused user '{self.user}' ({text}); "
                "check source.user and source.password",
                code=code,
            )

    def _start_tls(self, server_caps: int) -> int:
        """Switch to TLS as ``source.tls`` says, before the login (an SSL request packet, then
        the TLS handshake on the socket): the capability flag to log in with (0: clear text)."""
        ctx = tls_context(self.tls)
        if ctx is None or not server_caps & _CLIENT_SSL:
            if self.tls.required:
                raise not_encrypted(self.where, self.tls)
            return 0
        request = struct.pack("<IIB", _CAPS | _CLIENT_SSL, MAX_PACKET, 45) + b"\0" * 23
        self._send(request, self.reader.seq)
        self.reader.seq += 1
        try:
            host = self.host if ctx.check_hostname else None
            self.sock = self.reader.sock = ctx.wrap_socket(self.sock, server_hostname=host)
        except (ssl.SSLError, ssl.CertificateError) as exc:
            raise handshake_failed(f"MySQL at {self.where}", exc) from exc
        return _CLIENT_SSL

    def query(self, sql: str) -> None:
        """Run a statement that returns no rows (``SET …``)."""
        self._send(bytes([_COM_QUERY]) + sql.encode(), 0)
        reply = self.reader.read()
        if reply[:1] == b"\xff":
            code, text = _err_text(reply)
            raise SourceError(f"MySQL rejected `{sql}`: {text}", code=code)

    def dump(
        self,
        server_id: int,
        file: str,
        pos: int,
        idle: Callable[[], None] | None = None,
        gtid_set: bytes | None = None,
    ) -> Iterator[list[bytes]]:
        """Start COM_BINLOG_DUMP (or, given MySQL's encoded ``gtid_set``, COM_BINLOG_DUMP_GTID
        from the first transaction not in it) and yield its events' bytes (header included, OK
        byte cut), as lists of the events received whole so far.

        ``idle`` is called whenever the receive buffer holds no complete event, before reading
        from the socket (which may then wait for the server)."""
        self.sock.settimeout(None)
        if gtid_set is None:
            payload = struct.pack("<BIHI", _COM_BINLOG_DUMP, pos, 0, server_id) + file.encode()
        else:
            name = file.encode()
            payload = (
                struct.pack("<BHII", _COM_BINLOG_DUMP_GTID, _THROUGH_GTID, server_id, len(name))
                + name + struct.pack("<QI", pos, len(gtid_set)) + gtid_set
            )  # fmt: skip
        self._send(payload, 0)
        reader = self.reader
        while True:
            # fast path: the events whose packets are in the buffer whole, copied out once
            events, reader.start, seq = split_events(reader.buf, reader.start, reader.end)
            if events:
                reader.seq = (seq + 1) & 0xFF
                yield events
                continue
            if idle is not None:
                idle()
            packet = reader.read()
            first = packet[0] if packet else -1
            if first == 0:
                yield [packet[1:]]
            elif first == 0xFF:
                raise self._dump_error(packet, file, pos)
            elif first == 0xFE and len(packet) < 9:
                return
            else:
                raise SourceError(
                    f"the server sent {_packet_kind(first)} on the binlog stream where binlog "
                    "events come; the stream stops here rather than guess what it held"
                )

    def _dump_error(self, packet: bytes, file: str, pos: int) -> SourceError:
        code, text = _err_text(packet)
        if code in _LOG_GONE:
            return LogPositionGone(
                f"the server cannot stream from {file or 'the requested GTID'}:{pos} "
                f"({text}): that binlog was purged or never existed (keep binlogs longer: "
                "binlog_expire_logs_seconds)",
                file=file,
                pos=pos,
            )
        if code in _NO_PRIVILEGE:
            return MissingPrivilege(
                f"user '{self.user}' may not read the binlog ({text}); run "
                f"GRANT REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO '{self.user}'"
            )
        return SourceError(f"the binlog stream failed: {text}", code=code)

    def data_waiting(self) -> bool:
        """Whether the socket can be read without waiting (data, or the end of the stream)."""
        if isinstance(self.sock, ssl.SSLSocket) and self.sock.pending():
            return True  # decrypted and waiting inside the TLS layer
        poller = self._poller
        if poller is None:
            poller = self._poller = select.poll()
            poller.register(self.sock, select.POLLIN)
        return bool(poller.poll(0))

    def set_timeout(self, seconds: float | None) -> None:
        self.sock.settimeout(seconds)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()
