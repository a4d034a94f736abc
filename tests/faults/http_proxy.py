"""A loopback HTTP/1.1 proxy the campaign controls, between the pipeline and its object store.

The pipeline's ``AWS_ENDPOINT_URL`` names the proxy's port instead of the S3 server's. Each
accepted connection is served by one thread, one request after the other (keep-alive), with a
connection of its own to the server. The request's head is read and its body framed
(``Content-Length`` or chunked coding, RFC 9112 section 6); at that boundary the proxy's
behaviour, switchable at any moment, decides the request's fate:

    Pass    forwarded: the head, then the body streamed as it comes, the answer relayed back
            the same way (a streaming PUT or a multipart upload's part never held whole)
    Errors  the body read and dropped, then the status (500 or 503) answered with S3's XML
            error body and ``Retry-After`` when given; the connection kept open unless
            ``close`` (then ``Connection: close`` and closed); with ``methods``, only requests
            of those methods (``PUT``: uploads and their parts), the others as Pass
    Slow    forwarded as Pass after ``delay`` seconds, both bodies throttled to ``rate`` bytes
            a second when given

A request with ``Expect: 100-continue`` gets its ``100 Continue`` from the proxy (the server is
sent the request without it); under Errors it gets the error at once instead, without its body
being read, and the connection is closed (RFC 9110 section 10.1.1).

Trials and tests run it in a process of its own (:mod:`.store_proxy`).
"""

from __future__ import annotations

import contextlib
import io
import socket
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass

from tests.faults.http_messages import Head, copy_body, read_head, request_body, response_body


@dataclass(frozen=True)
class Pass:
    pass


@dataclass(frozen=True)
class Errors:
    status: int = 503
    retry_after: int | None = None
    close: bool = False
    methods: tuple[str, ...] = ()  # only requests of these methods fail (none named: all)


@dataclass(frozen=True)
class Slow:
    delay: float = 1.0
    rate: int | None = None  # bytes a second, each way


Behaviour = Pass | Errors | Slow

_ERROR_CODES = {  # status: reason, S3's code, S3's message
    500: ("Internal Server Error", "InternalError",
          "We encountered an internal error. Please try again."),
    503: ("Service Unavailable", "SlowDown", "Please reduce your request rate."),
}  # fmt: skip


def error_answer(status: int, head_only: bool, retry_after: int | None, close: bool) -> bytes:
    """S3's answer of ``status`` (its XML error body, none to a HEAD request)."""
    reason, code, message = _ERROR_CODES.get(status, ("Error", "InternalError", "Error."))
    request_id = uuid.uuid4().hex[:16].upper()
    body = (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f"<Error><Code>{code}</Code><Message>{message}</Message>"
        f"<RequestId>{request_id}</RequestId></Error>"
    ).encode()
    lines = [
        f"HTTP/1.1 {status} {reason}",
        "Content-Type: application/xml",
        f"Content-Length: {0 if head_only else len(body)}",
        f"x-amz-request-id: {request_id}",
    ]
    if retry_after is not None:
        lines.append(f"Retry-After: {retry_after}")
    if close:
        lines.append("Connection: close")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + (b"" if head_only else body)


