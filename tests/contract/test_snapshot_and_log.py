"""The source port's contract, part 2: the chunk dialect, the exact chunk (back-fill or pinned
snapshot), the log reader (run against every source)."""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path

import pyarrow as pa

from sparkcdc.core.chunk import Split
from sparkcdc.core.event import OP_SCHEMA, Change
from sparkcdc.core.offset import Offset
from sparkcdc.snapshot.scan import scan_run
from sparkcdc.snapshot.splitter import ChunkSplitter, SplitterSettings
from sparkcdc.sources.port import Source
from sparkcdc.store.ring import EventStore
from tests.contract.harness import Harness

SETTINGS = SplitterSettings(chunk_size=10, distribution_factor_lower=0.05,
                            distribution_factor_upper=1000)  # fmt: skip


def ids_of(rows: pa.Table) -> list[int]:
    return [json.loads(k)[0] for k in rows.column("key").to_pylist()]


def splits_of(source: Source, table: str, settings: SplitterSettings = SETTINGS) -> list[Split]:
    db, _, name = table.partition(".")
    with source.chunks() as dialect:
        keys = dialect.key_columns(db, name, ["id"])
        splitter = ChunkSplitter(dialect, table, keys, settings)
        splits = []
        while not splitter.done:
            splits.append(splitter.next())
        return splits


def test_chunks_cover_a_table_exactly_once(harness: Harness) -> None:
    table = harness.create("t", rows=57)
    harness.commit("t", [("d", 20, None), ("d", 21, None), ("c", 1000, "far")])
    source = harness.source(table)
    db, _, name = table.partition(".")
    with source.catalog() as catalog:
        schema = catalog.load_schema(db, name)
    for settings in (SETTINGS, SplitterSettings(10, 1000, 2000)):  # even by arithmetic, by query
        splits = splits_of(source, table, settings)
        assert splits[0].lo is None and splits[-1].hi is None
        assert all(a.hi == b.lo for a, b in zip(splits, splits[1:], strict=False))
        with source.chunks() as dialect:
            keys = dialect.key_columns(db, name, ["id"])
            seen = [i for s in splits for i in ids_of(dialect.read_chunk(schema, keys, s.lo, s.hi))]
            typed = dialect.read_chunk(schema, keys, None, None, typed=True)
        assert sorted(seen) == sorted(harness.contents("t")) and len(seen) == len(set(seen))
        assert typed.column_names == ["key", "id", "v"]
        assert typed.schema.field("id").type == pa.int64()


def test_a_chunk_is_exact_at_its_high_watermark(harness: Harness) -> None:
    """Rows written while a chunk is read: a source reading chunks between watermarks replays
    the window's changes from its log onto the chunk (the back-fill); a source that pins a
    snapshot reads the chunk as of the pin's point, and its log from that point holds the
    writes, every one at or past the chunk's high watermark (so the hand-off keeps them)."""
    table = harness.create("t", rows=30)
    source = harness.source(table)
    db, _, name = table.partition(".")
    split = Split(table, 1, (10,), (20,))
    writes = [("u", 12, "new"), ("d", 13, None), ("c", 1013, "x"), ("u", 25, "other split")]

    def write_inside(stage: str, _: Split) -> None:
        if stage == "chunk":  # after the SELECT, before the high watermark
            harness.commit("t", writes)

    def no_window(db: str, table: str, lo: Offset, hi: Offset) -> list[Change]:
        raise AssertionError(f"a pinned chunk read its window {lo}..{hi}")

    with source.catalog() as catalog:
        schema = catalog.load_schema(db, name)
    harness.commit("t", [("u", 11, "before the pin")])
    holder = source.pin_snapshot()
    pin = None if holder is None else holder.pin
    try:
        with source.chunks(pin) as dialect:
            keys = dialect.key_columns(db, name, ["id"])
            window = no_window if pin else lambda d, t, lo, hi: source.back_fill(d, t, lo, hi, 0)
            [result] = scan_run([split], schema, keys, dialect, window, hook=write_inside)
    finally:
        if holder is not None:
            holder.close()
    rows = {json.loads(k)[0]: json.loads(a)["v"] for k, a in
            zip(result.rows.column("key").to_pylist(), result.rows.column("after").to_pylist(),
                strict=True)}  # fmt: skip
    if pin is None:
        assert result.high > result.low and result.window_changes == len(writes)
        assert rows == {i: v for i, v in harness.contents("t").items() if 10 <= i < 20}
        assert rows[12] == "new" and 13 not in rows
        return
    assert result.low == result.high == pin.point and result.window_changes == 0
    assert rows == {i: (f"v{i}" if i != 11 else "before the pin") for i in range(10, 20)}
    assert rows[11] == "before the pin"
    changes = [e for e in read_log(source, pin.point) if e["op"] != OP_SCHEMA]
    assert [(e["op"], e["key"]) for e in changes] == [(op, f"[{i}]") for op, i, _ in writes]


