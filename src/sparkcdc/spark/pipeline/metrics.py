"""The pipeline's Prometheus metrics: the sink's figures on the driver and the source process's
status file (:mod:`sparkcdc.spark.stream.status`) as metric families.

:func:`families` is a pure function of those figures and the time now; a figure the run does
not know yet (the log reader not started, no batch written, no snapshot in this run) has no
sample. :class:`PipelineMetrics` reads the live figures for each scrape.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from sparkcdc.sinks.port import Sink, SinkFigures, UpkeepFigures
from sparkcdc.spark.pipeline.exposition import FamiliesCollector, Family, Sample, page
from sparkcdc.spark.stream.status import IncrementalFigures, Status, TableFigures, read_status

__all__ = ["PipelineMetrics", "SinkFigures", "UpkeepFigures", "families"]


def families(sink: SinkFigures, status: Status | None, now: float) -> list[Family]:
    """Every metric family of the pipeline; ``status``: the status file (None: not written
    yet), ``now``: wall time in seconds."""
    st: Status = status or {}
    return [
        *_written(sink, st, now),
        *_upkeep(sink.upkeep),
        *_source(st, now),
        *_store(st),
        *_snapshot(st),
        *_incremental(st, status is not None),
    ]


def _written(sink: SinkFigures, st: Status, now: float) -> list[Family]:
    """What the sink wrote: batches, change-log rows per table and op, lag."""
    lag = None
    if st.get("caught_up"):
        lag = 0.0
    elif sink.last_event_ts_ms is not None:
        lag = max(0.0, now - sink.last_event_ts_ms / 1000)
    events = tuple(
        Sample(n, (("table", table), ("op", op))) for (table, op), n in sorted(sink.events.items())
    )
    return [
        _one("sparkcdc_batches_total", "counter", "Micro-batches written.", sink.batches),
        Family(
            "sparkcdc_events_total",
            "counter",
            "Change-log rows written, per table and op (c, u, d, r).",
            events,
        ),
        _one(
            "sparkcdc_last_commit_timestamp_seconds",
            "gauge",
            "Wall time the last micro-batch was written.",
            sink.last_commit_s,
        ),
        _one(
            "sparkcdc_source_lag_seconds",
            "gauge",
            "Now minus the source commit time of the newest change written (0 when caught up).",
            lag,
        ),
    ]


def _upkeep(figures: UpkeepFigures | None) -> list[Family]:
    """The upkeep's work in this run (none without a schedule)."""
    if figures is None:
        return []
    last = figures.last_s or None  # 0: never ran
    return [
        _one("sparkcdc_upkeep_runs_total", "counter",
             "Runs of the upkeep of the sink's tables (compaction and vacuum).", figures.runs),
        _one("sparkcdc_upkeep_files_compacted_total", "counter",
             "Small data files the upkeep rewrote into larger ones.", figures.compacted),
        _one("sparkcdc_upkeep_files_vacuumed_total", "counter",
             "Files the upkeep deleted: no version within sink.maintenance.retain reads them.",
             figures.vacuumed),
        _one("sparkcdc_upkeep_bytes_vacuumed_total", "counter",
             "Bytes of the files the upkeep deleted.", figures.vacuumed_bytes),
        _one("sparkcdc_upkeep_last_timestamp_seconds", "gauge",
             "Wall time the upkeep last ran.", last),
    ]  # fmt: skip


def _source(st: Status, now: float) -> list[Family]:
    """The log reader, as the source process reports it."""
    read_ms = _number(st, "last_row_read_ms")
    event_ms = _number(st, "last_event_ts_ms") or None  # 0: none decoded yet
    updated_ms = _number(st, "updated_ms")
    position = st.get("position")
    info = () if not isinstance(position, str) else (Sample(1, (("position", position),)),)
    return [
        _one("sparkcdc_source_connected", "gauge", "Whether the log reader is connected.",
             _number(st, "connected")),
        _one("sparkcdc_source_caught_up", "gauge",
             "Whether nothing waits and the log reader stands at the log end.",
             _number(st, "caught_up")),
        _one("sparkcdc_source_events_read_total", "counter",
             "Log records the log reader read.", _number(st, "events")),
        _one("sparkcdc_source_rows_read_total", "counter",
             "Captured row changes the log reader decoded.", _number(st, "rows")),
        _one("sparkcdc_source_reconnects_total", "counter",
             "Times the log reader connected again after its connection broke.",
             _number(st, "reconnects")),
        _one("sparkcdc_source_heartbeats_total", "counter",
             "Beats of source.heartbeat: once per interval, the action query run and the "
             "position reached handed to Spark.", _number(st, "heartbeats")),
        _one("sparkcdc_source_seconds_since_last_event", "gauge",
             "Seconds since the log reader last decoded a captured row change.",
             None if read_ms is None else max(0.0, now - read_ms / 1000)),
        _one("sparkcdc_source_last_event_timestamp_seconds", "gauge",
             "Source commit time of the newest change the log reader decoded.",
             None if event_ms is None else event_ms / 1000),
        Family("sparkcdc_source_info", "gauge", "The log reader's position.", info),
        _one("sparkcdc_source_status_age_seconds", "gauge",
             "Seconds since the source process last wrote its status.",
             None if updated_ms is None else max(0.0, now - updated_ms / 1000)),
        _one("sparkcdc_source_peak_rss_bytes", "gauge",
             "Peak resident memory of the source process.", _number(st, "peak_rss_bytes")),
    ]  # fmt: skip


