"""The stream's offsets: every kind survives its JSON, the format-0 JSON older checkpoints hold is
migrated, a newer format is refused with a sentence, and the source's keys meet none of ours."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sparkcdc.snapshot.incremental import IncrementalState
from sparkcdc.snapshot.splitter import SplitterState
from sparkcdc.sources.mysql.offset import BinlogOffset
from sparkcdc.spark.offsets import (
    FORMAT,
    IncrementalOffset,
    NewerOffsetFormat,
    SnapshotOffset,
    SparkOffset,
    StreamOffset,
    UnreadableOffset,
    log_position,
    parse,
    source_position,
)
from tests.cases.offsets import any_positions, as_v0, offsets, source_positions, v0_offsets


def through_json(value: dict[str, Any]) -> dict[str, Any]:
    """What Spark's checkpoint gives back of ``value``."""
    found: dict[str, Any] = json.loads(json.dumps(value))
    return found


@given(offsets(any_positions))
def test_every_offset_survives_its_json(value: SparkOffset) -> None:
    written = through_json(value.to_json())
    assert (written["kind"], written["v"]) == (value.kind, FORMAT)
    assert parse(written) == value


@given(offsets(source_positions))
def test_format_0_is_migrated_to_the_same_value(value: SparkOffset) -> None:
    migrated = parse(through_json(as_v0(value)))
    assert migrated == value
    assert parse(through_json(migrated.to_json())) == value


@given(any_positions)
def test_the_source_s_keys_meet_none_of_ours(position: dict[str, Any]) -> None:
    for value in (StreamOffset(position), IncrementalOffset(position, IncrementalState(3))):
        again = parse(through_json(value.to_json()))
        assert log_position(again) == position


def test_the_offsets_of_real_runs_before_the_format_are_read() -> None:
    found = [parse(raw) for raw in v0_offsets()]
    assert [o.kind for o in found] == [
        "snapshot", "snapshot", "snapshot", "stream", "incremental", "incremental", "incremental",
    ]  # fmt: skip
    initial, first, last, handoff, known, queued, window = found
    assert isinstance(initial, SnapshotOffset) and initial.splitter is None
    assert initial.tables == ("snap_crash.items",) and initial.batch == 0
    assert isinstance(first, SnapshotOffset) and first.batch == 1
    assert first.splitter == SplitterState(
        index=4, lo=(6084,), done=False, mode="even", rows=63058, estimate=64, min=-952,
        max=485348, step=7711,
    )  # fmt: skip
    assert [[s.index for s in g] for g in first.groups] == [[0, 1], [2, 3]]
    meta = first.meta["snap_crash.items"]
    assert meta.schema.primary_key == ("id",) and [k.name for k in meta.keys] == ["id"]
    assert (meta.estimate, meta.splits) == (64, None)
    assert isinstance(last, SnapshotOffset) and last.current == 1 and last.splitter is None
    assert last.meta["snap_crash.items"].splits == 113
    position = {"file": "mysql-bin.000001", "pos": 3614531, "gtid": "0-1-3799", "skip": 0}
    assert handoff == StreamOffset(position)
    assert isinstance(known, IncrementalOffset) and known.position == position
    assert known.state.known == ("snap_crash.items",) and known.state.version == 0
    assert isinstance(queued, IncrementalOffset) and queued.state.run is None
    assert [r.table for r in queued.state.queue] == ["inc_crash.items"]
    assert queued.state.signals == (queued.state.queue[0].origin,)
    assert isinstance(window, IncrementalOffset) and window.state.version == 1
    run, chunks = window.state.run, window.state.window
    assert run is not None and chunks is not None
    assert (run.max_key, run.rows, run.chunks) == ((241802,), 1000, 2)
    assert run.splitter.lo == (892,) and run.splitter.mode == "even"
    assert chunks.path.endswith("incremental/0.arrow") and chunks.row_key == ("id",)
    assert chunks.schema is not None and chunks.schema.name == "inc_crash.items"
    assert [n[2]["type"] for n in window.state.notices] == ["started", "chunk"]
    for value in found:  # each writes format 1, which reads back the same
        assert parse(through_json(value.to_json())) == value
        position_found = source_position(value.to_json())
        if position_found is not None:
            assert str(BinlogOffset.from_json(position_found)).startswith("mysql-bin.000001:")


def test_a_newer_format_is_refused_with_what_to_do() -> None:
    newer = {"kind": "stream", "v": FORMAT + 1, "position": {"seq": 1}}
    with pytest.raises(NewerOffsetFormat) as refused:
        parse(newer)
    text = str(refused.value)
    assert f"format {FORMAT + 1}" in text and "upgrade sparkcdc" in text
    assert "new checkpoint" in text and refused.value.fields["version"] == FORMAT + 1


@pytest.mark.parametrize(
    "raw",
    [
        {"kind": "tape", "v": 1},
        {"kind": "stream", "v": "1", "position": {}},
        {"kind": "snapshot", "v": 1, "tables": "shop.a", "groups": [[{"index": 0}]]},
        {"kind": "incremental", "v": 1},
    ],
)
def test_an_offset_of_no_known_kind_or_shape_is_named(raw: dict[str, Any]) -> None:
    with pytest.raises(UnreadableOffset, match="the checkpoint holds an offset sparkcdc cannot"):
        parse(raw)


@given(st.integers(0, 3))
def test_format_0_incremental_state_keeps_its_window_count(version: int) -> None:
    old = {"lsn": "0/16", "skip": 0, "incremental": {"v": version, "paused": False}}
    value = parse(old)
    assert isinstance(value, IncrementalOffset) and value.state.version == version
    assert value.position == {"lsn": "0/16", "skip": 0}
    assert "v" not in value.to_json()["incremental"]
