"""The stream reader's snapshot side, on the driver: offsets, announcements, progress, hand-off.

:class:`~sparkcdc.spark.stream.reader.ChangeStreamReader` hands every snapshot offset here
(see :mod:`sparkcdc.spark.snapshot.planner` for their shape): ``next`` frees the rows of the batch
Spark just committed and plans the following one, ``partitions`` adds the schema announcements of
tables starting in a batch to its split tasks, ``target`` extends available-now (and ``startup:
snapshot``) to the largest high watermark so the copy ends consistent, and ``change_filter`` gives
the log reader the hand-off filter while the stream is inside the hand-off range.
"""

from __future__ import annotations

import json
import time
from typing import NotRequired, TypedDict

import pyarrow as pa
from pyspark.sql.datasource import InputPartition

from sparkcdc.core.event import SchemaRow
from sparkcdc.core.offset import Offset
from sparkcdc.core.offset_events import own_values, schema_batch
from sparkcdc.snapshot.handoff import Handoff, HandoffFilter
from sparkcdc.snapshot.split_store import SplitMeta
from sparkcdc.spark.offsets import SnapshotOffset, SparkOffset
from sparkcdc.spark.snapshot.planner import SnapshotPlanner, open_dialect
from sparkcdc.spark.stream.options import SourceOptions
from sparkcdc.spark.stream.status import TableFigures

ANNOUNCE = '{"kind":"announce"}'


class TablePlan(TypedDict):
    """What the phase knows of a table's plan: when it started, its split count (or estimate)
    and whether that count is final (the table cut whole)."""

    started: float
    splits_total: NotRequired[int]
    final: NotRequired[bool]


class SnapshotPhase:
    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        self.planner = SnapshotPlanner(options)
        self.progress: dict[str, TablePlan] = {}
        self.running = True  # until the planner hands the stream over to the log
        self._released: set[int] = set()
        self._metas: dict[str, dict[int, SplitMeta]] = {}  # table -> index -> meta
        self._figures: dict[str, TableFigures] = {}

    def initial(self, tables: list[str]) -> SnapshotOffset:
        return self.planner.initial(tables)

    def next(self, start: SnapshotOffset) -> SparkOffset:
        """Spark committed the batch ending at ``start``; the offset of the next one."""
        self.committed(start)
        planned = self.planner.next(start)
        self.running = isinstance(planned, SnapshotOffset)
        if isinstance(planned, SnapshotOffset):
            self._planned(planned)
        return planned

    def partitions(self, end: SnapshotOffset) -> list[InputPartition]:
        """The batch's split tasks (a snapshot offset always has one at least: the planner
        ends the phase when no split is left); the first sends the announcements first."""
        tasks = self.planner.partitions(end)
        tasks[0].head = self._announce(end)
        return list(tasks)

    def committed(self, end: SnapshotOffset) -> None:
        """Free the rows of a committed batch (once) and note its tables' split counts."""
        if end.batch not in self._released:
            self._released.add(end.batch)
            self.planner.release(end)
        self._planned(end)

    def close(self) -> None:
        """The stream stops: let the planner's pinned view go."""
        self.planner.close()

    def target(self, begin: Offset, target: Offset | None) -> Offset | None:
        """Where available-now (or ``startup: snapshot``) ends once the log flows: no earlier
        than the largest high watermark, where every table's copy is exact at once."""
        found = Handoff.load(self.planner.handoff_path, self.options.kind.offsets)
        highest = None if found is None else found.highest
        if self.options.source.startup == "snapshot":
            return highest or begin
        if target is not None and highest is not None:
            return max(target, highest)
        return target

    def change_filter(self, start: Offset) -> HandoffFilter | None:
        found = Handoff.load(self.planner.handoff_path, self.options.kind.offsets)
        if found is None or found.highest is None or start >= found.highest:
            return None
        return HandoffFilter(found, lambda: open_dialect(self.options))

    def _announce(self, end: SnapshotOffset) -> bytes:
        """The schema rows of the tables whose snapshot starts in this batch, as Arrow IPC
        stream bytes (empty: none)."""
        rows: list[SchemaRow] = []
        for name in end.announce:
            schema = self.options.source.capture.schema(end.meta[name].schema)
            text = json.dumps(schema.to_json(), separators=(",", ":"))
            rows.append((schema.db, schema.table, text, None, ANNOUNCE, schema.schema_id()))
        if not rows:
            return b""
        offsets = self.options.kind.offsets
        batch = schema_batch(
            rows, offsets, position=None, own=own_values(offsets, None),
            ts_ms=int(time.time() * 1000), database=self.options.source.settings.source_database,
        )  # fmt: skip
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, batch.schema) as writer:
            writer.write_batch(batch)
        return bytes(sink.getvalue().to_pybytes())

    def _planned(self, offset: SnapshotOffset) -> None:
        """Remember each table's split count (or estimate) for the progress figures."""
        for name, meta in offset.meta.items():
            p = self.progress.setdefault(name, {"started": time.time()})
            p["splits_total"] = meta.splits or meta.estimate or 0
            p["final"] = meta.splits is not None

    def figures(self) -> dict[str, TableFigures]:
        """Per table: splits done/total, rows, rows/s and the estimated seconds left, counted
        from the finished splits in the store (splits of the batch in flight count as they
        end)."""
        now = time.time()
        out: dict[str, TableFigures] = {}
        for name, p in self.progress.items():
            if name in self._figures and self._figures[name]["done"]:
                out[name] = self._figures[name]  # a finished table's figures stay as they are
                continue
            seen = self._metas.setdefault(name, {})
            for m in self.planner.store.finished(name, known=seen):  # read each split once
                seen[int(m["split"]["index"])] = m
            metas = list(seen.values())
            done = len(metas)
            rows = sum(int(m["rows"]) for m in metas)
            total = max(int(p.get("splits_total", 0)), done)
            finished = bool(p.get("final")) and done >= total
            end = max((m.get("ended", now) for m in metas), default=now) if finished else now
            begun = min((m.get("started", now) for m in metas), default=now)
            elapsed = max(end - begun, 1e-3)
            out[name] = {
                "splits_done": done,
                "splits_total": total,
                "rows": rows,
                "rows_per_s": round(rows / elapsed, 1),
                "eta_s": None if finished or not done else elapsed / done * (total - done),
                "done": finished,
            }
            self._figures[name] = out[name]
        return out
