"""The ready queue between the event store and Spark's offsets (no Spark, no database)."""

from __future__ import annotations

import threading
import time

import pyarrow as pa
import pytest

from sparkcdc.core.envelope import EnvelopeBuilder
from sparkcdc.core.logitem import LogItem
from sparkcdc.sources.mysql.offset import BinlogOffset
from sparkcdc.spark.stream import delivery
from sparkcdc.spark.stream.delivery import DeliveryQueue
from sparkcdc.store.ring import EventStore
from tests.cases.envelopes import add, rows

F = "mysql-bin.000001"


def ids(batches: list[pa.RecordBatch]) -> list[int]:
    return [int(k[1:-1]) for b in batches for k in b.column("key").to_pylist()]


def never() -> None:
    raise AssertionError("take() should not need to wait")


def test_plan_take_commit_follow_store_batches() -> None:
    store = EventStore(max_bytes=1 << 20, max_items=16)
    start = BinlogOffset(F, 4)
    store.put(LogItem(start, rows(0, 1), is_ddl=True))  # the announcement: after == start
    store.put(LogItem(BinlogOffset(F, 100, skip=3), rows(0, 3)))
    store.put(LogItem(BinlogOffset(F, 200), rows(3, 2)))
    queue = DeliveryQueue(store, start)
    end = queue.plan(start, 1 << 20)
    assert end == BinlogOffset(F, 200)
    taken = queue.take(end, never)
    assert ids(taken.batches) == [0, 0, 1, 2, 3, 4] and taken.last_event_ts_ms == 1004
    assert queue.cursor == end and queue.plan(end, 1 << 20) == end
    queue.commit(end)
    assert store.stats().ack_seq == 2 and queue.idle


def test_a_lone_announcement_leaves_the_queue_settled_at_its_start() -> None:
    """On an idle log (the end moved by a new file's header events, no transaction) the schema
    announcement is all there is: nothing lies past the start, so available-now may end."""
    store = EventStore(max_bytes=1 << 20, max_items=16)
    start = BinlogOffset(F, 4)
    store.put(LogItem(start, rows(0, 1), is_ddl=True))
    queue = DeliveryQueue(store, start)
    assert not queue.settled(start)  # still in the store
    assert queue.plan(start, 1 << 20) == start
    assert queue.settled(start) and not queue.idle
    store.put(LogItem(BinlogOffset(F, 100), rows(1, 1)))
    end = queue.plan(start, 1 << 20)
    assert end == BinlogOffset(F, 100) and not queue.settled(start)
    queue.take(end, never)
    assert not queue.settled(end)  # handed out, its micro-batch not committed yet
    queue.commit(end)
    assert queue.settled(end) and queue.idle


def test_a_replay_slices_an_item_at_the_split_point() -> None:
    store = EventStore(max_bytes=1 << 20, max_items=16)
    start = BinlogOffset(F, 100, skip=2)  # two rows of the transaction were delivered before
    store.put(LogItem(BinlogOffset(F, 200), rows(2, 6)))  # the reopened reader cuts differently
    queue = DeliveryQueue(store, start)
    queue.fetch(None)
    first = queue.take(BinlogOffset(F, 100, skip=5), never)
    assert ids(first.batches) == [2, 3, 4]
    rest = queue.take(BinlogOffset(F, 200), never)
    assert ids(rest.batches) == [5, 6, 7]
    queue.commit(BinlogOffset(F, 200))
    assert queue.idle


def test_a_boundary_end_before_an_item_takes_nothing_of_it() -> None:
    store = EventStore(max_bytes=1 << 20, max_items=16)
    start = BinlogOffset(F, 100)
    store.put(LogItem(BinlogOffset(F, 300), rows(0, 2, pos=250)))
    queue = DeliveryQueue(store, start)
    queue.fetch(None)
    assert queue.take(BinlogOffset(F, 200), never).rows == 0
    assert ids(queue.take(BinlogOffset(F, 300), never).batches) == [0, 1]


