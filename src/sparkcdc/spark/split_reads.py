"""The executor side of the snapshot phase: one Spark task's splits, read, kept and sent.

Flink CDC 2.x's split reader (seed 003) as a Spark task (:class:`~.snapshot.SplitTask`): each
split runs :func:`~sparkcdc.snapshot.scan.scan_split` (the chunk between its watermarks,
corrected with the log of its window) with the task's own server id, and its result is kept in
the :class:`~sparkcdc.snapshot.state.SplitStore` beside the checkpoint before it is sent, so a
replayed task returns exactly what its first attempt read. With ``snapshot_delivery = store``
the chunk goes to Spark as one ``k`` event naming its typed Arrow file and the Delta data files
its task wrote (:mod:`.chunk_files`); with ``rows`` as ``r`` events with JSON row images.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pyarrow as pa

from sparkcdc.core.chunk import KeyColumn, Split
from sparkcdc.core.errors import ConfigError
from sparkcdc.core.event import OP_CHUNK, OP_READ, snapshot_batch
from sparkcdc.core.offset import BinlogOffset
from sparkcdc.core.schema import TableSchema
from sparkcdc.snapshot.scan import scan_split
from sparkcdc.snapshot.state import SplitResult, SplitStore
from sparkcdc.spark import chunk_files
from sparkcdc.spark.options import SourceOptions
from sparkcdc.spark.snapshot import ARROW_BATCH_ROWS, SnapshotPlanner, SplitTask, open_dialect


def read_split_task(options: SourceOptions, task: SplitTask) -> Iterator[pa.RecordBatch]:
    """Executor side: each split of the task from the store, or scanned and stored first.

    A split's files are written in a background thread while the next split is read (both
    release the GIL), and its events are sent once they are written, in the splits' order."""
    from sparkcdc.sources.mysql.window import window_changes

    store = SplitStore(SnapshotPlanner(options).root)
    typed = options.snapshot_delivery == "store"
    dialect = None
    pending: Future[list[pa.RecordBatch]] | None = None
    high: BinlogOffset | None = None  # of the split this task read last: the next one's low
    try:
        with ThreadPoolExecutor(1, thread_name_prefix="sparkcdc-split-files") as writer:
            for raw in task.splits:
                split = Split.from_json(raw)
                meta = task.meta[split.table]
                schema = TableSchema.from_json(meta["schema"])
                keys = [KeyColumn.from_json(k) for k in meta["keys"]]
                result = store.get(split)
                if result is None:
                    if dialect is None:
                        dialect = open_dialect(options)
                    result = scan_split(
                        split,
                        schema,
                        keys,
                        dialect,
                        lambda db, t, lo, hi: window_changes(
                            options.source, db, t, lo, hi, task.server_id
                        ),
                        task=f"task {task.value} pid {os.getpid()}",
                        typed=typed,
                        low=high,
                    )
                    high = result.high
                    job = writer.submit(keep_split, store, result, schema, typed, True)
                else:
                    if ("after" in result.rows.column_names) == typed:
                        raise ConfigError(
                            f"the snapshot folder {store.root} holds chunks of {split.table} "
                            f"read for snapshot_delivery={'rows' if typed else 'store'}; keep "
                            "that option for this checkpoint, or start with a new checkpoint "
                            "and an empty sink.",
                            key="snapshot_delivery",
                        )
                    job = writer.submit(keep_split, store, result, schema, typed, False)
                if pending is not None:
                    yield from pending.result()
                pending = job
            if pending is not None:
                yield from pending.result()
    finally:
        if dialect is not None:
            dialect.close()


def keep_split(
    store: SplitStore, result: SplitResult, schema: TableSchema, typed: bool, new: bool
) -> list[pa.RecordBatch]:
    """Store a split read now (``new``; its Delta data files first, so a finished split has
    them) and make its events."""
    if not typed:
        if new:
            store.put(result)
        return list(_events(result, schema))
    files = chunk_files.files_of(result, schema, store, fresh=new)
    if new:
        store.put(result)
    return [chunk_event(result, schema, store.rows_path(result.split), files)]


def chunk_event(
    result: SplitResult, schema: TableSchema, path: Path, files: dict[str, Any] | None = None
) -> pa.RecordBatch:
    """The one ``k`` event of a chunk kept in the store (:data:`~sparkcdc.core.event.OP_CHUNK`),
    with its Delta data files if the task wrote them (:mod:`.chunk_files`)."""
    ref: dict[str, Any] = {"path": str(path), "rows": result.rows.num_rows}
    if files is not None:
        ref["files"] = files
    text = json.dumps(ref, separators=(",", ":"))
    keys, refs = pa.nulls(1, pa.string()), pa.array([text], pa.string())
    return _batch(keys, refs, schema, result.high, int(result.ended * 1000), OP_CHUNK)


def _events(result: SplitResult, schema: TableSchema) -> Iterator[pa.RecordBatch]:
    rows, ts = result.rows, int(time.time() * 1000)
    for lo in range(0, rows.num_rows, ARROW_BATCH_ROWS):
        part = rows.slice(lo, ARROW_BATCH_ROWS)
        keys, afters = part.column("key").combine_chunks(), part.column("after").combine_chunks()
        yield _batch(keys, afters, schema, result.high, ts, OP_READ)


def _batch(
    keys: pa.Array, afters: pa.Array, schema: TableSchema, high: BinlogOffset, ts: int, op: str
) -> pa.RecordBatch:
    """Snapshot events of ``schema``'s table at the split's high watermark."""
    return snapshot_batch(
        keys,
        afters,
        schema.db,
        schema.table,
        schema.schema_id(),
        server_id=0,
        file=high.file,
        pos=high.pos,
        gtid=high.gtid,
        ts_ms=ts,
        op=op,
    )