def _store(st: Status) -> list[Family]:
    """The event store between the log reader and Spark."""
    return [
        _one("sparkcdc_store_bytes", "gauge", "Bytes held by the event store (not yet acked).",
             _number(st, "store_used_bytes")),
        _one("sparkcdc_store_peak_bytes", "gauge", "The largest sparkcdc_store_bytes seen.",
             _number(st, "store_peak_bytes")),
        _one("sparkcdc_store_pending_bytes", "gauge",
             "Bytes in the event store not yet handed to Spark.",
             _number(st, "store_pending_bytes")),
    ]  # fmt: skip


def _snapshot(st: Status) -> list[Family]:
    """The initial snapshot taken in this run, overall and per table."""
    tables = st.get("snapshot") or {}
    running = _number(st, "snapshot_running")
    done = [bool(t.get("done")) for t in tables.values()]
    completed = None if not tables or running is None else float(not running and all(done))

    def per_table(figure: Callable[[TableFigures], float]) -> tuple[Sample, ...]:
        return tuple(Sample(figure(t), (("table", name),)) for name, t in sorted(tables.items()))

    def total(t: TableFigures) -> int:
        return int(t.get("splits_total", 0))

    return [
        _one("sparkcdc_snapshot_running", "gauge", "Whether the initial snapshot is running.",
             running),
        _one("sparkcdc_snapshot_completed", "gauge",
             "Whether the initial snapshot wrote every chunk of every table.", completed),
        Family("sparkcdc_snapshot_rows_total", "counter",
               "Rows the initial snapshot read, per table.",
               per_table(lambda t: int(t.get("rows", 0)))),
        Family("sparkcdc_snapshot_chunks_total", "gauge",
               "Chunks of each table (an estimate until the table is cut whole).",
               per_table(total)),
        Family("sparkcdc_snapshot_chunks_remaining", "gauge", "Chunks of each table not read yet.",
               per_table(lambda t: max(0, total(t) - int(t.get("splits_done", 0))))),
        Family("sparkcdc_snapshot_table_completed", "gauge",
               "Whether every chunk of the table was read.",
               per_table(lambda t: float(bool(t.get("done"))))),
    ]  # fmt: skip


_NO_INCREMENTAL: IncrementalFigures = {
    "table": None,
    "rows": 0,
    "estimate": None,
    "queued": [],
    "paused": False,
}


def _incremental(st: Status, known: bool) -> list[Family]:
    """The incremental snapshot running or waiting (``known``: the status file was read)."""
    figures = st.get("incremental") or _NO_INCREMENTAL
    table = figures.get("table")
    label = () if not isinstance(table, str) else (("table", table),)
    estimate = figures.get("estimate")
    queued = figures.get("queued") or []
    return [
        _one("sparkcdc_incremental_snapshot_running", "gauge",
             "Whether an incremental snapshot reads a table.",
             float(bool(label)) if known else None),
        _one("sparkcdc_incremental_snapshot_paused", "gauge",
             "Whether incremental snapshots are paused.",
             float(bool(figures.get("paused"))) if known else None),
        _one("sparkcdc_incremental_snapshot_tables_queued", "gauge",
             "Tables waiting for an incremental snapshot.", len(queued) if known else None),
        Family("sparkcdc_incremental_snapshot_rows", "gauge",
               "Rows the running incremental snapshot read of its table.",
               (Sample(int(figures.get("rows") or 0), label),) if label else ()),
        Family("sparkcdc_incremental_snapshot_rows_estimate", "gauge",
               "The table's rows as estimated when its incremental snapshot started.",
               (Sample(float(estimate), label),) if label and estimate is not None else ()),
    ]  # fmt: skip


def _one(name: str, kind: str, text: str, value: float | None) -> Family:
    """A family of one unlabelled sample, or of none when ``value`` is unknown."""
    return Family(name, kind, text, () if value is None else (Sample(value),))


def _number(st: Status, key: str) -> float | None:
    """``st[key]`` as a number (true/false as 1/0), or None when absent or not a number."""
    value = st.get(key)
    if isinstance(value, bool):
        return float(value)
    return float(value) if isinstance(value, (int, float)) else None


class PipelineMetrics(FamiliesCollector):
    """What a scrape reads (a prometheus_client collector): the sink and status file of the
    query once :meth:`watch` named them, zeros before (no batch is written before the query
    starts)."""

    def __init__(self) -> None:
        super().__init__(self.now)
        self._sink: Sink | None = None
        self._status_path: Path | None = None

    def watch(self, sink: Sink, status_path: Path) -> None:
        self._sink, self._status_path = sink, status_path

    def now(self) -> list[Family]:
        """The families as the live figures stand."""
        sink, path = self._sink, self._status_path
        figures = SinkFigures() if sink is None else sink.figures()
        status = None if path is None else read_status(path)
        return families(figures, status, time.time())

    def page(self) -> str:
        return page(self)
