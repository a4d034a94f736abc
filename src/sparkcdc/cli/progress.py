"""The progress display of ``sparkcdc run``: live lines on a terminal, log lines otherwise.

While a snapshot runs, one bar per table above the pipeline's line (shortened here)::

    snapshot shop.orders  [##########..........]  12/24 splits · 96,000 rows · ETA 3s
    batches 42 · 12,345 changes · 2,048 events/s · lag 0.8s · mysql-bin.000003:1234

While an incremental snapshot runs (or waits), one line for it::

    incremental snapshot shop.orders  [####................]  ~21% · 425,104 of ~2,000,000 rows
      · 1 table queued
"""

from __future__ import annotations

import logging
import sys
import time
from typing import TextIO

from sparkcdc.spark.pipeline.progress import Progress
from sparkcdc.spark.stream.status import IncrementalFigures, TableFigures


def describe(p: Progress) -> str:
    if p.lag_s is None:
        lag = "lag -"
    elif p.caught_up:
        lag = "caught up"
    else:
        lag = f"lag {p.lag_s:.1f}s"
    where = f" · {p.position}" if p.position else ""
    return (
        f"batches {p.batches} · {p.changes:,} changes · {p.events_per_s:,.0f} events/s · "
        f"{lag}{where}"
    )


BAR = 20


BARS = 10  # tables with a bar of their own at most; the others are summed up in one line


def describe_snapshot(tables: dict[str, TableFigures] | None) -> list[str]:
    """One bar per table of the snapshot: splits done/total, rows, rows/s, time left. Of more
    than :data:`BARS` tables, the ones being read get bars (:data:`BARS` at most) and one line
    counts the tables done, being read and waiting, with their rows and rows/s."""
    if not tables:
        return []
    shown = dict(sorted(tables.items()))
    summary: list[str] = []
    if len(tables) > BARS:
        reading = {n: t for n, t in shown.items() if not t.get("done") and t.get("splits_done")}
        shown = dict(list(reading.items())[:BARS])
        done = sum(1 for t in tables.values() if t.get("done"))
        rows = sum(int(t.get("rows") or 0) for t in tables.values())
        rate = sum(float(t.get("rows_per_s") or 0) for t in reading.values())
        waiting = len(tables) - done - len(reading)
        summary = [
            f"snapshot of {len(tables):,} tables: {done:,} done, {len(reading):,} being read, "
            f"{waiting:,} waiting · {rows:,} rows · {rate:,.0f} rows/s"
        ]
    if not shown:
        return summary
    width = max(len(name) for name in shown)
    lines = []
    for name, t in shown.items():
        total = max(int(t.get("splits_total") or 0), int(t.get("splits_done") or 0), 1)
        done = int(t.get("splits_done") or 0)
        filled = BAR if t.get("done") else min(BAR, BAR * done // total)
        eta = t.get("eta_s")
        left = "done" if t.get("done") else f"ETA {eta:.0f}s" if eta is not None else "ETA -"
        lines.append(
            f"snapshot {name:<{width}}  [{'#' * filled}{'.' * (BAR - filled)}]  "
            f"{done}/{total} splits · {int(t.get('rows') or 0):,} rows · "
            f"{float(t.get('rows_per_s') or 0):,.0f} rows/s · {left}"
        )
    return lines + summary


def describe_incremental(figures: IncrementalFigures | None) -> list[str]:
    """The incremental snapshot's line: the table read, rows so far of the estimate, what
    waits, and whether it is paused."""
    if not figures:
        return []
    queued = figures.get("queued") or []
    waiting = f" · {len(queued)} table{'s' if len(queued) != 1 else ''} queued" if queued else ""
    paused = " · paused" if figures.get("paused") else ""
    table = figures.get("table")
    if table is None:
        return [f"incremental snapshot waiting{waiting}{paused}"]
    rows, estimate = int(figures.get("rows") or 0), int(figures.get("estimate") or 0)
    share = min(1.0, rows / estimate) if estimate else 0.0
    filled = int(BAR * share)
    of = f" of ~{estimate:,}" if estimate else ""
    return [
        f"incremental snapshot {table}  [{'#' * filled}{'.' * (BAR - filled)}]  "
        f"~{share:.0%} · {rows:,}{of} rows{waiting}{paused}"
    ]


class ProgressPrinter:
    """Callable for :func:`~sparkcdc.spark.pipeline.run.run_pipeline`: redraws one line on a
    TTY, else writes its lines every ``every`` s (to ``log`` when given: ``--log-format json``)."""

    def __init__(
        self, out: TextIO | None = None, every: float = 10.0, log: logging.Logger | None = None
    ) -> None:
        self.out = out or sys.stderr
        self.log = log
        self.tty = log is None and self.out.isatty()
        self.every = every
        self._last_line = float("-inf")  # the first call logs, however young the clock
        self._width = 0
        self._lines = 0
        self._bars_final = False

    def __call__(self, p: Progress) -> None:
        text = describe(p)
        bars = describe_snapshot(p.snapshot) + describe_incremental(p.incremental)
        finished = bool(p.snapshot) and all(t.get("done") for t in (p.snapshot or {}).values())
        if self.tty:
            # back to the first line drawn last time, then redraw every line
            up = f"\x1b[{self._lines - 1}A" if self._lines > 1 else ""
            self.out.write(up + "\r" + "".join(f"{b}\x1b[K\n" for b in bars) + text + "\x1b[K")
            self.out.flush()
            self._width = len(text)
            self._lines = len(bars) + 1
            return
        now = time.monotonic()
        if now - self._last_line >= self.every:
            self._last_line = now
            if finished and self._bars_final:
                bars = []  # the finished bars were logged once (a terminal keeps them shown)
            self._bars_final = self._bars_final or finished
            if self.log is not None:
                for line in bars:
                    self.log.info(line)
                self.log.info(text, extra={"position": p.position})
                return
            stamp = time.strftime("%H:%M:%S ")
            self.out.write("".join(f"{stamp}{line}\n" for line in [*bars, text]))
            self.out.flush()

    def close(self) -> None:
        if self.tty and self._width:
            self.out.write("\n")
            self.out.flush()
