"""A pipeline's state read from its checkpoint alone, without Spark (``sparkcdc status``).

Four files say it all: the run lock (running or not, and where the run's Spark UI is,
:mod:`.run_lock`), Spark's newest
``commits/<n>`` (the last committed micro-batch, and when: the file's time), the matching
``offsets/<n>`` (where that batch ended in the source's log, :mod:`.offset_log`), a newer
``offsets/<m>`` with no commit (a batch planned and not committed: it runs now, or a stop came
before it committed and the next run writes it again), and the source process's status file
(where the log reader is, how far behind, the snapshots' progress,
:mod:`sparkcdc.spark.stream.status`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from sparkcdc.core.errors import SparkCDCError
from sparkcdc.core.json_value import JSONObject, JSONValue
from sparkcdc.core.logs import counted, iso_utc
from sparkcdc.core.offset import Offset
from sparkcdc.spark.offsets import NewerOffsetFormat, SnapshotOffset, UnreadableOffset, parse
from sparkcdc.spark.pipeline.offset_log import newest_batch, read_offset_file
from sparkcdc.spark.pipeline.run_lock import running_holder
from sparkcdc.spark.stream.status import (
    STATUS_FILE,
    IncrementalFigures,
    StatusError,
    TableFigures,
    read_status,
)

RUNNING, STOPPED, NEVER_RUN = "running", "stopped", "never run"
RESNAPSHOT_MARKER = "resnapshot.json"  # a re-snapshot under way (:mod:`.resnapshot`)


@dataclass(frozen=True)
class BatchState:
    """One micro-batch of Spark's checkpoint: its number, when its file was written, and the
    source offset it ends at (``position``: as the source writes it)."""

    batch: int
    at: str  # ISO-8601 UTC: the commit file's time (committed), the offset file's (planned)
    offset: JSONObject | None
    position: str | None


@dataclass(frozen=True)
class SourceState:
    """What the source process last wrote into its status file."""

    position: str | None  # where the log reader is
    committed_offset: str | None  # the end of the last batch Spark committed, as it saw it
    committed_ts: str | None  # source commit time of the newest change Spark committed
    caught_up: bool
    lag_s: float | None  # behind the source as of ``updated`` (0 when caught up)
    updated: str | None
    error: StatusError | None
    snapshot: dict[str, TableFigures] | None  # per table, of the initial snapshot
    incremental: IncrementalFigures | None  # the incremental snapshot running or waiting


@dataclass(frozen=True)
class PipelineState:
    checkpoint: str
    exists: bool  # whether the checkpoint folder exists
    state: str  # RUNNING, STOPPED or NEVER_RUN
    pid: int | None  # the running process
    started: str | None  # when it started
    committed: BatchState | None
    planned: BatchState | None  # planned after the last commit, not committed (yet)
    source: SourceState | None
    resnapshot_since: str | None = None  # a re-snapshot under way since this log position
    spark_ui: str | None = None  # the running process's Spark web UI (None: off, or not up yet)


def read_pipeline_state(checkpoint: Path, offsets: type[Offset]) -> PipelineState:
    """The state of the pipeline checkpointed at ``checkpoint`` whose source's offsets are
    ``offsets`` (to write an offset as that source does)."""
    own, spark = checkpoint / "sparkcdc", checkpoint / "spark"
    holder = running_holder(own)
    commit = newest_batch(spark / "commits")
    planned = newest_batch(spark / "offsets")
    committed = None if commit is None else _batch(spark, int(commit.name), commit, offsets)
    ahead = None
    if planned is not None and (commit is None or int(planned.name) > int(commit.name)):
        ahead = _batch(spark, int(planned.name), planned, offsets)
    state = RUNNING if holder is not None else STOPPED if planned is not None else NEVER_RUN
    return PipelineState(
        checkpoint=str(checkpoint),
        exists=checkpoint.is_dir(),
        state=state,
        pid=None if holder is None else holder.pid,
        started=None if holder is None else holder.started,
        committed=committed,
        planned=ahead,
        source=_source(own / STATUS_FILE),
        resnapshot_since=_resnapshot_since(own / RESNAPSHOT_MARKER),
        spark_ui=None if holder is None else holder.spark_ui,
    )


def _resnapshot_since(path: Path) -> str | None:
    try:
        found = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return str(found.get("since")) if isinstance(found, dict) else None


def _batch(spark: Path, batch: int, stamped: Path, offsets: type[Offset]) -> BatchState:
    """Batch ``batch``: its offset file, with the time of ``stamped`` (its commit or offset
    file)."""
    offset_path = spark / "offsets" / str(batch)
    entry = read_offset_file(offset_path) if offset_path.is_file() else None
    raw = None if entry is None else entry.offset
    try:
        at = iso_utc(stamped.stat().st_mtime)
    except OSError:  # Spark removed it meanwhile (it keeps the newest hundred)
        at = ""
    return BatchState(batch, at, _shown(raw), describe_offset(raw, offsets))


def describe_offset(raw: JSONObject | None, offsets: type[Offset]) -> str | None:
    """An offset of the stream as text: the source's position in its log, or where the
    initial snapshot is."""
    if raw is None:
        return None
    try:
        offset = parse(raw)
    except NewerOffsetFormat as exc:
        return str(exc)
    except UnreadableOffset:
        return None  # shown as JSON only
    if isinstance(offset, SnapshotOffset):
        tables, current = offset.tables, offset.current
        at = f", at {tables[current]}" if current < len(tables) else ", every table split"
        return f"initial snapshot of {counted(len(tables), 'table')}{at}"
    try:
        return str(offsets.from_json(offset.position))
    except ValueError:  # not this source's offset (the file names another type): as JSON only
        return None


def _shown(raw: JSONObject | None) -> JSONObject | None:
    """The offset without the states that ride along with it (the initial snapshot's splits,
    the incremental snapshot's window): the source's position, or where the snapshot is."""
    if raw is None:
        return None
    try:
        offset = parse(raw)
    except SparkCDCError:
        return raw  # not one sparkcdc reads: as it is
    if isinstance(offset, SnapshotOffset):
        tables: list[JSONValue] = list(offset.tables)
        where: JSONObject = {"tables": tables, "current": offset.current, "batch": offset.batch}
        return {"snapshot": where}
    return dict(offset.position)


def _source(path: Path) -> SourceState | None:
    status = read_status(path)
    if status is None:
        return None
    caught_up = bool(status.get("caught_up"))
    committed_ms, updated_ms = status.get("committed_ts_ms"), status.get("updated_ms")
    lag = None
    if caught_up:
        lag = 0.0
    elif isinstance(committed_ms, int) and isinstance(updated_ms, int):
        lag = max(0.0, (updated_ms - committed_ms) / 1000)
    error = status.get("error")
    return SourceState(
        position=status.get("position"),
        committed_offset=status.get("committed_offset"),
        committed_ts=iso_utc(committed_ms / 1000) if isinstance(committed_ms, int) else None,
        caught_up=caught_up,
        lag_s=lag,
        updated=iso_utc(updated_ms / 1000) if isinstance(updated_ms, int) else None,
        error=error,
        snapshot=status.get("snapshot") or None,
        incremental=status.get("incremental") or None,
    )
