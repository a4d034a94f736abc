"""TLS on a connected socket, the records kept in memory (:class:`ssl.MemoryBIO`), for the wire
client's sessions (:mod:`.connection`).

Why not :class:`ssl.SSLSocket`: a WAL sender flushes each message as it goes, so inside TLS a
replication stream arrives as one small record per change, and an ``SSLSocket`` read returns
one record (two system calls). Here one ``recv`` takes every byte of ciphertext that arrived,
and :meth:`TlsSocket.recv_into` decrypts all the whole records buffered into the caller's
buffer in one call, so the stream keeps reading many changes per socket read, as in clear text.

:class:`TlsSocket` has the few socket methods the client uses: ``recv_into`` (with
``MSG_DONTWAIT``: ``BlockingIOError`` when no whole record is buffered and none has arrived;
the records buffered are read before the socket, so a caller polls the socket only after such
a read), ``sendall`` (encrypt, then send the records), ``settimeout``/``gettimeout``,
``fileno`` and ``close`` (with a close_notify alert).
"""

from __future__ import annotations

import contextlib
import socket
import ssl
from typing import cast

CIPHERTEXT_READ = 256 << 10  # bytes of ciphertext one socket read takes at most


class TlsSocket:
    """A client TLS session over ``sock``, handshaken on construction (``server_hostname``:
    the name to check the certificate against, if the context checks names)."""

    def __init__(
        self, sock: socket.socket, ctx: ssl.SSLContext, server_hostname: str | None
    ) -> None:
        self.sock = sock
        self._incoming, self._outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
        self._tls = ctx.wrap_bio(self._incoming, self._outgoing, server_hostname=server_hostname)
        self._raw = bytearray(CIPHERTEXT_READ)
        self._raw_view = memoryview(self._raw)
        self._eof = False
        while True:
            try:
                self._tls.do_handshake()
                break
            except ssl.SSLWantReadError:
                self._flush()
                if not self._fill(0):
                    raise ConnectionResetError("the server closed the connection") from None
            except ssl.SSLError:
                with contextlib.suppress(OSError):
                    self._flush()  # the alert saying why, for the server's log
                raise
        self._flush()

    def version(self) -> str | None:
        """The TLS version agreed (``TLSv1.3``)."""
        return self._tls.version()

    def cipher(self) -> tuple[str, str, int] | None:
        return self._tls.cipher()

    def _flush(self) -> None:
        """Send the records the TLS session has written."""
        data = self._outgoing.read()
        if data:
            self.sock.sendall(data)

    def _fill(self, flags: int) -> bool:
        """One socket read of ciphertext into the session; False at the end of the stream."""
        n = self.sock.recv_into(self._raw_view, CIPHERTEXT_READ, flags)
        if n == 0:
            self._eof = True
            self._incoming.write_eof()
            return False
        self._incoming.write(self._raw_view[:n])
        return True

    def recv_into(self, buffer: memoryview, nbytes: int = 0, flags: int = 0) -> int:
        """Decrypted bytes into ``buffer`` (up to ``nbytes``, 0: its length): every whole
        record buffered, else those one socket read brings; 0 at the end of the stream."""
        size = nbytes or len(buffer)
        read, got = self._tls.read, 0
        while got < size:
            try:
                n = cast(int, read(size - got, buffer[got:]))  # with a buffer: a count
            except ssl.SSLWantReadError:
                if got or self._eof:
                    break
                if not self._fill(flags):
                    break
                continue
            except (ssl.SSLZeroReturnError, ssl.SSLEOFError):
                break  # the server ended the session
            if n == 0:
                break
            got += n
        if self._outgoing.pending:
            self._flush()  # a post-handshake answer (a key update)
        return got

    def sendall(self, data: bytes) -> None:
        self._tls.write(data)
        self._flush()

    def settimeout(self, timeout: float | None) -> None:
        self.sock.settimeout(timeout)

    def gettimeout(self) -> float | None:
        return self.sock.gettimeout()

    def fileno(self) -> int:
        return self.sock.fileno()

    def close(self) -> None:
        """Send close_notify (if the socket takes it at once) and close the socket."""
        with contextlib.suppress(OSError, ValueError):
            self.sock.settimeout(0.0)
            with contextlib.suppress(ssl.SSLWantReadError):
                self._tls.unwrap()
            self._flush()
        self.sock.close()
