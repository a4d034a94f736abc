"""Tests of the event store: cursors, memory accounting, backpressure, transaction-aware batches."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from itertools import pairwise

import pyarrow as pa
import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from sparkcdc.core.errors import ConfigError, LogPositionGone
from sparkcdc.core.logitem import LogItem
from sparkcdc.sources.mysql.offset import BinlogOffset
from sparkcdc.store import Batch, EventStore, StoreClosed

_COLUMN = pa.array(range(4096), type=pa.int64())


def off(pos: int, skip: int = 0) -> BinlogOffset:
    return BinlogOffset("mysql-bin.000001", pos, skip=skip)


def item(
    pos: int, skip: int = 0, rows: int = 0, ddl: bool = False, inside: bool = False
) -> LogItem:
    """An item of ``64 + 8 * rows`` bytes (a progress marker when ``rows`` is 0); ``inside``: a
    DDL item of a transaction that goes on after it."""
    batch = pa.record_batch([_COLUMN.slice(0, rows)], names=["v"]) if rows else None
    return LogItem(after=off(pos, skip), batch=batch, is_ddl=ddl or inside, open_transaction=inside)


def txn(pos: int, n: int, rows: int = 0) -> list[LogItem]:
    """A transaction starting at ``pos`` cut into ``n`` items; only the last is at a boundary."""
    return [item(pos, skip=i + 1, rows=rows) for i in range(n - 1)] + [item(pos + 100, rows=rows)]


def put_all(store: EventStore, items: list[LogItem]) -> None:
    for it in items:
        assert store.put(it, timeout=0)


def drain(store: EventStore, **limits: int) -> list[Batch]:
    batches = []
    while (batch := store.get(**limits)) is not None:
        batches.append(batch)
        store.ack(batch)
    return batches


def spawn(
    target: Callable[..., object], *args: object
) -> tuple[threading.Thread, dict[str, object]]:
    out: dict[str, object] = {}

    def run() -> None:
        try:
            out["result"] = target(*args)
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            out["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, out


def test_configuration_is_validated() -> None:
    with pytest.raises(ConfigError, match="power of two"):
        EventStore(max_items=1000)
    with pytest.raises(ConfigError, match="batch_mode"):
        EventStore(batch_mode="ROWS")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="positive"):
        EventStore().get(max_items=0)


def test_sequences_and_memory_bookkeeping() -> None:
    store = EventStore(max_bytes=10_000, max_items=8)
    s = store.stats()
    assert (s.put_seq, s.get_seq, s.ack_seq, s.put_mem, s.get_mem, s.ack_mem) == (-1,) * 3 + (
        0,
    ) * 3
    assert store.peek_end() is None and store.get() is None
    items = [item(4, rows=2), item(8), item(12, rows=5)]
    put_all(store, items)
    assert [it.size for it in items] == [80, 64, 104]
    s = store.stats()
    assert (s.put_seq, s.get_seq, s.ack_seq, s.put_mem) == (2, -1, -1, 248)
    assert store.pending_items == 3 and store.pending_bytes == 248 and store.peek_end() == off(12)
    batch = store.get(max_items=2)
    assert batch is not None and (batch.first_seq, batch.last_seq, batch.end) == (0, 1, off(8))
    assert batch.rows == 2 and batch.size == 144 and len(batch.record_batches()) == 1
    s = store.stats()
    assert (s.get_seq, s.get_mem, s.pending_items, s.pending_bytes, s.used_bytes) == (
        1,
        144,
        1,
        104,
        248,
    )
    assert store.ack(batch) == 2
    s = store.stats()
    assert (s.ack_seq, s.ack_mem, s.used_bytes, s.puts, s.gets, s.acks) == (1, 144, 104, 3, 1, 1)
    assert store.acked_end == off(8)
    # the ring wraps: sequences keep growing while slots are reused
    for round_ in range(5):
        put_all(store, [item(100 + i + 10 * round_) for i in range(5)])
        drain(store)
    assert store.stats().put_seq == 27 == store.stats().ack_seq


def test_put_blocks_when_full_by_items_and_resumes_on_ack() -> None:
    store = EventStore(max_items=4, batch_mode="ITEMSIZE", max_bytes=1)  # bytes ignored
    put_all(store, [item(i, rows=50) for i in range(4)])
    assert store.put(item(9), timeout=0.05) is False
    thread, out = spawn(store.put, item(10))
    thread.join(0.1)
    assert thread.is_alive(), "put must block while the store holds max_items items"
    batch = store.get(max_items=1)
    thread.join(0.1)
    assert thread.is_alive(), "get alone frees nothing: only ack does"
    assert batch is not None and store.ack(batch) == 1
    thread.join(2)
    assert not thread.is_alive() and out == {"result": True}
    assert store.peek_end() == off(10)


def test_put_blocks_when_full_by_bytes_and_resumes_on_ack() -> None:
    store = EventStore(max_bytes=200, max_items=64)
    put_all(store, [item(1), item(2), item(3)])  # 192 bytes
    assert store.put(item(4), timeout=0.05) is False
    assert store.stats().used_bytes == 192
    thread, out = spawn(store.put, item(5), 5.0)
    thread.join(0.1)
    assert thread.is_alive()
    batch = store.get(max_items=1)
    assert batch is not None
    store.ack(batch)
    thread.join(2)
    assert out == {"result": True} and store.stats().used_bytes == 192


def test_oversized_item_is_admitted_only_into_an_empty_store() -> None:
    store = EventStore(max_bytes=100, max_items=8)
    big = item(1, rows=100)
    assert big.size == 864
    put_all(store, [item(0)])
    assert store.put(big, timeout=0.02) is False, "a store holding items must not take a giant"
    drain(store)
    assert store.put(big, timeout=0)
    assert store.put(item(2), timeout=0.02) is False, "nothing joins the giant until it is acked"
    batch = store.get()
    assert batch is not None and batch.items == (big,)
    store.ack(batch)
    assert store.put(item(2), timeout=0)


def test_get_ends_at_the_last_transaction_boundary() -> None:
    store = EventStore(max_items=64)
    t1, t2, t3 = txn(10, 2), txn(20, 3), txn(30, 4)
    put_all(store, t1 + t2 + t3[:2])
    batch = store.get()
    assert batch is not None and list(batch.items) == t1 + t2 and batch.end == off(120)
    assert store.get() is None, "an open transaction waits for its end"
    put_all(store, t3[2:])
    batch = store.get()
    assert batch is not None and list(batch.items) == t3 and batch.end.at_boundary


def test_get_limits_cut_at_a_boundary_inside_them() -> None:
    store = EventStore(max_items=64)
    t1, t2 = txn(10, 2, rows=1), txn(20, 3, rows=1)  # 72 bytes per item
    put_all(store, t1 + t2)
    batch = store.get(max_items=4)
    assert batch is not None and list(batch.items) == t1
    by_bytes = EventStore(max_items=64)
    put_all(by_bytes, t1 + t2)
    batch = by_bytes.get(max_bytes=72 * 4)
    assert batch is not None and list(batch.items) == t1
    store.ack(batch.last_seq)
    batch = store.get(max_bytes=72 * 3)
    assert batch is not None and list(batch.items) == t2 and not batch.is_split


def test_transaction_beyond_the_limits_is_split_with_resume_counters() -> None:
    store = EventStore(max_items=64)
    big = txn(10, 10, rows=1)
    put_all(store, [item(1)] + big)
    batches = drain(store, max_items=3)
    assert [len(b.items) for b in batches] == [1, 3, 3, 3, 1]
    assert [b.end.skip for b in batches] == [0, 3, 6, 9, 0]
    assert [it for b in batches for it in b.items] == [item(1)] + big
    assert store.stats().splits == 3


def test_transaction_larger_than_the_store_is_split_when_full() -> None:
    stores = [EventStore(max_items=4, batch_mode="ITEMSIZE"), EventStore(max_bytes=300)]
    for store in stores:
        mode = store.batch_mode
        items = txn(10, 25) + txn(200, 3) + txn(400, 9)
        producer, out = spawn(put_all_blocking, store, items)
        batches: list[Batch] = []
        while sum(len(b.items) for b in batches) < len(items):
            batch = store.get(timeout=2)
            assert batch is not None, f"{mode}: consumer starved"
            batches.append(batch)
            store.ack(batch)
        producer.join(2)
        assert "error" not in out
        assert [it for b in batches for it in b.items] == items
        assert batches[-1].end == off(500) and store.stats().splits > 0
        assert all(a.end < b.end for a, b in pairwise(batches)), "ends move strictly forward"


def put_all_blocking(store: EventStore, items: list[LogItem]) -> None:
    for it in items:
        assert store.put(it, timeout=5)


def test_ddl_items_travel_alone() -> None:
    store = EventStore(max_items=64)
    ddl1, ddl2 = item(30, ddl=True, rows=1), item(31, ddl=True, rows=1)
    t1, t2 = txn(10, 2), txn(40, 2)
    put_all(store, t1 + [ddl1, ddl2] + t2)
    assert [list(b.items) for b in drain(store)] == [t1, [ddl1], [ddl2], t2]
    assert drain(store) == []
    loose = EventStore(max_items=64, ddl_isolation=False)
    put_all(loose, t1 + [ddl1] + t2)
    assert [list(b.items) for b in drain(loose)] == [t1 + [ddl1] + t2]


def test_a_ddl_inside_a_transaction_waits_for_the_transaction_end() -> None:
    store = EventStore(max_items=64)
    before = txn(10, 1)
    ddl = item(200, rows=1, inside=True)  # first in its transaction: after is its start, skip 0
    inner, end = item(200, skip=1, rows=1), item(300, rows=1)
    put_all(store, before + [ddl, inner])
    assert [list(b.items) for b in drain(store)] == [before]
    put_all(store, [end])
    assert [list(b.items) for b in drain(store)] == [[ddl], [inner, end]]


def test_a_ddl_inside_a_transaction_goes_out_when_the_store_is_full() -> None:
    store = EventStore(max_items=2)
    ddl, inner = item(200, rows=1, inside=True), item(200, skip=1, rows=1)
    put_all(store, [ddl, inner])
    assert [list(b.items) for b in drain(store)] == [[ddl]]  # the transaction cannot grow
    assert drain(store) == []  # the inner item waits: there is room again


def test_a_batch_of_progress_markers_is_fine() -> None:
    store = EventStore(max_items=8)
    put_all(store, [item(1), item(2)])
    batch = store.get()
    assert batch is not None and batch.rows == 0 and batch.record_batches() == []


def test_rollback_redelivers_the_same_batches() -> None:
    store = EventStore(max_items=64)
    put_all(store, txn(10, 2) + txn(20, 2) + txn(30, 5))
    first, second = store.get(max_items=2), store.get(max_items=2)
    assert first is not None and second is not None
    store.rollback()
    assert store.stats().get_seq == -1 and store.stats().get_mem == 0
    assert store.get() == first and store.get(max_items=1) == second
    store.ack(first)
    third = store.get(max_items=3)  # a split of the 5-item transaction
    assert third is not None and third.is_split
    store.rollback()
    assert store.get() == second and store.get() == third
    store.ack(second.last_seq + 1)  # ack into the middle of ``third``
    store.rollback()
    again = store.get()
    assert again is not None and again.items == third.items[1:] and again.end == third.end
    assert store.stats().rollbacks == 3


def test_ack_rules() -> None:
    store = EventStore(max_items=8)
    put_all(store, [item(1), item(2), item(3)])
    batch = store.get(max_items=2)
    assert batch is not None
    with pytest.raises(ValueError, match="only up to 1 was handed out"):
        store.ack(2)
    assert store.ack(0) == 1 and store.ack(batch) == 1
    assert store.ack(batch) == 0, "acking twice is a no-op"
    other = EventStore(max_items=8)
    put_all(other, [item(7), item(8), item(9)])
    foreign = other.get()
    assert foreign is not None
    store.get()
    with pytest.raises(ValueError, match="does not come from this store"):
        store.ack(foreign)


def test_get_waits_for_data_up_to_its_timeout() -> None:
    store = EventStore(max_items=8)
    started = time.monotonic()
    assert store.get(timeout=0.05) is None and time.monotonic() - started >= 0.04
    thread, out = spawn(store.get, None, None, 5.0)
    time.sleep(0.05)
    put_all(store, [item(1, skip=1)])
    thread.join(0.05)
    assert thread.is_alive(), "half a transaction is not a batch"
    put_all(store, [item(2)])
    thread.join(2)
    result = out["result"]
    assert isinstance(result, Batch) and result.end == off(2)


def test_close_wakes_every_waiter() -> None:
    store = EventStore(max_items=2, batch_mode="ITEMSIZE")
    put_all(store, [item(1, skip=1), item(1, skip=2)])
    putter, put_out = spawn(store.put, item(1, skip=3))
    empty = EventStore(max_items=2)
    getter, get_out = spawn(empty.get, None, None, None)
    time.sleep(0.05)
    assert putter.is_alive() and getter.is_alive()
    store.close()
    empty.close()
    putter.join(2)
    getter.join(2)
    assert isinstance(put_out["error"], StoreClosed) and get_out == {"result": None}
    with pytest.raises(StoreClosed, match="closed"):
        store.put(item(9))
    assert store.closed and store.get() is not None, "the full store still hands out a split"


def test_close_with_error_is_raised_once_drained() -> None:
    store = EventStore(max_items=8)
    put_all(store, [item(1)])
    store.close(LogPositionGone("binlog file gone; restart from a snapshot."))
    assert store.get() is not None
    with pytest.raises(LogPositionGone, match="binlog file gone"):
        store.get(timeout=None)


def test_concurrent_producer_and_consumer_deliver_exactly_once_in_order() -> None:
    rng = random.Random(7)
    max_bytes, total = 6000, 50_000
    store = EventStore(max_bytes=max_bytes, max_items=256)
    items: list[LogItem] = []
    pos = 4
    while len(items) < total:
        if rng.random() < 0.01:
            items.append(item(pos, rows=1, ddl=True))
        else:
            n = rng.choice([1, 1, 2, 3, 5, 8, 20, 90])
            items += [item(pos, skip=i + 1, rows=rng.randint(0, 60)) for i in range(n - 1)]
            items.append(item(pos + 1, rows=rng.randint(0, 60)))
        pos += 2
    over: list[int] = []

    def produce() -> None:
        for it in items:
            assert store.put(it, timeout=10)
            used = store.stats().used_bytes
            if used > max_bytes:
                over.append(used)

    producer, out = spawn(produce)
    acked = 0  # items acked so far == index into ``items`` of the ack cursor + 1
    outstanding: list[Batch] = []
    replay: list[Batch] = []
    while acked < len(items):
        limit = rng.choice([None, 500, 3000])
        batch = store.get(max_bytes=limit, max_items=64, timeout=0 if outstanding else 5)
        if batch is None:  # nothing more until we ack: a full store waits for its consumer
            assert outstanding and not replay, "consumer starved"
            store.ack(outstanding[-1])
            acked, outstanding = outstanding[-1].last_seq + 1, []
            continue
        if replay:
            assert batch is replay.pop(0), "rolled-back batches come back unchanged"
        start = acked + sum(len(b.items) for b in outstanding)
        assert batch.first_seq == start
        assert all(
            a is b
            for a, b in zip(batch.items, items[start : start + len(batch.items)], strict=True)
        )
        assert batch.end == batch.items[-1].after
        assert not any(it.is_ddl for it in batch.items) or len(batch.items) == 1
        outstanding.append(batch)
        if rng.random() < 0.02:
            store.rollback()
            replay = outstanding + replay
            outstanding = []
        elif not replay and (len(outstanding) > 2 or rng.random() < 0.7):
            store.ack(outstanding[-1])
            acked = outstanding[-1].last_seq + 1
            outstanding = []
    producer.join(5)
    assert "error" not in out and not over
    stats = store.stats()
    assert stats.ack_seq == len(items) - 1 and stats.splits > 0 and stats.rollbacks > 0
    assert store.acked_end == items[-1].after and items[-1].after.at_boundary


class StoreMachine(RuleBasedStateMachine):
    """Single-threaded model check: every batch is exactly what the rules say it must be."""

    def __init__(self) -> None:
        super().__init__()
        self.store = EventStore(max_bytes=1000, max_items=8)
        self.items: list[LogItem] = []
        self.acked = self.got = 0
        self.handed: list[tuple[int, int]] = []  # (first_seq, last_seq) handed out, not acked
        self.replay: list[tuple[int, int]] = []
        self.pos = 4
        self.open_skip = 0
        self.open = False  # a transaction is open though none of its rows came yet

    @rule(rows=st.integers(0, 150), ends=st.booleans(), ddl=st.booleans(), inside=st.booleans())
    def put(self, rows: int, ends: bool, ddl: bool, inside: bool) -> None:
        if ddl and inside:  # a schema change inside the open transaction (or opening one)
            new, self.open = item(self.pos, skip=self.open_skip, rows=rows, inside=True), True
        elif ddl and self.open_skip == 0 and not self.open:
            new = item(self.pos, rows=rows, ddl=True)
        elif ends:
            new, self.open_skip, self.open = item(self.pos + 1, rows=rows), 0, False
        else:
            self.open_skip += 1
            new = item(self.pos, skip=self.open_skip, rows=rows)
        if self.open_skip == 0 and not self.open:
            self.pos += 2
        used = sum(it.size for it in self.items[self.acked :])
        held = len(self.items) - self.acked
        room = held < 8 and (held == 0 or used + new.size <= 1000)
        assert self.store.put(new, timeout=0) is room
        if room:
            self.items.append(new)

    @rule(max_items=st.sampled_from([None, 1, 2, 5]), max_bytes=st.sampled_from([None, 100, 400]))
    def get(self, max_items: int | None, max_bytes: int | None) -> None:
        batch = self.store.get(max_bytes=max_bytes, max_items=max_items)
        if self.replay:
            first, last = self.replay.pop(0)
            expected = last + 1 - first
        else:
            expected = self.expected(max_items or 8, max_bytes or 10**9)
        if batch is None:
            assert expected == 0
            return
        assert batch.first_seq == self.got and len(batch.items) == expected
        assert list(batch.items) == self.items[self.got : self.got + expected]
        assert batch.end == batch.items[-1].after
        assert len(batch.items) == 1 or not any(it.is_ddl for it in batch.items)
        self.got += expected
        self.handed.append((batch.first_seq, batch.last_seq))

    def expected(self, max_items: int, max_bytes: int) -> int:
        pending = self.items[self.got :]
        held = len(self.items) - self.acked
        full = held == 8 or sum(it.size for it in self.items[self.acked :]) >= 1000
        fits = len(pending) < max_items and sum(it.size for it in pending) < max_bytes
        ready = any((it.at_boundary or it.is_ddl) and not it.open_transaction for it in pending)
        if not ready and fits and not full:
            return 0  # the open transaction may still grow
        if pending and pending[0].is_ddl:
            return 1
        taken = size = cut = 0
        fenced = False
        for it in pending:
            if it.is_ddl:
                fenced = True
                break
            if taken and (taken == max_items or size + it.size > max_bytes):
                break
            taken, size = taken + 1, size + it.size
            cut = taken if it.at_boundary else cut
        limited = taken == max_items or size >= max_bytes or taken < len(pending)
        return cut or (taken if fenced or limited or full else 0)

    @precondition(lambda self: self.got > self.acked)
    @rule(data=st.data())
    def ack(self, data: st.DataObject) -> None:
        upto = data.draw(st.integers(self.acked, self.got - 1))
        assert self.store.ack(upto) == upto + 1 - self.acked
        self.acked = upto + 1
        self.handed = [(max(f, upto + 1), last) for f, last in self.handed if last > upto]

    @rule()
    def rollback(self) -> None:
        self.store.rollback()
        self.got = self.acked
        self.replay, self.handed = self.handed + self.replay, []

    @rule()
    def ack_beyond_get_is_refused(self) -> None:
        with pytest.raises(ValueError, match="handed out"):
            self.store.ack(self.got)

    @invariant()
    def cursors(self) -> None:
        s = self.store.stats()
        assert -1 <= s.ack_seq <= s.get_seq <= s.put_seq == len(self.items) - 1
        assert s.put_mem - s.ack_mem == sum(it.size for it in self.items[self.acked :])
        assert s.put_mem - s.get_mem == sum(it.size for it in self.items[s.get_seq + 1 :])


TestStoreMachine = StoreMachine.TestCase
TestStoreMachine.settings = settings(max_examples=60, stateful_step_count=40, deadline=None)
