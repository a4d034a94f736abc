"""The streamed transactions' holder: messages back in order as protocol version 1 payloads,
a subtransaction's abort dropping its messages only, a whole abort dropping all, and the same
from a spill file past the memory limit."""

from __future__ import annotations

import os
import struct

import pytest

from sparkcdc.sources.postgres.stream.streamed import StreamedTransactions


def message(kind: bytes, xid: int, body: bytes) -> bytes:
    return kind + struct.pack(">I", xid) + body


@pytest.mark.parametrize("limit", [1 << 20, 100])
def test_messages_come_back_in_order_without_aborted_subtransactions(limit: int) -> None:
    held = StreamedTransactions(memory_limit=limit)
    held.start(7)
    held.add(message(b"R", 7, b"relation"))
    held.add(message(b"I", 7, b"row-1"))
    held.add(message(b"I", 8, b"row-in-sub"))  # subtransaction 8
    held.stop()
    held.start(9)  # another transaction, aborted whole
    held.add(message(b"I", 9, b"gone" * 40))
    held.stop()
    held.start(7)
    held.add(message(b"I", 7, b"row-2"))
    held.stop()
    held.abort(7, 8)
    held.abort(9, 9)
    assert list(held.open) == [7]
    spilled = held._folder is not None
    assert spilled == (limit == 100)
    assert list(held.commit(7)) == [b"Rrelation", b"Irow-1", b"Irow-2"]
    assert held.open == {} and held.held == 0
    assert list(held.commit(11)) == []  # never streamed: nothing
    folder = held._folder
    held.close()
    assert folder is None or not os.path.exists(folder)
