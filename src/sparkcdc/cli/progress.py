"""The progress display of ``sparkcdc run``: one live line on a terminal, log lines otherwise.

batches 42 · 12,345 changes · 2,048 events/s · lag 0.8s · mysql-bin.000003:1234
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

from sparkcdc.spark.pipeline import Progress


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


class ProgressPrinter:
    """Callable for :func:`run_pipeline`: redraws one line on a TTY, else logs every ``every`` s."""

    def __init__(self, out: TextIO | None = None, every: float = 10.0) -> None:
        self.out = out or sys.stderr
        self.tty = self.out.isatty()
        self.every = every
        self._last_line = 0.0
        self._width = 0

    def __call__(self, p: Progress) -> None:
        text = describe(p)
        if self.tty:
            pad = max(0, self._width - len(text))
            self.out.write("\r" + text + " " * pad)
            self.out.flush()
            self._width = len(text)
            return
        now = time.monotonic()
        if now - self._last_line >= self.every:
            self._last_line = now
            self.out.write(time.strftime("%H:%M:%S ") + text + "\n")
            self.out.flush()

    def close(self) -> None:
        if self.tty and self._width:
            self.out.write("\n")
            self.out.flush()
