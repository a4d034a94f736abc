"""HTTP/1.1 messages as the fault proxy (:mod:`.http_proxy`) frames them (RFC 9112): a head
read line by line, its body's length (``Content-Length``, chunked coding, or until the
connection closes) and the body copied through as it comes, chunk by chunk, optionally paced
to a rate."""

from __future__ import annotations

import io
import time
from dataclasses import dataclass
from typing import Protocol

MAX_HEAD = 64 * 1024
PIECE = 64 * 1024


class Sink(Protocol):
    def sendall(self, data: bytes, /) -> None: ...


@dataclass(frozen=True)
class Head:
    """A request's or answer's start line and header fields, as they came."""

    start: bytes
    fields: tuple[tuple[bytes, bytes], ...]

    def get(self, name: str) -> str | None:
        wanted = name.encode().lower()
        found = [v for k, v in self.fields if k.strip().lower() == wanted]
        return b", ".join(v.strip() for v in found).decode("latin-1") if found else None

    def has_token(self, name: str, token: str) -> bool:
        value = self.get(name) or ""
        return token in (t.strip().lower() for t in value.split(","))

    @property
    def method(self) -> str:
        return self.start.split(b" ", 1)[0].decode("latin-1")

    @property
    def status(self) -> int:
        """An answer's status code."""
        return int(self.start.split(b" ", 2)[1])

    @property
    def interim(self) -> bool:
        return 100 <= self.status < 200

    @property
    def expects_continue(self) -> bool:
        return self.has_token("expect", "100-continue")

    @property
    def wants_close(self) -> bool:
        """``Connection: close``, or HTTP/1.0 without keep-alive."""
        if self.has_token("connection", "close"):
            return True
        old = self.start.startswith(b"HTTP/1.0") or self.start.endswith(b"HTTP/1.0")
        return old and not self.has_token("connection", "keep-alive")

    def encoded(self, without: tuple[str, ...] = ()) -> bytes:
        kept = [k + b":" + v for k, v in self.fields if k.strip().lower().decode() not in without]
        return b"\r\n".join([self.start, *kept]) + b"\r\n\r\n"


def read_head(stream: io.BufferedReader) -> Head | None:
    """The next head on ``stream``; None if it ends before one begins."""
    start = stream.readline(MAX_HEAD)
    while start in (b"\r\n", b"\n"):  # stray empty lines before a message are allowed
        start = stream.readline(MAX_HEAD)
    if not start:
        return None
    fields: list[tuple[bytes, bytes]] = []
    size = len(start)
    while True:
        line = stream.readline(MAX_HEAD)
        size += len(line)
        if not line or size > MAX_HEAD:
            raise ValueError("a message head cut short or too long")
        if line in (b"\r\n", b"\n"):
            break
        name, sep, value = line.rstrip(b"\r\n").partition(b":")
        if not sep:
            raise ValueError(f"not a header field: {line[:80]!r}")
        fields.append((name, value))
    return Head(start.rstrip(b"\r\n"), tuple(fields))


@dataclass(frozen=True)
class Framing:
    """How a body ends: after ``length`` bytes, at a zero-size chunk, or when the connection
    closes."""

    length: int = 0
    chunked: bool = False
    until_close: bool = False


def request_body(head: Head) -> Framing:
    if head.has_token("transfer-encoding", "chunked"):
        return Framing(chunked=True)
    return Framing(length=int(head.get("content-length") or 0))


def response_body(head: Head, method: str) -> Framing:
    """An answer's body to a ``method`` request (none to HEAD, nor with 1xx, 204 or 304)."""
    if method == "HEAD" or head.interim or head.status in (204, 304):
        return Framing()
    if head.has_token("transfer-encoding", "chunked"):
        return Framing(chunked=True)
    length = head.get("content-length")
    return Framing(length=int(length)) if length is not None else Framing(until_close=True)


class _Pace:
    """Sleeps so that the bytes passed never run ahead of ``rate`` a second."""

    def __init__(self, rate: int | None) -> None:
        self.rate, self.began, self.sent = rate, time.monotonic(), 0

    def piece(self) -> int:
        return PIECE if self.rate is None else max(1024, min(PIECE, self.rate // 10))

    def passed(self, n: int) -> None:
        self.sent += n
        if self.rate is not None:
            ahead = self.sent / self.rate - (time.monotonic() - self.began)
            if ahead > 0:
                time.sleep(ahead)


def copy_body(
    source: io.BufferedReader, to: Sink | None, framing: Framing, rate: int | None
) -> None:
    """The body ``framing`` says from ``source`` to ``to`` as it comes (None: dropped),
    chunked coding kept as it is (chunk sizes, extensions, trailer)."""
    pace = _Pace(rate)
    if framing.chunked:
        while True:
            line = source.readline(MAX_HEAD)
            if not line.endswith(b"\n"):
                raise ValueError("a chunk size line cut short")
            _send(to, line, pace)
            size = int(line.split(b";", 1)[0].strip(), 16)
            if size == 0:
                _copy_trailer(source, to, pace)
                return
            _copy_exact(source, to, size + 2, pace)  # the chunk and its CRLF
    elif framing.until_close:
        while piece := source.read1(pace.piece()):
            _send(to, piece, pace)
    else:
        _copy_exact(source, to, framing.length, pace)


def _copy_exact(source: io.BufferedReader, to: Sink | None, n: int, pace: _Pace) -> None:
    while n > 0:
        piece = source.read1(min(n, pace.piece()))
        if not piece:
            raise ConnectionError(f"the body ended {n} bytes short")
        _send(to, piece, pace)
        n -= len(piece)


def _copy_trailer(source: io.BufferedReader, to: Sink | None, pace: _Pace) -> None:
    while True:
        line = source.readline(MAX_HEAD)
        if not line:
            raise ConnectionError("the chunked body ended inside its trailer")
        _send(to, line, pace)
        if line in (b"\r\n", b"\n"):
            return


def _send(to: Sink | None, data: bytes, pace: _Pace) -> None:
    if to is not None:
        to.sendall(data)
    pace.passed(len(data))
