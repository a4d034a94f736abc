"""Upkeep of the sink's Delta tables: small files compacted, files no recent version reads deleted.

Every micro-batch's MERGE writes the replica's touched data files anew and every change-log
append adds a file; Delta keeps the files it replaced, so that older versions stay readable,
until a vacuum deletes them. Left alone, a replica of a few megabytes grows by its own size every
second a batch touches it. Each run of the upkeep, for each table (replica and change log):

1. sets the table's ``delta.deletedFileRetentionDuration`` and ``delta.logRetentionDuration`` to
   ``retain`` (whole seconds), so that the vacuum, the checkpoints delta-rs writes every 100
   commits, and the removal of log files older than a checkpoint (delta-rs does it after each
   checkpoint) keep exactly the versions of the last ``retain``;
2. compacts: once the table has ``small_files`` data files below its target size (32 MiB for a
   replica, whose MERGEs rewrite whole files, 128 MiB for a change log), delta-rs's OPTIMIZE
   rewrites them into files of about that size. A rewrite that changes no row needs no Delta
   transaction identifier; the table's identifiers stay (a checkpoint keeps them), so a replayed
   micro-batch still finds itself applied (:func:`.commits.already_applied`);
3. vacuums as Delta's VACUUM does (delta-rs's *full* mode): deletes the data files a commit
   removed more than ``retain`` ago, and the files in the folder no version holds that were
   written more than ``retain`` ago: those a crashed write left, and removed files whose removal
   a checkpoint no longer lists (a checkpoint keeps the removals of the last ``retain`` only; the
   *lite* mode, which knows removals from the log alone, would leave those on disk for ever).
   Every version committed within ``retain`` stays readable (a query, ``sparkcdc verify``, time
   travel).

It runs where no commit of the tables can run at the same time and no micro-batch may be written
again (which may read the replica as it was before that batch, :mod:`.replica_rows`): in the sink's
own thread between two micro-batches, once Spark committed the one before (:class:`Schedule`),
and from ``sparkcdc compact`` on a stopped pipeline. So it never meets a data file that a batch
is about to commit: the data files a snapshot task wrote are linked into the table's folder, with
the time now, and committed in one call of the sink (:mod:`.chunk_files`); a crash in between
leaves them to the replay of that batch, which links them again and commits them before the
run's first upkeep.
"""

from __future__ import annotations

import json
import logging
import math
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pyarrow as pa
from deltalake import DeltaTable

from sparkcdc.core.table_name import TableName
from sparkcdc.sinks.delta import opened
from sparkcdc.sinks.delta.commits import table as delta_table
from sparkcdc.sinks.storage import LakeStorage, as_storage

CHANGELOG_SUFFIX = "__changelog"
REPLICA_TARGET = 32 << 20  # bytes: a MERGE rewrites each file it touches whole
CHANGELOG_TARGET = 128 << 20  # bytes: appended to, read by scans
SMALL_FILES = 10  # files below target that make a scheduled run compact a table
RETENTION_KEYS = ("delta.deletedFileRetentionDuration", "delta.logRetentionDuration")

log = logging.getLogger("sparkcdc.sink")


@dataclass(frozen=True)
class TableUpkeep:
    """What one run of the upkeep did to one Delta table."""

    name: str  # ``db.table``, or ``db.table__changelog``
    compacted: int  # data files rewritten
    written: int  # the files they became
    vacuumed: int  # files deleted
    vacuumed_bytes: int
    files: int  # data files of the table's version afterwards
    bytes: int


def delta_tables(sink: str | LakeStorage, patterns: Sequence[str] = ()) -> list[tuple[str, str]]:
    """(name, path) of the Delta tables under the sink (``<db>/<table>``), replicas and change
    logs, whose ``db.table`` fully matches one of ``patterns`` (none: all)."""
    lake = as_storage(sink)
    found = []
    for db in lake.folders(lake.join()):
        if db.startswith("_"):
            continue  # the sink's own files (_sparkcdc)
        for table in lake.folders(lake.join(db)):
            if not lake.exists(lake.join(db, table, "_delta_log")):
                continue
            name = str(TableName(db, table))
            base = str(TableName(db, table.removesuffix(CHANGELOG_SUFFIX)))
            if not patterns or any(re.fullmatch(p, base) for p in patterns):
                found.append((name, lake.join(db, table)))
    return found