def test_a_replay_cuts_a_coalesced_item_at_the_boundaries_planned_before() -> None:
    # first run: one item per transaction, so Spark planned ends after each of them
    ends = [BinlogOffset(F, p) for p in (200, 300, 400, 500)]
    # the replay's reader coalesced the same transactions into one item (rows 0-1, 2, 3-5),
    # its offset moved on to 500 by a transaction on another table
    coalesced = LogItem(ends[3], rows(0, 6), boundaries=((2, ends[0]), (3, ends[1]), (6, ends[2])))
    store = EventStore(max_bytes=1 << 20, max_items=16)
    store.put(coalesced)
    store.put(LogItem(BinlogOffset(F, 600), rows(6, 1)))
    queue = DeliveryQueue(store, BinlogOffset(F, 100))
    queue.fetch(None)
    assert queue.take(BinlogOffset(F, 150), never).rows == 0  # before its first transaction
    assert ids(queue.take(ends[0], never).batches) == [0, 1]
    assert ids(queue.take(ends[1], never).batches) == [2]
    assert queue.take(BinlogOffset(F, 350), never).rows == 0  # a progress marker's offset
    assert ids(queue.take(ends[2], never).batches) == [3, 4, 5]
    assert queue.take(ends[3], never).rows == 0 and queue.cursor == ends[3]
    queue.commit(ends[3])
    assert store.stats().ack_seq == -1  # its store batch still holds the unread item
    assert ids(queue.take(BinlogOffset(F, 600), never).batches) == [6]
    queue.commit(BinlogOffset(F, 600))
    assert queue.idle


def test_a_replay_cuts_a_coalesced_item_inside_a_split_transaction_then_at_a_boundary() -> None:
    # the reader resumed 2 rows into the transaction at 100; the rest of it (rows 2-5) and the
    # transaction ending at 300 (rows 6-7) came as one item
    start = BinlogOffset(F, 100, skip=2)
    store = EventStore(max_bytes=1 << 20, max_items=16)
    store.put(LogItem(BinlogOffset(F, 300), rows(2, 6), boundaries=((4, BinlogOffset(F, 200)),)))
    queue = DeliveryQueue(store, start)
    queue.fetch(None)
    assert ids(queue.take(BinlogOffset(F, 100, skip=4), never).batches) == [2, 3]
    assert ids(queue.take(BinlogOffset(F, 200), never).batches) == [4, 5]
    assert ids(queue.take(BinlogOffset(F, 300), never).batches) == [6, 7]
    queue.commit(BinlogOffset(F, 300))
    assert queue.idle


def test_a_replay_larger_than_the_store_frees_it_while_taking() -> None:
    import threading

    store = EventStore(max_bytes=1 << 20, max_items=2)  # room for two items at a time
    start = BinlogOffset(F, 100)
    items = [LogItem(BinlogOffset(F, 200 + 100 * i), rows(i, 1, 200 + 100 * i)) for i in range(6)]

    def reader() -> None:  # a log reader reopened for the replay: it blocks while the store is full
        for item in items:
            while not store.put(item, timeout=0.1):
                pass

    thread = threading.Thread(target=reader, daemon=True)
    thread.start()
    queue = DeliveryQueue(store, start)
    taken = queue.take(items[-1].after, lambda: None, deadline_s=10.0)
    assert ids(taken.batches) == [0, 1, 2, 3, 4, 5]
    thread.join(5.0)
    assert not thread.is_alive()


def insert_into(table: str, key: int) -> pa.RecordBatch:
    """One insert into ``d.<table>``."""
    b = EnvelopeBuilder(BinlogOffset)
    add(b, [("c", f"[{key}]", None, f'{{"id": {key}}}')], "d", table, "s1", pos=100 + key,
        ts_ms=1000 + key, first=key)  # fmt: skip
    return b.build()


def test_the_tables_of_the_planned_items_are_counted() -> None:
    store = EventStore(max_bytes=1 << 20, max_items=16)
    start = BinlogOffset(F, 4)
    for key, table in enumerate(["a", "b", "a", "c"]):
        store.put(LogItem(BinlogOffset(F, 200 + key), insert_into(table, key)))
    queue = DeliveryQueue(store, start)
    assert queue.tables_in(queue.plan(start, 1 << 20)) == 3
    assert queue.tables_in(BinlogOffset(F, 201)) == 2
    assert queue.tables_in(BinlogOffset(F, 203), enough=1) == 1


