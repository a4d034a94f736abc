"""The snapshot phase of the change stream (``startup: initial`` / ``snapshot``), on the driver.

Flink CDC 2.x's parallel snapshot (seed 003) on Spark's micro-batches. The stream's offsets
start in the snapshot phase: :class:`~sparkcdc.spark.offsets.SnapshotOffset` (the tables, the
one being split and its splitter's state, the batch's split groups, the tables' metas and the
tables first seen in the batch).

- ``latestOffset`` (driver) cuts the next splits with the :class:`ChunkSplitter` (lazily, one
  micro-batch at a time, so a growing table never yields a giant last chunk) and deals them
  into ``parallelism`` groups of consecutive splits; each group is one Spark task
  (:class:`SplitTask`) that reads its splits one after another; its worker number picks the
  source's own means for the watermark-window log reads (MySQL: a server id of its own).
- ``read`` (executor, :mod:`.split_task`) runs ``scan_run`` per split (or run of splits), keeps
  the result in the split store beside the checkpoint and emits the rows as ``op = 'r'`` events; a
  replayed task returns the stored rows, so replays are exact. With ``snapshot_delivery = store``
  the chunk is read as typed columns and emitted as one ``op = 'k'`` event naming its file in the
  store: the rows go from the store to the sink as Arrow, never as JSON nor through the JVM. The
  task also writes the chunk's Delta data files there (:mod:`sparkcdc.sinks.delta.chunk_files`), in
  a thread of its own while it reads the next run of splits, so the sink commits what the tasks
  encoded.
- Where the source pins a view of the database (:meth:`~sparkcdc.sources.port.Source.pin_snapshot`:
  PostgreSQL's exported snapshot), the driver holds one pin from the first table it plans until
  the phase ends, and every task reads in it, so no chunk has a window to correct; a restarted
  driver pins anew, and the splits read then carry the new pin's point. A table's schema is
  then the one the pin gives (:meth:`~sparkcdc.sources.port.PinHolder.schema`): as the view
  sees it, which is where the source's log reader starts from, so a DDL made while the snapshot
  runs is judged from the log like any later one.
- When no split is left, the hand-off is written from the finished splits' high watermarks and
  the next offset is an ordinary log offset: the smallest high watermark. The log reader from
  there applies :class:`~sparkcdc.snapshot.handoff.HandoffFilter` until the largest.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from pyspark.sql.datasource import InputPartition

from sparkcdc.core.chunk import KeyColumn, Split
from sparkcdc.core.errors import ConfigError, TableWithoutKey
from sparkcdc.core.logs import counted
from sparkcdc.core.schema import TableSchema
from sparkcdc.core.table_name import TableName
from sparkcdc.snapshot.dialect import SnapshotDialect
from sparkcdc.snapshot.handoff import Handoff, TableHandoff
from sparkcdc.snapshot.split_store import SplitStore
from sparkcdc.snapshot.splitter import ChunkSplitter, SplitterSettings
from sparkcdc.sources.port import PinHolder, SnapshotPin
from sparkcdc.spark.offsets import SnapshotOffset, SparkOffset, StreamOffset, TableMeta
from sparkcdc.spark.stream.options import SourceOptions

log = logging.getLogger("sparkcdc.snapshot")

ARROW_BATCH_ROWS = 65536
HANDOFF_FILE = "handoff.json"


class SplitTask(InputPartition):
    """One Spark task of the snapshot: splits read in turn by worker ``worker`` (its number
    among the batch's tasks; the source's means for window reads, such as a server id).

    ``head`` (Arrow IPC stream bytes) holds events the task sends before its chunks: the
    schema announcements of the tables starting in its batch go with the first task rather
    than in a task of their own, which would hold one of Spark's task slots while the split
    tasks wait for it (with as many split tasks as slots, one of them started that much later).
    """

    def __init__(
        self,
        group: int,
        splits: Sequence[Split],
        meta: Mapping[str, TableMeta],
        worker: int,
        head: bytes = b"",
        pin: SnapshotPin | None = None,
    ):
        super().__init__(group)
        self.splits = splits
        self.meta = meta
        self.worker = worker
        self.head = head
        self.pin = pin

    def __repr__(self) -> str:
        return f"SplitTask({len(self.splits)} splits, worker {self.worker})"


def open_dialect(options: SourceOptions) -> SnapshotDialect:
    """The source's chunk dialect (a context manager)."""
    return options.open_source().chunks()


def load_table(options: SourceOptions, name: str) -> TableSchema:
    """The schema of ``db.table``; a table without a primary key is keyed by its
    ``key_columns``, else by its ``chunk_key_columns``, else refused with a sentence."""
    src = options.source
    with options.open_source().catalog() as cat:
        try:
            return cat.load_schema(*TableName.parse(name), src.row_keys.get(name, ()))
        except TableWithoutKey:
            raise ConfigError(
                f"the table {name} has no primary key to cut its snapshot into chunks; name "
                f"a unique column in source.snapshot.chunk_key_columns (e.g. {{{name}: id}}).",
                key="source.snapshot.chunk_key_columns",
            ) from None


def table_meta(
    options: SourceOptions, dialect: SnapshotDialect, name: str, schema: TableSchema | None = None
) -> TableMeta:
    """The schema (``schema``, else the catalog's now) and chunk key of ``db.table`` at the
    start of its snapshot."""
    schema = schema or load_table(options, name)
    names = options.source.snapshot.chunk_key_columns.get(name) or schema.key
    return TableMeta(schema, tuple(dialect.key_columns(schema.db, schema.table, names)))


