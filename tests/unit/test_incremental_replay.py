"""A micro-batch delivering an incremental snapshot window, planned again from its end offset
(Spark's replay after a crash), carries the same ``source.ts_ms``: the window's read time kept
in the offset. Found by the history check after a ``kill -9`` between a batch's change log and
history commits: the replay stamped the chunk's rows with the time of the replay, so the history
table's ``__start_at`` disagreed with the change log's ``ts_ms``."""

from __future__ import annotations

import json
import time
from pathlib import Path
from types import SimpleNamespace

import pyarrow as pa

from sparkcdc.snapshot.incremental import IncrementalState, Window
from sparkcdc.sources.mysql.offset import BinlogOffset
from sparkcdc.spark.incremental.driver import IncrementalSnapshots
from sparkcdc.spark.incremental.window_events import write_arrow
from sparkcdc.spark.offsets import IncrementalOffset


def planner() -> IncrementalSnapshots:
    """The driver's event planning alone (it reads the source database's name only)."""
    found = object.__new__(IncrementalSnapshots)
    found.options = SimpleNamespace(  # type: ignore[assignment]
        source=SimpleNamespace(settings=SimpleNamespace(source_database=None))
    )
    return found


def test_a_replayed_window_keeps_its_read_time(tmp_path: Path) -> None:
    raw = tmp_path / "6.arrow"
    write_arrow(raw, pa.table({"key": ['{"id":1}', '{"id":2}'], "after": ["{}", "{}"]}))
    window = Window("shop.a", str(raw), "ab12", None, ("id",), read_at_ms=1_700_000_000_123)
    state = IncrementalState(version=7, window=window)
    again = IncrementalState.from_json(json.loads(json.dumps(state.to_json())))
    assert again.window == window  # as the offset log holds it
    finish = BinlogOffset("mysql-bin.000001", 400)
    stamps = []
    for held in (state, again):
        end = IncrementalOffset({"file": "mysql-bin.000001", "pos": 400}, held)
        (chunk,) = planner().events(end, finish, [])
        stamps.append(chunk.column("source").to_pylist()[0]["ts_ms"])
        time.sleep(0.01)
    assert stamps == [1_700_000_000_123] * 2


def test_a_window_of_an_older_offset_reads_without_a_read_time() -> None:
    held = Window("shop.a", "x/6.arrow", "ab12", None, ("id",)).to_json()
    del held["read_at_ms"]
    assert Window.from_json(held).read_at_ms is None