def test_fill_waits_for_the_reader_until_the_target_and_no_longer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """fill() plans again while the reader puts more, up to the target; once the reader has put
    nothing for FILL_POLL_SECONDS it returns what it has, long before its deadline."""
    store = EventStore(max_bytes=1 << 20, max_items=16)
    start, target = BinlogOffset(F, 4), BinlogOffset(F, 203)
    store.put(LogItem(BinlogOffset(F, 200), insert_into("a", 0)))

    def reader() -> None:
        for key in (1, 2, 3):
            time.sleep(0.05)
            store.put(LogItem(BinlogOffset(F, 200 + key), insert_into("a", key)))

    monkeypatch.setattr(delivery, "FILL_POLL_SECONDS", 60.0)  # a slow reader is still reading
    thread = threading.Thread(target=reader)
    thread.start()
    queue = DeliveryQueue(store, start)
    assert queue.fill(start, 1 << 20, target, seconds=600) == target
    thread.join()
    monkeypatch.setattr(delivery, "FILL_POLL_SECONDS", 0.05)  # the reader has nothing more
    assert queue.fill(start, 1 << 20, BinlogOffset(F, 999), seconds=600) == target


@pytest.mark.parametrize("per_table", [0.0, 1.0])
def test_fill_waits_longer_for_a_batch_of_many_tables(
    monkeypatch: pytest.MonkeyPatch, per_table: float
) -> None:
    """With ``seconds_per_table`` the deadline grows with each table the reader's items bring:
    a reader putting a new table every 0.1 s is waited for past the 0.3 s given, up to the
    target; without it the batch is cut at 0.3 s."""
    store = EventStore(max_bytes=1 << 20, max_items=64)
    start, target = BinlogOffset(F, 4), BinlogOffset(F, 208)
    store.put(LogItem(BinlogOffset(F, 200), insert_into("t0", 0)))

    def reader() -> None:
        for key in range(1, 9):
            time.sleep(0.1)
            store.put(LogItem(BinlogOffset(F, 200 + key), insert_into(f"t{key}", key)))

    monkeypatch.setattr(delivery, "FILL_POLL_SECONDS", 60.0)  # only the deadline ends it
    thread = threading.Thread(target=reader)
    thread.start()
    queue = DeliveryQueue(store, start)
    end = queue.fill(start, 1 << 20, target, 0.3, seconds_per_table=per_table)
    thread.join()
    assert (end == target) == (per_table > 0)


@pytest.mark.parametrize("still_reading", [False, True])
def test_fill_waits_out_a_pause_of_a_reader_still_reading(
    monkeypatch: pytest.MonkeyPatch, still_reading: bool
) -> None:
    """A reader that pauses longer than FILL_POLL_SECONDS ends the fill, unless it says it is
    still reading towards the target: then the fill waits on, up to its deadline."""
    store = EventStore(max_bytes=1 << 20, max_items=64)
    start, target = BinlogOffset(F, 4), BinlogOffset(F, 202)
    store.put(LogItem(BinlogOffset(F, 200), insert_into("a", 0)))

    def reader() -> None:
        for key in (1, 2):
            time.sleep(0.3)  # longer than the poll
            store.put(LogItem(BinlogOffset(F, 200 + key), insert_into("a", key)))

    monkeypatch.setattr(delivery, "FILL_POLL_SECONDS", 0.05)
    thread = threading.Thread(target=reader)
    thread.start()
    queue = DeliveryQueue(store, start)
    end = queue.fill(start, 1 << 20, target, 30.0, reading=lambda: still_reading)
    thread.join()
    assert (end == target) == still_reading


def test_an_announcement_filling_a_small_store_leaves_room_for_the_log_s_next_item() -> None:
    """A stream resumed with a store (``max_bytes``) smaller than its schema announcement and
    the next transaction together: the announcement waits in the ready queue for the next
    micro-batch, and held the store's bytes while it waited, so the log reader could never put
    that transaction and the run planned nothing, for ever (seen in a declarative pipeline)."""
    start = BinlogOffset(F, 4)
    announcement = LogItem(start, rows(0, 4), is_ddl=True)
    change = LogItem(BinlogOffset(F, 100), rows(4, 4))
    store = EventStore(max_bytes=announcement.size + change.size // 2, max_items=16)
    store.put(announcement)
    queue = DeliveryQueue(store, start)
    assert queue.plan(start, store.max_bytes) == start
    assert store.put(change, timeout=1.0)  # the announcement no longer holds the store
    end = queue.plan(start, store.max_bytes)
    assert end == change.after
    taken = queue.take(end, never)
    assert ids(taken.batches) == [0, 1, 2, 3, 4, 5, 6, 7]
    queue.commit(end)
    assert queue.idle and store.stats().ack_seq == 1
