"""The snapshot's progress bars, as ``sparkcdc run`` prints them."""

from __future__ import annotations

import io

from sparkcdc.cli.progress import ProgressPrinter, describe_incremental, describe_snapshot
from sparkcdc.spark.pipeline.progress import Progress
from sparkcdc.spark.stream.status import TableFigures

TABLES = {
    "shop.orders": {
        "splits_done": 6,
        "splits_total": 24,
        "rows": 48000,
        "rows_per_s": 120000.0,
        "eta_s": 1.2,
        "done": False,
    },
    "shop.users": {
        "splits_done": 3,
        "splits_total": 3,
        "rows": 20000,
        "rows_per_s": 90000.0,
        "eta_s": None,
        "done": True,
    },
}


def test_one_bar_per_table_with_splits_rows_rate_and_time_left() -> None:
    lines = describe_snapshot(TABLES)
    assert lines == [
        "snapshot shop.orders  [#####...............]  6/24 splits · 48,000 rows · "
        "120,000 rows/s · ETA 1s",
        "snapshot shop.users   [####################]  3/3 splits · 20,000 rows · "
        "90,000 rows/s · done",
    ]
    assert describe_snapshot(None) == [] and describe_snapshot({}) == []


def test_of_many_tables_the_ones_being_read_get_bars_and_the_rest_one_line() -> None:
    """300 tables: 120 done, 12 being read (10 bars shown), 168 waiting."""
    tables: dict[str, TableFigures] = {}
    for i in range(300):
        done, reading = i < 120, 120 <= i < 132
        tables[f"db.t{i:03d}"] = {
            "splits_done": 1 if done or reading else 0,
            "splits_total": 1 if done else 2,
            "rows": 100 if done else 50 if reading else 0,
            "rows_per_s": 1000.0 if reading else 0.0,
            "eta_s": None,
            "done": done,
        }
    lines = describe_snapshot(tables)
    assert [line.split()[1] for line in lines[:-1]] == [f"db.t{i:03d}" for i in range(120, 130)]
    assert lines[-1] == (
        "snapshot of 300 tables: 120 done, 12 being read, 168 waiting · 12,600 rows · 12,000 rows/s"
    )
    finished = {n: {**t, "done": True} for n, t in tables.items()}
    assert describe_snapshot(finished) == [  # type: ignore[arg-type]
        "snapshot of 300 tables: 300 done, 0 being read, 0 waiting · 12,600 rows · 0 rows/s"
    ]


def test_log_lines_carry_the_bars_above_the_pipeline_line() -> None:
    out = io.StringIO()
    printer = ProgressPrinter(out, every=0.0)
    printer(Progress(3, 68000, 5000.0, None, None, False, TABLES))
    lines = out.getvalue().splitlines()
    assert len(lines) == 3
    assert "snapshot shop.orders" in lines[0] and "batches 3 · 68,000 changes" in lines[2]


def test_finished_bars_are_logged_once_even_if_finished_between_log_lines() -> None:
    out = io.StringIO()
    printer = ProgressPrinter(out, every=3600.0)
    done = {name: {**t, "done": True} for name, t in TABLES.items()}
    printer(Progress(1, 10, 1.0, None, None, False, TABLES))  # logged: bars + line
    printer(Progress(2, 20, 1.0, None, None, False, done))  # not logged: too soon
    printer._last_line = float("-inf")
    printer(Progress(3, 30, 1.0, None, None, False, done))  # logged: the finished bars once
    printer._last_line = float("-inf")
    printer(Progress(4, 40, 1.0, None, None, False, done))  # logged: the line only
    lines = out.getvalue().splitlines()
    assert len(lines) == 3 + 3 + 1
    assert "done" in lines[3] and "done" in lines[4] and "batches 4" in lines[6]


def test_the_incremental_snapshot_line() -> None:
    figures = {
        "table": "shop.orders",
        "rows": 425104,
        "estimate": 2000000,
        "queued": ["shop.users"],
        "paused": False,
    }
    assert describe_incremental(figures) == [
        "incremental snapshot shop.orders  [####................]  ~21% · 425,104 of "
        "~2,000,000 rows · 1 table queued"
    ]
    paused = {**figures, "table": None, "queued": ["a.b", "a.c"], "paused": True}
    assert describe_incremental(paused) == [
        "incremental snapshot waiting · 2 tables queued · paused"
    ]
    assert describe_incremental(None) == []
    out = io.StringIO()
    ProgressPrinter(out, every=0.0)(Progress(1, 5, 1.0, None, None, False, None, figures))
    assert (
        out.getvalue()
        .splitlines()[0]
        .endswith(
            "incremental snapshot shop.orders  [####......"
            "..........]  ~21% · 425,104 of ~2,000,000 rows"
            " · 1 table queued"
        )
    )
