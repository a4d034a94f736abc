"""Spark offsets for the tests: Hypothesis strategies of every kind, the format-0 JSON the code
before offsets had a format wrote (:func:`as_v0`), and offsets of that format taken from real
runs (``offsets_v0.jsonl``: the initial offset, snapshot batches, the hand-off, incremental
offsets with a run and a window; the window's chunk file path shortened to the checkpoint)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from sparkcdc.core.chunk import KeyColumn, Split
from sparkcdc.core.schema import Column, TableSchema
from sparkcdc.snapshot.incremental import IncrementalState, Request, Run, Window
from sparkcdc.snapshot.splitter import SplitterState
from sparkcdc.spark.offsets import (
    IncrementalOffset,
    SnapshotOffset,
    SparkOffset,
    StreamOffset,
    TableMeta,
)

V0_FILE = Path(__file__).with_name("offsets_v0.jsonl")


def v0_offsets() -> list[dict[str, Any]]:
    """The format-0 offsets of real runs, in the order the runs wrote them."""
    return [json.loads(line) for line in V0_FILE.read_text().splitlines() if line.strip()]


names = st.text("abcdefghij_", min_size=1, max_size=6)
tables = st.builds(lambda db, t: f"{db}.{t}", names, names)
key_values = st.one_of(st.integers(-(2**63), 2**63 - 1), st.text(max_size=8))
keys = st.lists(key_values, min_size=1, max_size=3).map(tuple)
small = st.integers(0, 10**9)
maybe_int = st.none() | st.integers(-(2**40), 2**40)

splitter_states = st.builds(
    SplitterState,
    index=small, lo=st.none() | keys, done=st.booleans(), mode=st.sampled_from(["even", "uneven"]),
    rows=small, estimate=st.integers(1, 10**6), min=maybe_int, max=maybe_int, step=maybe_int,
)  # fmt: skip
splits = st.builds(Split, tables, small, st.none() | keys, st.none() | keys)
key_columns = st.builds(
    KeyColumn, names, st.sampled_from(["int", "bigint", "varchar"]), unsigned=st.booleans(),
    logical=st.sampled_from(["int32", "int64", "string"]),
)  # fmt: skip
columns = st.builds(
    Column, names, st.sampled_from(["int", "varchar", "decimal"]), nullable=st.booleans(),
    logical=st.sampled_from(["int32", "string", "decimal(12,2)"]),
)  # fmt: skip
schemas = st.builds(
    TableSchema, names, names, st.lists(columns, min_size=1, max_size=3).map(tuple),
    st.lists(names, max_size=2).map(tuple),
)  # fmt: skip
metas = st.builds(
    TableMeta, schemas, st.lists(key_columns, min_size=1, max_size=2).map(tuple),
    st.none() | small, st.none() | small,
)  # fmt: skip
snapshot_offsets = st.builds(
    SnapshotOffset,
    tables=st.lists(tables, max_size=3).map(tuple),
    current=st.integers(0, 4),
    splitter=st.none() | splitter_states,
    batch=small,
    groups=st.lists(st.lists(splits, min_size=1, max_size=3).map(tuple), max_size=3).map(tuple),
    meta=st.dictionaries(tables, metas, max_size=2),
    announce=st.lists(tables, max_size=2).map(tuple),
)
requests = st.builds(Request, tables, st.none() | st.text(max_size=8), names, st.none() | names)
runs = st.builds(
    Run, requests, st.lists(key_columns, min_size=1, max_size=2).map(tuple), st.none() | keys,
    splitter_states, small, small,
)  # fmt: skip
windows = st.builds(
    Window, tables, st.text(max_size=12), names, st.none() | schemas,
    st.lists(names, max_size=2).map(tuple),
)  # fmt: skip
notices = st.tuples(names, names, st.dictionaries(names, st.integers() | st.text(max_size=5)))
states = st.builds(
    IncrementalState,
    version=small,
    paused=st.booleans(),
    known=st.none() | st.lists(tables, max_size=3).map(tuple),
    queue=st.lists(requests, max_size=2).map(tuple),
    run=st.none() | runs,
    signals=st.lists(names, max_size=2).map(tuple),
    window=st.none() | windows,
    notices=st.lists(notices, max_size=2).map(tuple),
)
source_positions = st.one_of(
    st.fixed_dictionaries(
        {"file": names, "pos": small, "gtid": st.none() | names, "skip": st.integers(0, 9)}
    ),
    st.fixed_dictionaries({"lsn": names, "skip": st.integers(0, 9)}),
    st.fixed_dictionaries({"seq": small, "skip": st.integers(0, 9)}),
)
"""Positions as the sources write them (MySQL/MariaDB, PostgreSQL, the fake source)."""
any_positions = st.dictionaries(
    st.sampled_from(["kind", "v", "snapshot", "incremental", "position", "file", "pos"]) | names,
    st.none() | st.integers() | st.text(max_size=5) | st.dictionaries(names, st.integers()),
)
"""Positions whose keys are ours too: a source may name its fields as it likes."""


def offsets(positions: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[SparkOffset]:
    return st.one_of(
        st.builds(StreamOffset, positions),
        st.builds(IncrementalOffset, positions, states),
        snapshot_offsets,
    )


def as_v0(value: SparkOffset) -> dict[str, Any]:
    """``value`` as the code before offsets had a format wrote it."""
    new = value.to_json()
    if isinstance(value, SnapshotOffset):
        body = {k: v for k, v in new.items() if k not in ("kind", "v")}
        body["splitter"] = None if value.splitter is None else _splitter_v0(value.splitter)
        body["meta"] = {name: _dropped_nones(m) for name, m in new["meta"].items()}
        return {"snapshot": body}
    if isinstance(value, StreamOffset):
        return dict(value.position)
    state = {k: v for k, v in new["incremental"].items() if k != "version"}
    if value.state.run is not None:
        state["run"] = {**state["run"], "splitter": _splitter_v0(value.state.run.splitter)}
    return {**value.position, "incremental": {"v": value.state.version, **state}}


def _splitter_v0(state: SplitterState) -> dict[str, Any]:
    """The splitter's dict, which held ``min``, ``max`` and ``step`` once it planned an even
    walk only."""
    return _dropped_nones(state.to_json(), ("min", "max", "step"))


def _dropped_nones(
    value: dict[str, Any], keys: tuple[str, ...] = ("splits", "estimate")
) -> dict[str, Any]:
    return {k: v for k, v in value.items() if not (k in keys and v is None)}
