"""Transactions the server streams before they commit (pgoutput protocol version 2, ``streaming
'on'``, PostgreSQL 14+), held until their commit.

A transaction larger than the server's ``logical_decoding_work_mem`` is sent in blocks between
Stream Start and Stream Stop while it runs, interleaved with other transactions, and ends with
Stream Commit or Stream Abort. Nothing of it may reach the store before its commit (exactly
once: an offset is a commit boundary, and an aborted transaction must leave no trace), so its
messages are kept as they came, in memory up to MEMORY_LIMIT bytes over all open transactions
and in a file per transaction beyond it (the spill the server would otherwise do in its own
``pg_replslot``). Each message carries the xid of the (sub)transaction that made it: a Stream
Abort of a subtransaction drops that subtransaction's messages only. At Stream Commit the
messages come back in order as protocol version 1 payloads (the xid taken out), for the reader
to apply as one ordinary transaction at the commit's place in the log.
"""

from __future__ import annotations

import os
import struct
import tempfile
from collections.abc import Iterator
from typing import BinaryIO

MEMORY_LIMIT = 64 << 20
CONTROL = frozenset(b"SEcA")  # Stream Start, Stop, Commit, Abort: not kept
_HEAD = struct.Struct(">II")  # a spilled message: its length and its (sub)transaction's xid
_XID = struct.Struct(">I")


class StreamedTransaction:
    """One streamed transaction's messages: (subtransaction xid, version 1 payload), in order."""

    def __init__(self, xid: int) -> None:
        self.xid = xid
        self.kept: list[tuple[int, bytes]] = []
        self.bytes = 0  # of ``kept``
        self.aborted: set[int] = set()
        self.spill: BinaryIO | None = None

    def add(self, payload: bytes) -> int:
        """A message of a Stream block (its xid after the type byte); the bytes it holds."""
        subxid = _XID.unpack_from(payload, 1)[0]
        body = payload[:1] + payload[5:]
        self.kept.append((subxid, body))
        size = len(body) + 64
        self.bytes += size
        return size

    def spill_to(self, folder: str) -> None:
        """Move the messages kept in memory to this transaction's file."""
        if self.spill is None:
            # open across calls, closed by close()
            self.spill = tempfile.TemporaryFile(dir=folder, prefix=f"xid-{self.xid}-")  # noqa: SIM115
        write = self.spill.write
        for subxid, body in self.kept:
            write(_HEAD.pack(len(body), subxid))
            write(body)
        self.kept, self.bytes = [], 0

    def messages(self) -> Iterator[bytes]:
        """Every message of a subtransaction not aborted, in the order they came."""
        aborted = self.aborted
        if self.spill is not None:
            spill = self.spill
            spill.flush()
            spill.seek(0)
            while head := spill.read(_HEAD.size):
                length, subxid = _HEAD.unpack(head)
                body = spill.read(length)
                if subxid not in aborted:
                    yield body
        for subxid, body in self.kept:
            if subxid not in aborted:
                yield body

    def close(self) -> None:
        if self.spill is not None:
            self.spill.close()
            self.spill = None
        self.kept, self.bytes = [], 0


class StreamedTransactions:
    """The streamed transactions open on one replication stream (see the module docstring)."""

    def __init__(self, memory_limit: int = MEMORY_LIMIT) -> None:
        self.memory_limit = memory_limit
        self.open: dict[int, StreamedTransaction] = {}
        self.block: StreamedTransaction | None = None  # inside Stream Start .. Stream Stop
        self.held = 0  # bytes in memory over all open transactions
        self._folder: str | None = None

    def start(self, xid: int) -> None:
        self.block = self.open.get(xid) or self.open.setdefault(xid, StreamedTransaction(xid))

    def stop(self) -> None:
        self.block = None

    def add(self, payload: bytes) -> None:
        """A message inside the current block."""
        block = self.block
        assert block is not None
        self.held += block.add(payload)
        if self.held > self.memory_limit:
            self.held -= block.bytes
            block.spill_to(self._spill_folder())

    def abort(self, xid: int, subxid: int) -> None:
        """Stream Abort: the whole transaction, or one subtransaction of it."""
        found = self.open.get(xid)
        if found is None:
            return
        if subxid == xid:
            self._drop(found)
        else:
            found.aborted.add(subxid)

    def commit(self, xid: int) -> Iterator[bytes]:
        """Stream Commit: the transaction's messages (none if the stream never sent any)."""
        found = self.open.get(xid)
        if found is None:
            return
        try:
            yield from found.messages()
        finally:
            self._drop(found)

    def _drop(self, found: StreamedTransaction) -> None:
        self.held -= found.bytes
        found.close()
        del self.open[found.xid]

    def reset(self) -> None:
        """A new stream: the server sends every open transaction again from its start."""
        for found in self.open.values():
            found.close()
        self.open.clear()
        self.block, self.held = None, 0

    def close(self) -> None:
        self.reset()
        if self._folder is not None:
            os.rmdir(self._folder)
            self._folder = None

    def _spill_folder(self) -> str:
        if self._folder is None:
            self._folder = tempfile.mkdtemp(prefix="sparkcdc-streamed-")
        return self._folder
