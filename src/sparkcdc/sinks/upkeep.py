"""The sink's table upkeep on a schedule, for every table format.

A table format's :class:`~sparkcdc.sinks.port.TableKeeper` compacts one table's small files and
deletes the files no version of the last ``retain`` reads (Delta: :mod:`.delta.upkeep`,
Iceberg: :mod:`.iceberg.upkeep`). This module runs it over every table of the sink, every
``sink.maintenance.compact_every`` of the running pipeline (:class:`Schedule`), and says what it
did in one line per table (:func:`describe`), for the log and for ``sparkcdc compact``.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable

from sparkcdc.sinks.port import TableKeeper, TableUpkeep, UpkeepFigures
from sparkcdc.sinks.storage import LakeStorage

REPLICA_TARGET = 32 << 20  # bytes: a replica's upsert rewrites each file it touches whole
CHANGELOG_TARGET = 128 << 20  # bytes: a change log is appended to and read by scans
SMALL_FILES = 10  # files below target that make a scheduled run compact a table

log = logging.getLogger("sparkcdc.sink")


def target_size(name: str, changelog_suffix: str = "__changelog") -> int:
    """The data file size compaction aims at for the table ``name``."""
    return CHANGELOG_TARGET if name.endswith(changelog_suffix) else REPLICA_TARGET


def describe(done: TableUpkeep, retain: float) -> str:
    """One log line of what the upkeep did to a table."""
    parts = []
    if done.compacted:
        parts.append(f"compacted {done.compacted} files into {done.written}")
    if done.expired:
        parts.append(f"expired {done.expired} snapshots older than {_duration(retain)}")
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
    """The running pipeline's upkeep every ``every`` seconds of every table of the sink, the
    first ``every`` after the lake's first batches. The time of the last run is kept in
    ``<sink>/_sparkcdc/upkeep.json``, so short runs (``--available-now`` from a scheduler) keep
    to the schedule too. A failed table is logged and left as it was: the upkeep changes no
    row, the next run tries again."""

    def __init__(
        self,
        sink: LakeStorage,
        keeper: TableKeeper,
        every: float,
        retain: float,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.sink, self.keeper, self.every, self.retain = sink, keeper, every, retain
        self.clock = clock
        self.state = self.sink.join("_sparkcdc", "upkeep.json")
        self.runs = 0
        self.compacted = 0  # data files rewritten, over the runs of this process
        self.vacuumed = 0
        self.vacuumed_bytes = 0
        self.last_s: float | None = None  # wall time of the last run

    def due(self) -> bool:
        """Whether ``every`` has passed since the last run; a lake that never had one starts
        the clock now (its tables are new: nothing to delete, and a first run's end would
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
        """One run over every table, compacting past :data:`SMALL_FILES`."""
        started = self.clock()
        done = []
        for name in self.keeper.tables():
            try:
                done.append(self.keeper.keep(name, self.retain, SMALL_FILES))
            except Exception as exc:  # table format libraries raise several kinds; no row at stake
                log.warning("upkeep of %s failed (%s); it is tried again in the next run", name,
                            exc, extra={"table": name})  # fmt: skip
        for table in done:
            self.compacted += table.compacted
            self.vacuumed += table.vacuumed
            self.vacuumed_bytes += table.vacuumed_bytes
            if table.compacted or table.vacuumed or table.expired:
                log.info("%s", describe(table, self.retain), extra={"table": table.name})
        self.runs += 1
        self.last_s = started
        self._save(started)
        return done

    def figures(self) -> UpkeepFigures | None:
        """The runs of this process so far (None: no schedule)."""
        if self.every <= 0:
            return None
        return UpkeepFigures(self.runs, self.compacted, self.vacuumed, self.vacuumed_bytes,
                             self.last_s)  # fmt: skip

    def _save(self, at: float) -> None:
        """Keep the time of the last run; a lake that takes no file now (its disk full) is
        logged and left: the schedule runs from this process's clock until a later save."""
        try:
            self.sink.write_text(self.state, json.dumps({"at": at}))
        except OSError as exc:
            log.warning("the upkeep's time could not be kept in %s (%s); it is kept again "
                        "after its next run", self.state, exc)  # fmt: skip
