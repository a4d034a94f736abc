"""The executor side of the snapshot phase: one Spark task's splits, read, kept and sent.

Flink CDC 2.x's split reader (seed 003) as a Spark task (:class:`~.planner.SplitTask`): the
task's splits go in runs of consecutive splits of one table (:func:`runs`); a run none of whose
splits is kept yet is read by :func:`~sparkcdc.snapshot.scan.scan_run` in one watermark window
when its key allows, any other split in a window of its own (the chunk between its watermarks,
corrected with the source's back-fill read of its window, as the task's worker). Each result
is kept in the :class:`~sparkcdc.snapshot.split_store.SplitStore` beside the checkpoint before
it is sent, so a replayed task returns exactly what its first attempt read. With
``snapshot_delivery = store`` the chunk goes to Spark as one ``k`` event naming its typed Arrow
file and the sink's data files its task wrote for the run of splits it belongs to
(the sink type's chunk writer, :mod:`sparkcdc.sinks.port`); with ``rows`` as ``r`` events with
JSON row images.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any

import pyarrow as pa

from sparkcdc.core.chunk import KeyColumn, Split
from sparkcdc.core.errors import ConfigError
from sparkcdc.core.event import Change
from sparkcdc.core.offset import Offset
from sparkcdc.core.offset_events import chunk_event, snapshot_batch
from sparkcdc.core.schema import TableSchema
from sparkcdc.sinks.port import ChunkFiles, ChunkRef, ChunkWriter
from sparkcdc.sinks.registry import chunk_writer
from sparkcdc.snapshot.captured import captured_result
from sparkcdc.snapshot.dialect import SnapshotDialect
from sparkcdc.snapshot.scan import joinable, scan_run
from sparkcdc.snapshot.split_store import SplitResult, SplitStore
from sparkcdc.spark.snapshot.planner import (
    ARROW_BATCH_ROWS,
    SnapshotPlanner,
    SplitTask,
)
from sparkcdc.spark.stream.options import SourceOptions

RUN_ROWS = 131072  # rows of the splits one pair of Delta data files holds (see runs)


def read_split_task(options: SourceOptions, task: SplitTask) -> Iterator[pa.RecordBatch]:
    """Executor side: each split of the task from the store, or scanned and stored first.

    The splits go in runs (:func:`runs`); a run's Delta data files are written once all its
    splits are kept, in a background thread while the next run is read (both release the GIL),
    and its events are sent once they are written, in the splits' order."""
    store = SplitStore(SnapshotPlanner(options).root, options.kind.offsets)
    typed = options.snapshot_delivery == "store"
    database = options.source.settings.source_database  # source.db of schema-named tables
    reader = _Reader(options, task, typed)
    files = chunk_writer(options.sink_type)  # the sink's files of each run, or None
    pending: list[Future[Any]] = []  # the last run's jobs: its splits kept, then its events
    try:
        with ThreadPoolExecutor(1, thread_name_prefix="sparkcdc-split-files") as writer:
            for run in runs(task.splits, options.source.snapshot.chunk_size):
                meta = task.meta[run[0].table]
                schema, keys = meta.schema, list(meta.keys)
                found = [store.get(split) for split in run]
                for split, result in zip(run, found, strict=True):
                    if result is not None and ("after" in result.rows.column_names) == typed:
                        raise ConfigError(
                            f"the snapshot folder {store.root} holds chunks of {split.table} "
                            f"read for snapshot_delivery={'rows' if typed else 'store'}; keep "
                            "that option for this checkpoint, or start with a new checkpoint "
                            "and an empty sink.",
                            key="snapshot_delivery",
                        )
                jobs: list[Future[Any]] = []
                keep = partial(_kept, jobs, writer, store)  # each split as soon as it is read
                read = reader.read(run, found, schema, keys, keep)
                results = [
                    read[s.index] if r is None else r for s, r in zip(run, found, strict=True)
                ]
                jobs.append(
                    writer.submit(
                        keep_run,
                        store,
                        results,
                        options.source.capture.schema(schema),
                        typed,
                        bool(read),
                        database,
                        files,
                        options.snapshot_in_changelog,
                    )  # fmt: skip
                )
                yield from _sent(pending)
                pending = jobs
            yield from _sent(pending)
    finally:
        reader.close()


def _kept(
    jobs: list[Future[Any]], writer: ThreadPoolExecutor, store: SplitStore, result: SplitResult
) -> None:
    jobs.append(writer.submit(store.put, result))


