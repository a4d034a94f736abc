"""Section 9, a note: what the replicas' change data feed costs a micro-batch's replica write.

Many replicas (``TABLES``, 1,000 rows each, one data file) are made twice, with Delta's change
data feed (the sink's default) and without (``sink.change_data_feed: false``); then, in
``ROUNDS`` rounds taking turns, each table gets the same small batch (two updates, an insert and
a delete) through :func:`sparkcdc.sinks.delta.commits.merge_replica`, the sink's copy-on-write
commit. Milliseconds per table, median of the rounds. ``python -m bench.change_data_cost``.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

import pyarrow as pa

from sparkcdc.sinks.changes.latest import OP_COLUMN, ORDER_COLUMN
from sparkcdc.sinks.delta import commits

TABLES = 200
ROWS = 1000
ROUNDS = 5
_FIELDS = [pa.field("id", pa.int64()), pa.field("n", pa.int64()), pa.field("s", pa.string())]


def _make(folder: Path, feed: bool) -> list[str]:
    paths = []
    for t in range(TABLES):
        path = str(folder / f"t{t}")
        commits.ensure_replica(path, _FIELDS, change_data_feed=feed)
        rows = pa.table({"id": range(ROWS), "n": range(ROWS), "s": [f"s{i}" for i in range(ROWS)]},
                        schema=pa.schema(_FIELDS))  # fmt: skip
        commits.append_replica(path, rows, "bench", 0)
        paths.append(path)
    return paths


def _batch(round_: int) -> pa.Table:
    ids = [2 * round_, 2 * round_ + 1, ROWS + round_, 500 + round_]
    return pa.table({
        "id": ids, "n": [round_] * 4, "s": ["u", "u", "new", None],
        OP_COLUMN: ["u", "u", "c", "d"], ORDER_COLUMN: range(4),
    })  # fmt: skip


def _round(paths: list[str], round_: int) -> float:
    """Milliseconds per table of one batch written to every table."""
    started = time.perf_counter()
    for path in paths:
        commits.merge_replica(path, _batch(round_), ("id",), "bench", round_ + 1)
    return (time.perf_counter() - started) * 1000 / len(paths)


def run() -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        made = {feed: _make(Path(tmp) / str(feed), feed) for feed in (True, False)}
        times: dict[bool, list[float]] = {True: [], False: []}
        for r in range(ROUNDS):
            for feed in (True, False) if r % 2 == 0 else (False, True):
                times[feed].append(_round(made[feed], r))
    return {"on": statistics.median(times[True]), "off": statistics.median(times[False])}


if __name__ == "__main__":
    found = run()
    print(f"{TABLES} tables, ms per table: feed on {found['on']:.2f}, off {found['off']:.2f}")
