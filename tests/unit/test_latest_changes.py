"""The replica's latest change per key (sinks/changes/latest.py) against a replay of the batch,
one key column and two, with and without repeated keys (the group-by and its shortcut)."""

from __future__ import annotations

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from sparkcdc.sinks.changes.latest import OP_COLUMN, ORDER_COLUMN, latest_changes

Key = tuple[int, ...]
Change = tuple[str, Key | None, Key | None, str]  # op, key before, key after, value


def batch(changes: list[Change], width: int) -> tuple[pa.Table, pa.StructArray, pa.StructArray]:
    """The changes as the sink holds them: op and log position, before and after images."""
    fields = [pa.field(f"k{i}", pa.int64()) for i in range(width)] + [pa.field("v", pa.string())]

    def image(which: int) -> pa.StructArray:
        rows = []
        for c in changes:
            key = c[which]
            rows.append(None if not isinstance(key, tuple) else
                        {**{f"k{i}": key[i] for i in range(width)}, "v": c[3]})  # fmt: skip
        array = pa.array(rows, pa.struct(fields))
        assert isinstance(array, pa.StructArray)
        return array

    rows = pa.table({"op": [c[0] for c in changes],
                     "_pos": pa.array(range(10, 10 + len(changes)), pa.int64())})  # fmt: skip
    return rows, image(1), image(2)


def replayed(changes: list[Change]) -> dict[Key, str | None]:
    """Each key's final state after the batch: its value, or None (deleted)."""
    state: dict[Key, str | None] = {}
    for op, before, after, value in changes:
        if op == "d":
            assert before is not None
            state[before] = None
        else:
            if op == "u" and before is not None and before != after:
                state[before] = None
            assert after is not None
            state[after] = value
    return state


@st.composite
def change_lists(draw: st.DrawFn) -> tuple[list[Change], int]:
    width = draw(st.sampled_from([1, 2]))
    keys = st.tuples(*[st.integers(0, 3)] * width)
    out: list[Change] = []
    for i in range(draw(st.integers(1, 12))):
        op = draw(st.sampled_from(["c", "u", "d", "r"]))
        before = draw(keys) if op in ("u", "d") else None
        after = None if op == "d" else (draw(keys) if op != "u" or draw(st.booleans()) else before)
        out.append((op, before, after, f"v{i}"))
    return out, width


@settings(max_examples=300, deadline=None)
@given(change_lists())
def test_latest_change_per_key_is_the_replayed_state(found: tuple[list[Change], int]) -> None:
    changes, width = found
    rows, before, after = batch(changes, width)
    columns = list(before.type)
    key = tuple(f"k{i}" for i in range(width))
    got = latest_changes(rows, before, after, columns, key, None).to_pylist()
    keys = [tuple(r[k] for k in key) for r in got]
    assert len(keys) == len(set(keys)), "a key twice"
    final = {k: (r["v"] if r[OP_COLUMN] == "u" else None) for k, r in zip(keys, got, strict=True)}
    assert final == replayed(changes)


def test_distinct_keys_keep_every_change_in_log_order() -> None:
    changes: list[Change] = [("u", (3,), (3,), "a"), ("c", None, (1,), "b"), ("u", (2,), (2,), "c")]
    rows, before, after = batch(changes, 1)
    got = latest_changes(rows, before, after, list(before.type), ("k0",), None).to_pylist()
    assert [(r["k0"], r["v"], r[OP_COLUMN]) for r in got] == [(3, "a", "u"), (1, "b", "u"),
                                                                (2, "c", "u")]  # fmt: skip
    assert [r[ORDER_COLUMN] for r in got] == [21, 23, 25]
