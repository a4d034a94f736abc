"""A loopback TCP proxy the campaign controls, between the pipeline and its database.

The pipeline's file names the proxy's port instead of the server's. Each accepted connection is
one :class:`_Link` of two sockets and one pumping thread; the proxy's :class:`Mode` decides what
the pump does with the bytes, Jepsen's network partitions on one machine::

    pass       forward both ways
    stall      read nothing: the peers' bytes wait in the kernel, delivered once healed
    blackhole  read and drop: the link is dead for good (closed when healed)
    reset      every link closed with RST, new connections reset on arrival
"""

from __future__ import annotations

import contextlib
import enum
import select
import socket
import struct
import threading


class Mode(enum.Enum):
    PASS = "pass"
    STALL = "stall"
    BLACKHOLE = "blackhole"
    RESET = "reset"


def _abort(sock: socket.socket) -> None:
    """Close with RST (linger 0), as a dropped connection arrives at its peer."""
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    with contextlib.suppress(OSError):
        sock.close()


class _Link:
    """One proxied connection: the client's socket and the server's."""

    def __init__(self, client: socket.socket, server: socket.socket) -> None:
        self.client, self.server = client, server
        self.dropped = False  # bytes were thrown away: the stream can never be healed
        self.closed = False

    def close(self) -> None:
        self.closed = True
        _abort(self.client)
        _abort(self.server)

    def pump(self, proxy: TcpProxy) -> None:
        peer = {self.client: self.server, self.server: self.client}
        while not self.closed:
            mode = proxy.mode
            if mode is Mode.RESET or (self.dropped and mode is Mode.PASS):
                self.close()
                return
            if mode is Mode.STALL:
                proxy.changed.wait(0.1)
                continue
            try:
                ready, _, _ = select.select(list(peer), [], [], 0.1)
                for sock in ready:
                    data = sock.recv(65536)
                    if not data:
                        self.close()
                        return
                    if proxy.mode is Mode.BLACKHOLE:
                        self.dropped = True
                    else:
                        peer[sock].sendall(data)
            except OSError:
                self.close()
                return


class TcpProxy:
    """Listens on a free loopback port and forwards to ``127.0.0.1:upstream`` (see the module's
    docstring for the modes); :meth:`close` ends it and every link."""

    def __init__(self, upstream: int) -> None:
        self.upstream = upstream
        self.mode = Mode.PASS
        self.changed = threading.Event()
        self._links: list[_Link] = []
        self._lock = threading.Lock()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.2)
        self.port: int = self._listener.getsockname()[1]
        self._closed = False
        self._thread = threading.Thread(target=self._accept, daemon=True, name="tcp-proxy")
        self._thread.start()

    def set(self, mode: Mode) -> None:
        """Switch every link, present and future, to ``mode``."""
        self.mode = mode
        self.changed.set()
        self.changed.clear()
        if mode is Mode.RESET:
            with self._lock:
                links, self._links = self._links, []
            for link in links:
                link.close()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            if self.mode is Mode.RESET:
                _abort(client)
                continue
            try:
                server = socket.create_connection(("127.0.0.1", self.upstream), timeout=5)
            except OSError:
                _abort(client)  # the server is down: the client sees a reset, as without us
                continue
            client.settimeout(None)
            server.settimeout(None)
            link = _Link(client, server)
            with self._lock:
                self._links = [k for k in self._links if not k.closed] + [link]
            threading.Thread(target=link.pump, args=(self,), daemon=True).start()

    def close(self) -> None:
        self._closed = True
        with contextlib.suppress(OSError):
            self._listener.close()
        with self._lock:
            links, self._links = self._links, []
        for link in links:
            link.close()
        self._thread.join(timeout=5)
