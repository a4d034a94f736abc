"""What ``sparkcdc run`` shows while it runs: the sink's figures and the source's status file
turned into one :class:`Progress` sample about once a second."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from sparkcdc.sinks.port import Sink
from sparkcdc.spark.stream.status import IncrementalFigures, TableFigures, read_status


@dataclass(frozen=True)
class Progress:
    """What the progress line shows, about once a second."""

    batches: int
    changes: int
    events_per_s: float
    lag_s: float | None  # now - commit time of the newest change written (0 when caught up)
    position: str | None
    caught_up: bool
    snapshot: dict[str, TableFigures] | None = None  # per table, while a snapshot runs
    incremental: IncrementalFigures | None = None  # the incremental snapshot running or waiting


ProgressCallback = Callable[[Progress], None]


class Meter:
    """Turns the sink's counters and the source's status file into :class:`Progress`."""

    WINDOW = 10.0  # seconds of history behind the events/s figure

    def __init__(self, sink: Sink, status_path: Path) -> None:
        self.sink, self.status_path = sink, status_path
        self._samples: deque[tuple[float, int]] = deque([(time.monotonic(), 0)])
        self.last = Progress(0, 0, 0.0, None, None, False)

    def sample(self, force: bool = False) -> Progress | None:
        now = time.monotonic()
        if not force and now - self._samples[-1][0] < 1.0:
            return None
        status = read_status(self.status_path) or {}
        figures = self.sink.figures()
        changes = figures.changes
        self._samples.append((now, changes))
        while len(self._samples) > 2 and now - self._samples[0][0] > self.WINDOW:
            self._samples.popleft()
        t0, c0 = self._samples[0]
        rate = (changes - c0) / max(now - t0, 1e-6)
        caught_up = bool(status.get("caught_up"))
        last_ts = figures.last_event_ts_ms
        lag = None if last_ts is None else max(0.0, time.time() - last_ts / 1000)
        self.last = Progress(
            figures.batches,
            changes,
            rate,
            0.0 if caught_up else lag,
            status.get("position"),
            caught_up,
            status.get("snapshot"),
            status.get("incremental"),
        )
        return self.last