class HttpFaultProxy:
    """Listens on a free loopback port and forwards to ``127.0.0.1:upstream`` as its
    :class:`Behaviour` says (the module's docstring); :meth:`close` ends it and every link.
    ``counts``: requests per outcome (``passed``, ``failed``, ``slowed``), and ``connections``."""

    def __init__(self, upstream: int) -> None:
        self.upstream = upstream
        self.behaviour: Behaviour = Pass()
        self.counts: Counter[str] = Counter()
        self._sockets: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.2)
        self.port: int = self._listener.getsockname()[1]
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self._closed = False
        self._thread = threading.Thread(target=self._accept, daemon=True, name="http-proxy")
        self._thread.start()

    def set(self, behaviour: Behaviour) -> None:
        """Every request from now on (those under way finish as they began)."""
        self.behaviour = behaviour

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            client.settimeout(None)
            self.counts["connections"] += 1
            self._track(client)
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _track(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.add(sock)
        if self._closed:
            _close(sock)

    def _serve(self, client: socket.socket) -> None:
        """The requests of one client connection, until either side closes it."""
        link = _Link(self, client)
        try:
            while not self._closed and link.one_request():
                pass
        except (OSError, ValueError):
            pass  # a peer went away or spoke no HTTP: its connection ends, as it would without us
        finally:
            link.close()

    def close(self) -> None:
        self._closed = True
        with contextlib.suppress(OSError):
            self._listener.close()
        with self._lock:
            sockets, self._sockets = self._sockets, set()
        for sock in sockets:
            _close(sock)
        self._thread.join(timeout=5)


def _close(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    with contextlib.suppress(OSError):
        sock.close()


class _Link:
    """One client connection and, once a request is forwarded, its server connection."""

    def __init__(self, proxy: HttpFaultProxy, client: socket.socket) -> None:
        self.proxy, self.client = proxy, client
        self.reader: io.BufferedReader = client.makefile("rb")
        self.server: socket.socket | None = None
        self.server_reader: io.BufferedReader | None = None

    def one_request(self) -> bool:
        """Serve the next request; whether the connection stays open for another."""
        head = read_head(self.reader)
        if head is None:
            return False
        behaviour = self.proxy.behaviour
        if isinstance(behaviour, Errors) and head.method in (behaviour.methods or (head.method,)):
            return self._refuse(head, behaviour)
        if isinstance(behaviour, Slow):
            self.proxy.counts["slowed"] += 1
            time.sleep(behaviour.delay)
            return self._forward(head, behaviour.rate)
        self.proxy.counts["passed"] += 1
        return self._forward(head, None)

    def _refuse(self, head: Head, errors: Errors) -> bool:
        self.proxy.counts["failed"] += 1
        drained = not head.expects_continue
        if drained:
            copy_body(self.reader, None, request_body(head), None)
        close = errors.close or not drained or head.wants_close
        answer = error_answer(errors.status, head.method == "HEAD", errors.retry_after, close)
        self.client.sendall(answer)
        return not close

    def _forward(self, head: Head, rate: int | None) -> bool:
        server, server_reader = self._server()
        server.sendall(head.encoded(without=("expect",)))
        if head.expects_continue:
            self.client.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
        copy_body(self.reader, server, request_body(head), rate)
        answer = read_head(server_reader)
        while answer is not None and answer.interim:  # 1xx of the server's own: not relayed
            answer = read_head(server_reader)
        if answer is None:
            raise ConnectionError("the server closed the connection before it answered")
        self.client.sendall(answer.encoded())
        framing = response_body(answer, head.method)
        copy_body(server_reader, self.client, framing, rate)
        if framing.until_close or answer.wants_close:
            self._drop_server()
            return False
        return not head.wants_close

    def _server(self) -> tuple[socket.socket, io.BufferedReader]:
        """The server connection: kept from the last request unless the server closed it."""
        if self.server is not None and _closed_by_peer(self.server):
            self._drop_server()
        if self.server is None or self.server_reader is None:
            self.server = socket.create_connection(("127.0.0.1", self.proxy.upstream), timeout=120)
            self.proxy._track(self.server)
            self.server_reader = self.server.makefile("rb")
        return self.server, self.server_reader

    def _drop_server(self) -> None:
        if self.server is not None:
            _close(self.server)
        self.server, self.server_reader = None, None

    def close(self) -> None:
        self._drop_server()
        _close(self.client)


def _closed_by_peer(sock: socket.socket) -> bool:
    """Whether an idle kept-alive connection was closed by the server (readable at once)."""
    try:
        sock.setblocking(False)
        try:
            return sock.recv(1, socket.MSG_PEEK) == b""
        except BlockingIOError:
            return False
        finally:
            sock.setblocking(True)
            sock.settimeout(120)
    except OSError:
        return True