class _Reader:
    """The task's reads: a run of splits none of which is kept is read in one window when
    :func:`~sparkcdc.snapshot.scan.joinable` (typed rows only), any other split by itself; each
    read's low watermark is the high watermark of the task's read before it."""

    def __init__(self, options: SourceOptions, task: SplitTask, typed: bool) -> None:
        self.options, self.task, self.typed = options, task, typed
        self.source = options.open_source()
        self.dialect: SnapshotDialect | None = None
        self.high: Offset | None = None
        self.name = f"task {task.value} pid {os.getpid()}"
        self.capture = options.source.capture

    def read(
        self,
        run: list[Split],
        found: list[SplitResult | None],
        schema: TableSchema,
        keys: list[KeyColumn],
        kept: Callable[[SplitResult], None],
    ) -> dict[int, SplitResult]:
        """The run's splits missing from ``found``, read now (by split index), each passed to
        ``kept`` as soon as it is read."""
        missing = [split for split, result in zip(run, found, strict=True) if result is None]
        if not missing:
            return {}
        if self.dialect is None:
            self.dialect = self.source.chunks(self.task.pin)
        whole = self.typed and len(missing) == len(run) and joinable(run, schema, keys)
        read: list[SplitResult] = []
        for group in [run] if whole else [[split] for split in missing]:
            scanned = scan_run(group, schema, keys, self.dialect, self._window,
                               task=self.name, typed=self.typed, low=self.high)  # fmt: skip
            read += [captured_result(self.capture, schema, r) for r in scanned]
            self.high = read[-1].high
            for result in read[-len(group) :]:
                kept(result)
        return {r.split.index: r for r in read}

    def _window(self, db: str, table: str, lo: Offset, hi: Offset) -> list[Change]:
        return self.source.back_fill(db, table, lo, hi, self.task.worker)

    def close(self) -> None:
        if self.dialect is not None:
            self.dialect.close()


def runs(splits: Sequence[Split], chunk_size: int) -> list[list[Split]]:
    """A task's splits in runs: consecutive splits of one table, ``RUN_ROWS / chunk_size`` of
    them at most. A run is the unit of the task's Delta data files
    (:mod:`sparkcdc.sinks.delta.chunk_files`): one pair of files per run instead of per chunk costs
    less to encode and leaves the tables fewer, larger files. A run's files are written while the
    next run is read, except the last run's, which the task's end waits for: the last run is cut in
    halves (16 splits: 8, 4, 2, 1, 1). The runs depend on the task's splits only, so a replayed
    task has the same."""
    size = max(1, RUN_ROWS // max(1, chunk_size))
    out: list[list[Split]] = []
    for split in splits:
        if out and out[-1][0].table == split.table and len(out[-1]) < size:
            out[-1].append(split)
        else:
            out.append([split])
    last = out.pop() if out else []
    while len(last) > 1:  # halved: the files written after the task's last read are few
        half = (len(last) + 1) // 2
        out.append(last[:half])
        last = last[half:]
    return out + ([last] if last else [])


def _sent(jobs: list[Future[Any]]) -> Iterator[pa.RecordBatch]:
    """A run's events, once its splits are kept and its files written (errors raised here)."""
    for job in jobs[:-1]:
        job.result()
    if jobs:
        yield from jobs[-1].result()


def keep_run(
    store: SplitStore,
    results: list[SplitResult],
    schema: TableSchema,
    typed: bool,
    fresh: bool,
    database: str | None = None,
    write_files: ChunkWriter | None = None,
    changelog: bool = True,
) -> list[pa.RecordBatch]:
    """A run's events; with typed chunks and a sink's ``write_files``, the sink's data files
    are written first (``fresh``: a split of the run was read now; else they are kept if an
    earlier attempt wrote them). ``database``: the events' ``source.db`` where the table's
    first name part is a schema. ``changelog``: the sink's change-log file too."""
    if not typed:
        return [event for result in results for event in _events(result, schema, database)]
    files = (
        None
        if write_files is None
        else write_files(results, schema, store, fresh, database, changelog=changelog)
    )
    return [kept_chunk_event(r, schema, store.rows_path(r.split), files, database)
            for r in results]  # fmt: skip


def kept_chunk_event(
    result: SplitResult,
    schema: TableSchema,
    path: Path,
    files: ChunkFiles | None = None,
    database: str | None = None,
) -> pa.RecordBatch:
    """The one ``k`` event of a split's chunk kept in the store, at its high watermark, with
    its sink data files if the task wrote them (:class:`sparkcdc.sinks.port.ChunkWriter`)."""
    ref: ChunkRef = {"path": str(path), "rows": result.rows.num_rows}
    if files is not None:
        ref["files"] = files
    return chunk_event(
        ref, schema.db, schema.table, schema.schema_id(), result.high, int(result.ended * 1000),
        database,
    )  # fmt: skip


def _events(
    result: SplitResult, schema: TableSchema, database: str | None
) -> Iterator[pa.RecordBatch]:
    """A split's rows as ``r`` events with JSON row images, at its high watermark."""
    rows, ts = result.rows, int(time.time() * 1000)
    for lo in range(0, rows.num_rows, ARROW_BATCH_ROWS):
        part = rows.slice(lo, ARROW_BATCH_ROWS)
        keys, afters = part.column("key").combine_chunks(), part.column("after").combine_chunks()
        yield snapshot_batch(
            keys, afters, schema.db, schema.table, schema.schema_id(), result.high, ts,
            database=database,
        )  # fmt: skip