def read_log(source: Source, start: Offset) -> list[dict[str, object]]:
    """The source's log from ``start`` to its end now, as events."""
    with source.catalog() as catalog:
        end = catalog.log_end()
    store = EventStore(1 << 20, 1024)
    with tempfile.TemporaryDirectory() as tmp:
        reader = source.open_reader(start, store, str(Path(tmp) / "history.jsonl"), 64)
        reader.start()
        try:
            return drain(store, end)
        finally:
            reader.stop()


def drain(store: EventStore, end: Offset, seconds: float = 30.0) -> list[dict[str, object]]:
    """Every event the store hands out until an item ends at ``end`` or later."""
    out: list[dict[str, object]] = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        batch = store.get(timeout=0.5)
        if batch is None:
            continue
        out += [r for rb in batch.record_batches() for r in rb.to_pylist()]
        store.ack(batch)
        if batch.end >= end:
            return out
    raise AssertionError(f"the log reader never reached {end}")


def test_the_log_reader_puts_whole_transactions_in_log_order(harness: Harness) -> None:
    table = harness.create("t")
    source = harness.source(table)
    with source.catalog() as catalog:
        start = catalog.log_end()
    for i in range(3):
        harness.commit("t", [("c", 3 * i + k, f"v{k}") for k in range(3)])
    harness.commit("t", [("u", 1, "changed"), ("d", 2, None)])
    with source.catalog() as catalog:
        end = catalog.log_end()
    store = EventStore(1 << 20, 1024)
    with tempfile.TemporaryDirectory() as tmp:
        reader = source.open_reader(start, store, str(Path(tmp) / "history.jsonl"), 2)
        reader.start()
        try:
            events = drain(store, end)
            assert reader.passed(end)
            reader.ack(end)  # nothing to forget, or the log may be forgotten before it
        finally:
            reader.stop()
    assert events[0]["op"] == OP_SCHEMA
    assert json.loads(str(events[0]["after"]))["kind"] == "announce"
    changes = [(e["op"], e["key"]) for e in events if e["op"] != OP_SCHEMA]
    assert changes == [("c", f"[{i}]") for i in range(9)] + [("u", "[1]"), ("d", "[2]")]
    positions = [e["source"]["position"] for e in events[1:]]  # type: ignore[index]
    assert positions == sorted(positions) and len(set(positions)) == len(positions)
    assert reader.stats().position is not None and reader.error is None


def test_a_reader_reopened_inside_a_transaction_skips_what_was_delivered(
    harness: Harness,
) -> None:
    """Canal's resume counter: a transaction larger than an item is cut at (start, skip) offsets,
    and a reader opened at one delivers exactly the rest of the transaction."""
    table = harness.create("t")
    source = harness.source(table)
    with source.catalog() as catalog:
        start = catalog.log_end()
    harness.commit("t", [("c", i, "big") for i in range(10)])
    with source.catalog() as catalog:
        end = catalog.log_end()
    with tempfile.TemporaryDirectory() as tmp:
        history = str(Path(tmp) / "history.jsonl")
        store = EventStore(1 << 20, 1024)
        reader = source.open_reader(start, store, history, 3)
        reader.start()
        items = []
        try:
            while not items or items[-1].after < end:
                batch = store.get(timeout=10)
                assert batch is not None
                items += batch.items
                store.ack(batch)
        finally:
            reader.stop()
        inner = [it.after for it in items if not it.after.at_boundary]
        assert [o.skip for o in inner] == [3, 6, 9]
        again = EventStore(1 << 20, 1024)
        reopened = source.open_reader(inner[1], again, history, 100)
        reopened.start()
        try:
            rest = [e for e in drain(again, end) if e["op"] != OP_SCHEMA]
        finally:
            reopened.stop()
    assert [e["key"] for e in rest] == [f"[{i}]" for i in range(6, 10)]
    assert [e["transaction"]["total_order"] for e in rest] == [7, 8, 9, 10]  # type: ignore[index]
