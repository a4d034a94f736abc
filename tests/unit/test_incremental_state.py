"""The incremental snapshots' state: the signal rules, tables added to ``source.tables``, and
the JSON that rides in every stream offset."""

from __future__ import annotations

import json

from sparkcdc.core.chunk import KeyColumn
from sparkcdc.core.schema import Column, TableSchema
from sparkcdc.snapshot.incremental import (
    IncrementalState,
    Request,
    Run,
    Window,
    add_new_tables,
    apply_signal,
)
from sparkcdc.snapshot.signals import Signal
from sparkcdc.snapshot.splitter import SplitterState

CAPTURED = frozenset({"shop.a", "shop.b", "shop.c"})
ID = KeyColumn("id", "int", logical="int32")
SCHEMA = TableSchema("shop", "a", (Column("id", "int", nullable=False, logical="int32"),), ("id",))


def execute(*tables: str, where: str | None = None, sid: str = "s1") -> Signal:
    data: dict = {"data-collections": list(tables), "type": "incremental"}
    if where:
        data["additional-conditions"] = [{"data-collection": t, "filter": where} for t in tables]
    return Signal(sid, "execute-snapshot", data)


def kinds(state: IncrementalState) -> list[tuple[str, str]]:
    return [(f"{db}.{t}" if db else "", n["type"]) for db, t, n in state.notices]


def running(table: str, where: str | None = None) -> Run:
    return Run(Request(table, where, "s0"), (ID,), (9,), SplitterState())


def test_execute_queues_captured_tables_and_skips_the_others() -> None:
    state = apply_signal(IncrementalState(), execute("shop.a", "other.x", "shop.b"), CAPTURED)
    assert [r.table for r in state.queue] == ["shop.a", "shop.b"]
    assert kinds(state) == [
        ("shop.a", "queued"),
        ("other.x", "skipped"),
        ("shop.b", "queued"),
    ]
    assert state.notices[1][2]["reason"] == "the table is not captured"
    assert state.active


def test_a_second_execute_is_skipped_unless_its_condition_differs() -> None:
    state = IncrementalState(run=running("shop.a"), queue=(Request("shop.b", None, "s0"),))
    again = apply_signal(state, execute("shop.a", "shop.b"), CAPTURED)
    assert kinds(again) == [("shop.a", "skipped"), ("shop.b", "skipped")]
    assert again.queue == state.queue
    other = apply_signal(state, execute("shop.a", where="id > 5", sid="s2"), CAPTURED)
    assert other.queue[-1] == Request("shop.a", "id > 5", "s2")


def test_stop_drops_named_tables_or_everything() -> None:
    state = IncrementalState(run=running("shop.a"), queue=(Request("shop.b"), Request("shop.c")))
    some = apply_signal(
        state, Signal("s", "stop-snapshot", {"data-collections": ["shop.b"]}), CAPTURED
    )
    assert some.run == state.run and [r.table for r in some.queue] == ["shop.c"]
    assert kinds(some) == [("shop.b", "stopped")]
    current = apply_signal(
        state, Signal("s", "stop-snapshot", {"data-collections": ["shop.a"]}), CAPTURED
    )
    assert current.run is None and len(current.queue) == 2
    every = apply_signal(state, Signal("s", "stop-snapshot", {}), CAPTURED)
    assert every.run is None and every.queue == () and not every.active
    assert kinds(every) == [("shop.a", "stopped"), ("shop.b", "stopped"), ("shop.c", "stopped")]


def test_pause_resume_and_log() -> None:
    state = IncrementalState(queue=(Request("shop.a"),))
    paused = apply_signal(state, Signal("p", "pause-snapshot", {}), CAPTURED)
    assert paused.paused and not paused.active
    resumed = apply_signal(paused.settled(), Signal("r", "resume-snapshot", {}), CAPTURED)
    assert not resumed.paused and resumed.active and kinds(resumed) == [("", "resumed")]
    logged = apply_signal(state, Signal("l", "log", {"message": "backfill"}), CAPTURED)
    assert logged.notices[-1][2] == {"type": "log", "message": "backfill"}


def test_tables_new_to_source_tables_are_queued_once() -> None:
    first = add_new_tables(IncrementalState(), ["shop.a", "shop.b"])
    assert first.known == ("shop.a", "shop.b") and first.queue == ()  # a new stream: nothing
    widened = add_new_tables(first, ["shop.a", "shop.b", "shop.c"])
    assert [(r.table, r.origin) for r in widened.queue] == [("shop.c", "added")]
    assert add_new_tables(widened, ["shop.a", "shop.b", "shop.c"]) == widened


def test_the_state_survives_its_json_and_settles_per_batch() -> None:
    state = IncrementalState(
        version=7,
        paused=True,
        known=("shop.a",),
        queue=(Request("shop.b", "id > 1", "s9"),),
        run=Run(Request("shop.a"), (ID,), (100,), SplitterState(index=3, lo=(50,)), 50, 2),
        signals=("f1",),
        window=Window("shop.a", "x/6.arrow", "ab12", SCHEMA, ("id",)),
        notices=(("shop", "a", {"type": "chunk", "rows": 50}),),
    )
    again = IncrementalState.from_json(json.loads(json.dumps(state.to_json())))
    assert again == state
    assert again.settled().window is None and again.settled().notices == ()
    assert IncrementalState.from_json({}) == IncrementalState()