class SnapshotPlanner:
    """Driver side: the snapshot offsets (see the module docstring)."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        snap = options.source.snapshot
        self.settings = SplitterSettings.of(snap)
        self.store = SplitStore(self.root, options.kind.offsets)
        self._holder: PinHolder | None = None
        self._pinned = False  # asked the source for a pin

    @property
    def root(self) -> str:
        found = self.options.snapshot_dir
        return found or str(Path(self.options.schema_history).parent / "snapshot")

    @property
    def handoff_path(self) -> Path:
        return Path(self.root) / HANDOFF_FILE

    def initial(self, tables: list[str]) -> SnapshotOffset:
        return SnapshotOffset(tuple(tables))

    def next(self, start: SnapshotOffset) -> SparkOffset:
        """The offset after ``start``: the next splits, or the first log offset."""
        tables, current, state = start.tables, start.current, start.splitter
        meta: dict[str, TableMeta] = {}
        if current < len(tables) and tables[current] in start.meta:
            meta[tables[current]] = start.meta[tables[current]]
        snap = self.options.source.snapshot
        want = snap.parallelism * max(1, snap.batch_rows // snap.chunk_size)
        splits: list[Split] = []
        announce: list[str] = []
        with open_dialect(self.options) as dialect:
            while len(splits) < want and current < len(tables):
                name = tables[current]
                if state is None:
                    meta[name] = self._table_meta(dialect, name)
                    announce.append(name)
                splitter = ChunkSplitter(dialect, name, meta[name].keys, self.settings, state)
                if state is None:
                    _log_plan(name, splitter, snap.chunk_size)
                splits += splitter.take(want - len(splits))
                state = None if splitter.done else splitter.state
                if splitter.done:
                    meta[name] = replace(meta[name], splits=splitter.state.index)
                    current += 1
                else:
                    meta[name] = replace(meta[name], estimate=splitter.estimated_splits)
        if not splits:
            return self.finish(list(tables))
        groups: list[list[Split]] = [[] for _ in range(snap.parallelism)]
        for i, split in enumerate(splits):  # consecutive splits: a run's files hold a key range
            groups[i * len(groups) // len(splits)].append(split)
        return SnapshotOffset(
            tables=tables,
            current=current,
            splitter=state,
            batch=start.batch + 1,
            groups=tuple(tuple(g) for g in groups if g),
            meta=meta,
            announce=tuple(announce),
        )

    def finish(self, tables: list[str]) -> StreamOffset:
        """Write the hand-off from the finished splits; the log starts at the lowest mark."""
        handoff = Handoff()
        for name in tables:
            metas = self.store.finished(name)
            if not metas:
                continue
            handoff.tables[name] = TableHandoff(
                [KeyColumn.from_json(k) for k in metas[0].get("keys", [])],
                [tuple(m["split"]["lo"] or ()) for m in metas[1:]],  # all but the first bounded
                [self.store.offsets.from_json(m["high"]) for m in metas],
                list(metas[0].get("row_key", [])),
            )
        handoff.save(self.handoff_path)
        self.close()
        lowest = handoff.lowest
        if lowest is None:
            with open_dialect(self.options) as dialect:
                lowest = dialect.watermark()
        log.info(
            "snapshot finished (%s); streaming the log from %s, hand-off until %s",
            counted(len(handoff.tables), "table"),
            lowest,
            handoff.highest,
        )
        return StreamOffset(lowest.to_json())

    def partitions(self, end: SnapshotOffset) -> list[SplitTask]:
        pin = self.pin()
        return [SplitTask(i, group, end.meta, i, pin=pin) for i, group in enumerate(end.groups)]

    def pin(self) -> SnapshotPin | None:
        """The view every split task reads in (None: the source has none, its chunks are read
        between watermarks)."""
        holder = self.holder()
        return None if holder is None else holder.pin

    def holder(self) -> PinHolder | None:
        """The pinned view's holder, pinned on first use; the source may record the tables as
        the view sees them in the schema history, for its log reader that starts there."""
        if not self._pinned:
            self._pinned = True
            source = self.options.open_source()
            self._holder = source.pin_snapshot(self.options.schema_history)
        return self._holder

    def _table_meta(self, dialect: SnapshotDialect, name: str) -> TableMeta:
        """:func:`table_meta` of a table whose snapshot starts now; where the source keeps the
        schema the snapshot reads in its schema history (no pin), kept there."""
        pinned = self._pinned_schema(name)
        source = self.options.open_source()
        if pinned is not None or not source.records_snapshot_schemas:
            return table_meta(self.options, dialect, name, pinned)
        before = dialect.low_watermark()  # at or before any chunk's watermark
        meta = table_meta(self.options, dialect, name)
        after = dialect.watermark()
        source.record_snapshot_schema(self.options.schema_history, before, after, meta.schema)
        return meta

    def _pinned_schema(self, name: str) -> TableSchema | None:
        """The schema the pinned view reads ``name`` with (None: no view, the catalog's)."""
        holder = self.holder()
        return None if holder is None else holder.schema(name)

    def close(self) -> None:
        """Let the pinned view go (the phase ended, or the stream stops)."""
        holder, self._holder, self._pinned = self._holder, None, False
        if holder is not None:
            holder.close()

    def release(self, end: SnapshotOffset) -> tuple[Split, ...]:
        """The batch ending at ``end`` was committed: drop its rows, return its splits."""
        for split in end.splits:
            self.store.release(split)
        return end.splits


def _log_plan(name: str, splitter: ChunkSplitter, chunk_size: int) -> None:
    n, state = splitter.estimated_splits, splitter.state
    way = "evenly by key arithmetic" if state.mode == "even" else "by key queries"
    log.info(
        "snapshot of %s: ~%d rows, ~%d chunk%s of %d rows (cut %s)",
        name, state.rows, n, "" if n == 1 else "s", chunk_size, way, extra={"table": name},
    )  # fmt: skip
