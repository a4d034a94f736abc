"""Snapshot chunks written by their own Spark task as the Parquet files of the Delta tables
(:mod:`sparkcdc.sinks.changes.run_files`), committed by the Delta sink as they are: linked into
the tables' folders (on object storage: uploaded) and added in one commit (:func:`commit`),
while the sink may append the chunks (:class:`~.chunk_rows.AppendBook`). The replica's
statistics (row count, null counts, min and max of integer columns) go into the add actions, as
Delta readers use them to skip files.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence

from deltalake.transaction import AddAction

from sparkcdc.core.schema import TableSchema
from sparkcdc.sinks import storage
from sparkcdc.sinks.changes.run_files import place_file, write_run
from sparkcdc.sinks.delta import commits
from sparkcdc.sinks.delta.file_stats import file_stats, stats_text
from sparkcdc.sinks.port import ChunkFiles, ChunkRef, TableKind
from sparkcdc.snapshot.split_store import SplitResult, SplitStore


def files_of(
    results: Sequence[SplitResult],
    schema: TableSchema,
    store: SplitStore,
    fresh: bool,
    database: str | None = None,
    changelog: bool = True,
) -> ChunkFiles:
    """The run's two files (:func:`~sparkcdc.sinks.changes.run_files.write_run`), the
    replica's with the statistics Delta's add actions carry."""
    return write_run(results, schema, store, fresh, database, changelog, stats=file_stats)


def commit(
    path: str, kind: TableKind, refs: Sequence[ChunkRef], app_id: str, batch_id: int, tag: str
) -> bool:
    """Link (or upload, :func:`place_file`) the ``kind`` files of the chunks' runs (each once)
    into the Delta table at ``path`` and commit them as batch ``batch_id`` (one transaction);
    False if this batch was committed before."""
    if commits.already_applied(path, app_id, batch_id):
        return False
    lake = storage.at(path)
    adds = []
    named: set[str] = set()
    for ref in refs:
        found = ref["files"][kind]
        if found["path"] in named:
            continue  # another chunk of the same run
        named.add(found["path"])
        name = f"part-{uuid.uuid5(uuid.NAMESPACE_URL, tag + '/' + found['path'])}.snappy.parquet"
        place_file(lake, found["path"], path, name)
        adds.append(
            AddAction(name, int(found["size"]), {}, int(time.time() * 1000), True,
                      stats_text(found["stats"]))
        )  # fmt: skip
    return commits.commit_files(path, adds, app_id, batch_id)
