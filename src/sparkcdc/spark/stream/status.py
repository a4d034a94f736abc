"""The source process's status file: where the log reader is and how much is waiting.

The driver-side source process (PySpark runs each Python stream reader in a process of its own)
rewrites ``<checkpoint>/sparkcdc/metrics.json`` about once a second, atomically (write, then
rename), so the CLI can show lag and throughput without talking to Spark. Fields:

=====================  =================================================================
position               the log reader's position (the source's offset, as text)
events, rows           log records read, captured row changes decoded
connected              whether the log reader holds its replication connection now
reconnects             how often the log reader connected again after a broken connection
heartbeats             ``source.heartbeat``'s beats so far (progress markers, action queries)
last_event_ts_ms       commit time of the newest change the reader decoded
last_row_read_ms       when the reader's count of row changes last grew (noticed once a second)
committed_offset       the end offset of the last micro-batch Spark committed
committed_ts_ms        commit time (at the source) of the newest change Spark committed
committed_rows         captured row changes Spark committed since the process started
caught_up              nothing waiting, and the reader has not moved for 3 s (at the log end)
store_pending_bytes    bytes put into the store and not yet handed to Spark
store_used_bytes       bytes held by the store (not yet acked)
store_peak_bytes       the largest ``store_used_bytes`` seen
peak_rss_bytes         the source process's peak resident memory
snapshot               per table of the initial snapshot: ``splits_done``, ``splits_total``
                       (chunks), ``rows``, ``rows_per_s``, ``eta_s``, ``done``
snapshot_running       whether the stream's offsets are still in the snapshot phase
incremental            the incremental snapshot running or waiting: ``table``, ``rows``,
                       ``estimate``, ``queued``, ``paused``, ``reason`` (why the pipeline
                       reads the table again by itself: a schema change rewrote its rows) and
                       ``reasons`` (of the queued tables, by table)
error                  ``{"type", "message"}`` of the error that stopped the log reader
updated_ms             when this file was written
=====================  =================================================================
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

STATUS_FILE = "metrics.json"


def peak_rss_bytes() -> int:
    """Peak resident set size of this process (Linux reports kilobytes)."""
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024


def write_status(path: str | os.PathLike[str], status: dict[str, Any]) -> None:
    """Replace the status file atomically with ``status`` (plus ``updated_ms``)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps({**status, "updated_ms": int(time.time() * 1000)}))
    os.replace(tmp, target)


def read_status(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The last status written, or None if there is none (yet) or it is unreadable."""
    try:
        value = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


class StatusWriter(threading.Thread):
    """Writes ``snapshot()`` to ``path`` every ``interval`` seconds until :meth:`stop`."""

    def __init__(
        self, path: str, snapshot: Callable[[], dict[str, Any]], interval: float = 1.0
    ) -> None:
        super().__init__(name="sparkcdc-status", daemon=True)
        self.path, self.snapshot, self.interval = path, snapshot, interval
        self._stop_event = threading.Event()

    def run(self) -> None:
        while not self._stop_event.wait(self.interval):
            self.flush()

    def flush(self) -> None:
        with contextlib.suppress(Exception):  # a status file must never stop the stream
            write_status(self.path, self.snapshot())

    def stop(self) -> None:
        self._stop_event.set()
        self.flush()
