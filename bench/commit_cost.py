"""Section 9, last table: what one change-log append costs as the table's log grows.

A running pipeline appends to each touched table's change log once per micro-batch, so a
table's log grows by a commit a batch. Timed here on a local folder, one row per append, 100
appends in a row, in three ways: delta-rs's own append (``write_deltalake`` given the opened
table, the table at delta-rs's default checkpoint interval of 100), the same at an interval of
10 (Delta's own default, the sink's tables' setting), and the sink's append
(:func:`sparkcdc.sinks.delta.commits.append_changelog`: its data file and its commit written by
:mod:`sparkcdc.sinks.delta.log_commit`). Milliseconds per append, by how far into the 100.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
from deltalake import CommitProperties, DeltaTable, Transaction, write_deltalake

from sparkcdc.sinks.changes.lake import changelog_schema
from sparkcdc.sinks.delta import commits, opened

APPENDS = 100
SPANS = ((1, 10), (41, 50), (91, 100))
_SOURCE = pa.struct([pa.field("ts_ms", pa.int64())])
_COLUMNS = [pa.field("id", pa.int64()), pa.field("name", pa.string())]


def _row(i: int) -> pa.Table:
    return pa.Table.from_pydict(
        {"op": ["c"], "before": [None], "after": [{"id": i, "name": f"n{i}"}],
         "source": [{"ts_ms": i}], "transaction": [None]},
        schema=changelog_schema(_COLUMNS, _SOURCE),
    )  # fmt: skip


def _timed(append: Callable[[int], object]) -> list[float]:
    took = []
    for i in range(1, APPENDS + 1):
        started = time.perf_counter()
        append(i)
        took.append((time.perf_counter() - started) * 1000)
    return took


def _delta_rs(path: str, interval: int | None) -> list[float]:
    schema = changelog_schema(_COLUMNS, _SOURCE)
    config = {"delta.checkpointInterval": str(interval)} if interval else None
    DeltaTable.create(path, schema=schema, configuration=config)
    table = DeltaTable(path)

    def append(i: int) -> None:
        props = CommitProperties(app_transactions=[Transaction("bench", i)])
        write_deltalake(table, _row(i), mode="append", commit_properties=props)

    return _timed(append)


def _sink(path: str) -> list[float]:
    commits.ensure_changelog(path, _COLUMNS, _SOURCE)
    took = _timed(lambda i: commits.append_changelog(path, _row(i), "bench", i))
    opened.forget(path)
    return took


def run() -> dict[str, Any]:
    """Milliseconds per append over each span of :data:`SPANS`, for each way."""
    with tempfile.TemporaryDirectory() as work:
        ways = {
            "delta-rs, checkpoint every 100": _delta_rs(str(Path(work) / "a"), None),
            "delta-rs, checkpoint every 10": _delta_rs(str(Path(work) / "b"), 10),
            "sparkcdc's append": _sink(str(Path(work) / "c")),
        }
    return {
        name: [sum(took[lo - 1 : hi]) / (hi - lo + 1) for lo, hi in SPANS]
        for name, took in ways.items()
    }


def section(costs: dict[str, list[float]]) -> list[str]:
    head = " | ".join(f"appends {lo}–{hi}" for lo, hi in SPANS)
    out = [
        "What one change-log append costs as the table's log grows (one row per append, "
        f"{APPENDS} appends on a local folder; ms per append; `bench/commit_cost.py`):",
        "",
        f"| append | {head} |",
        "|---|" + "---:|" * len(SPANS),
    ]
    for name, spans in costs.items():
        out.append(f"| {name} | " + " | ".join(f"{ms:.1f}" for ms in spans) + " |")
    return out + [""]
