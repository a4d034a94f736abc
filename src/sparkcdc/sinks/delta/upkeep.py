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

import math
import re
import time
from collections.abc import Callable, Sequence

import pyarrow as pa
from deltalake import DeltaTable

from sparkcdc.core.table_name import TableName
from sparkcdc.sinks.delta import opened
from sparkcdc.sinks.delta.commits import table as delta_table
from sparkcdc.sinks.port import TableUpkeep
from sparkcdc.sinks.storage import LakeStorage, as_storage
from sparkcdc.sinks.upkeep import Schedule, target_size

CHANGELOG_SUFFIX = "__changelog"
RETENTION_KEYS = ("delta.deletedFileRetentionDuration", "delta.logRetentionDuration")


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
    target = target_size(name, CHANGELOG_SUFFIX)
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


class DeltaKeeper:
    """The :class:`~sparkcdc.sinks.port.TableKeeper` of the Delta tables under a sink folder."""

    def __init__(self, sink: str | LakeStorage) -> None:
        self.lake = as_storage(sink)
        self._paths: dict[str, str] = {}

    def tables(self, patterns: Sequence[str] = ()) -> list[str]:
        found = delta_tables(self.lake, patterns)
        self._paths.update(found)
        return [name for name, _ in found]

    def keep(self, name: str, retain: float, small_files: int) -> TableUpkeep:
        path = self._paths.get(name)
        if path is None:
            db, _, table = name.partition(".")
            path = self.lake.join(db, table)
        return upkeep_table(name, path, retain, small_files)


def schedule(
    sink: str | LakeStorage, every: float, retain: float, clock: Callable[[], float] = time.time
) -> Schedule:
    """The running pipeline's upkeep of the Delta tables under ``sink`` (:class:`.Schedule`)."""
    lake = as_storage(sink)
    return Schedule(lake, DeltaKeeper(lake), every, retain, clock)
