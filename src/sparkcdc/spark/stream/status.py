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
from typing import NotRequired, TypedDict, cast

STATUS_FILE = "metrics.json"


class TableFigures(TypedDict):
    """One table of the initial snapshot (``snapshot``)."""

    splits_done: int
    splits_total: int  # chunks (an estimate until the table is cut whole)
    rows: int
    rows_per_s: float
    eta_s: float | None
    done: bool


class IncrementalFigures(TypedDict):
    """The incremental snapshot running or waiting (``incremental``)."""

    table: str | None
    rows: int
    estimate: int | None
    queued: list[str]
    paused: bool
    reason: NotRequired[str | None]  # (older files lack it, and ``reasons``)
    reasons: NotRequired[dict[str, str]]


class StatusError(TypedDict):
    """The error that stopped the log reader (``error``)."""

    type: str
    message: str


class Status(TypedDict, total=False):
    """The status file: every key may be missing (written before the reader started, or by an
    older version); the table above says what each holds."""

    position: str | None
    events: int
    rows: int
    connected: bool
    reconnects: int
    heartbeats: int
    last_event_ts_ms: int | None
    last_row_read_ms: int | None
    committed_offset: str | None
    committed_ts_ms: int | None
    committed_rows: int
    caught_up: bool
    store_pending_bytes: int
    store_used_bytes: int
    store_peak_bytes: int
    peak_rss_bytes: int
    snapshot: dict[str, TableFigures]
    snapshot_running: bool
    incremental: IncrementalFigures
    error: StatusError
    updated_ms: int


KEY_TYPES: dict[str, tuple[type, ...]] = {
    **dict.fromkeys(("position", "committed_offset"), (str, type(None))),
    **dict.fromkeys(("connected", "caught_up", "snapshot_running"), (bool,)),
    **dict.fromkeys(("snapshot", "incremental", "error"), (dict,)),
    **dict.fromkeys(("last_event_ts_ms", "last_row_read_ms", "committed_ts_ms"), (int, type(None))),
    **dict.fromkeys(
        (
            "events",
            "rows",
            "reconnects",
            "heartbeats",
            "committed_rows",
            "store_pending_bytes",
            "store_used_bytes",
            "store_peak_bytes",
            "peak_rss_bytes",
            "updated_ms",
        ),
        (int,),
    ),
}
"""Each key of :class:`Status` and the JSON types its value may have (every key: a key missing
here would never be read)."""


def peak_rss_bytes() -> int:
    """Peak resident set size of this process (Linux reports kilobytes)."""
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024


def write_status(path: str | os.PathLike[str], status: Status) -> None:
    """Replace the status file atomically with ``status`` (plus ``updated_ms``)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps({**status, "updated_ms": int(time.time() * 1000)}))
    os.replace(tmp, target)


def read_status(path: str | os.PathLike[str]) -> Status | None:
    """The last status written, or None if there is none (yet) or it is unreadable. Keys it
    does not know, or whose value is of another JSON type, are left out (as if missing)."""
    try:
        value = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(value, dict):
        return None
    known = {
        key: v
        for key, v in value.items()
        if key in KEY_TYPES and isinstance(v, KEY_TYPES[key]) and not _bool_as_int(key, v)
    }
    return cast(Status, known)


def _bool_as_int(key: str, value: object) -> bool:
    """Whether ``value`` is a JSON true/false where a number is meant (Python's bool is an
    int)."""
    return isinstance(value, bool) and bool not in KEY_TYPES[key]


class StatusWriter(threading.Thread):
    """Writes ``snapshot()`` to ``path`` every ``interval`` seconds until :meth:`stop`."""

    def __init__(self, path: str, snapshot: Callable[[], Status], interval: float = 1.0) -> None:
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