def upkeep_table(name: str, path: str, retain: float, small_files: int) -> TableUpkeep:
    """Steps 1–3 of the module docstring on the Delta table at ``path``; ``small_files``:
    how many files below the target make it compact (2: any two)."""
    table = delta_table(path)
    _keep_for(table, retain)
    target = CHANGELOG_TARGET if name.endswith(CHANGELOG_SUFFIX) else REPLICA_TARGET
    sizes = _sizes(table)
    compacted = written = 0
    if sum(1 for size in sizes if size < target) >= small_files:
        done = table.optimize.compact(target_size=target)
        compacted, written = int(done["numFilesRemoved"]), int(done["numFilesAdded"])
    deleted = table.vacuum(
        retention_hours=None, dry_run=False, enforce_retention_duration=True, full=True
    )
    freed = _vacuumed_bytes(table) if deleted else 0
    table.cleanup_metadata()  # log files older than retain, before a checkpoint
    opened.forget(path)  # the kept table may name log files the cleanup removed
    sizes = _sizes(delta_table(path))
    return TableUpkeep(name, compacted, written, len(deleted), freed, len(sizes), sum(sizes))


def _keep_for(table: DeltaTable, retain: float) -> None:
    """Set the table's retention properties to ``retain`` (one commit, only if they differ)."""
    interval = f"interval {math.ceil(retain)} seconds"
    have = table.metadata().configuration
    if any(have.get(key) != interval for key in RETENTION_KEYS):
        table.alter.set_table_properties(dict.fromkeys(RETENTION_KEYS, interval))


def _sizes(table: DeltaTable) -> list[int]:
    actions = pa.table(table.get_add_actions(flatten=True))
    return [int(size) for size in actions.column("size_bytes").to_pylist()]


def _vacuumed_bytes(table: DeltaTable) -> int:
    """The bytes the vacuum just deleted, as its start commit's metrics record them."""
    for entry in table.history(2):
        if entry.get("operation") == "VACUUM START":
            metrics = entry.get("operationMetrics") or {}
            return int(metrics.get("sizeOfDataToDelete") or 0)
    return 0


def describe(done: TableUpkeep, retain: float) -> str:
    """One log line of what the upkeep did to a table."""
    parts = []
    if done.compacted:
        parts.append(f"compacted {done.compacted} files into {done.written}")
    if done.vacuumed:
        parts.append(
            f"deleted {done.vacuumed} files ({_size(done.vacuumed_bytes)}) no version of the "
            f"last {_duration(retain)} reads"
        )
    what = "; ".join(parts) or "nothing to do"
    return f"upkeep of {done.name}: {what}; {done.files} files, {_size(done.bytes)} now"


def _size(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


def _duration(seconds: float) -> str:
    for unit, scale in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= scale and seconds % scale == 0:
            return f"{int(seconds // scale)}{unit}"
    return f"{seconds:g}s"


class Schedule:
    """The running pipeline's upkeep every ``every`` seconds of every Delta table under the sink
    folder, the first ``every`` after the lake's first batches. The time of the last run is kept
    in ``<sink>/_sparkcdc/upkeep.json``, so short runs (``--available-now`` from a scheduler)
    keep to the schedule too. A failed table is logged
    and left as it was: the upkeep changes no row, the next run tries again."""

    def __init__(
        self,
        sink: str | LakeStorage,
        every: float,
        retain: float,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.sink, self.every, self.retain, self.clock = as_storage(sink), every, retain, clock
        self.state = self.sink.join("_sparkcdc", "upkeep.json")
        self.runs = 0
        self.compacted = 0  # data files rewritten, over the runs of this process
        self.vacuumed = 0
        self.vacuumed_bytes = 0
        self.last_s: float | None = None  # wall time of the last run

    def due(self) -> bool:
        """Whether ``every`` has passed since the last run; a lake that never had one starts
        the clock now (its tables are new: nothing to vacuum, and a first run's end would
        otherwise open every table of a large capture only to find that)."""
        if self.every <= 0:
            return False
        if self.last_s is None:
            try:
                self.last_s = float(json.loads(self.sink.read_text(self.state) or "")["at"])
            except (OSError, ValueError, KeyError, TypeError):
                self.last_s = self.clock()
                self._save(self.last_s)
        return self.clock() - self.last_s >= self.every

    def run(self) -> list[TableUpkeep]:
        """One run over every table (step 1–3, compacting past :data:`SMALL_FILES`)."""
        started = self.clock()
        done = []
        for name, path in delta_tables(self.sink):
            try:
                done.append(upkeep_table(name, path, self.retain, SMALL_FILES))
            except Exception as exc:  # delta-rs raises several kinds; no row is at stake
                log.warning("upkeep of %s failed (%s); it is tried again in the next run", name,
                            exc, extra={"table": name})  # fmt: skip
        for table in done:
            self.compacted += table.compacted
            self.vacuumed += table.vacuumed
            self.vacuumed_bytes += table.vacuumed_bytes
            if table.compacted or table.vacuumed:
                log.info("%s", describe(table, self.retain), extra={"table": table.name})
        self.runs += 1
        self.last_s = started
        self._save(started)
        return done

    def _save(self, at: float) -> None:
        self.sink.write_text(self.state, json.dumps({"at": at}))
