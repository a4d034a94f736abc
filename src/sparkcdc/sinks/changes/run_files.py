"""Snapshot chunks written by their own Spark task as the Parquet files of a table format's tables.

Spark's own writers split a write the same way: each task writes its data files, the driver commits
them in one transaction. Here a split task that read a run of chunks of the initial snapshot
(consecutive splits of one table in the task, :func:`sparkcdc.spark.snapshot.split_task.runs`) also
writes, beside the chunks in the split store, the two files the run becomes in the lake:

    splits/<db.table>/<first>.x<n>.replica.parquet     the typed rows, in the replica's columns
    splits/<db.table>/<first>.x<n>.changelog.parquet   their ``r`` rows: op, before (null),
                                                       after, source (each chunk's split's high
                                                       watermark, its rows numbered by the
                                                       event counter),
                                                       transaction (null)

exactly what the sink would make of the chunks' ``k`` events (:mod:`.chunks`), each of which
names its run's files. Where the tables' columns are the chunks' (:func:`adoptable`), the
format's sink links these files into its tables' folders (on object storage: uploads them,
:func:`place_file`) and commits them as they are (Delta: :mod:`sparkcdc.sinks.delta.chunk_files`;
Iceberg: :mod:`sparkcdc.sinks.iceberg.tables`): the driver encodes nothing, and the tasks
encode while others read. Otherwise it reads each chunk from the store
and writes it as before; the files are then unused. With ``sink.snapshot_in_changelog: false``
the snapshot's rows stay out of the change log: a task writes the replica's file alone.

A run's files are written once every split of it is kept in the store, and its events are sent
after that, so the sink only ever sees whole runs; a replay whose splits were all finished
before keeps the files (written from the same stored rows) and writes only a missing one. One
pair of files per run rather than per chunk: at 8,096-row chunks the files' fixed cost was a
fifth of the encoding, and a table made of a file per chunk reads slowly. The format's
statistics of the replica's file travel in the ``k`` events to the commit (Delta's add actions
carry them). Dictionary encoding is used only for strings
and for the change log's per-chunk constants: for the other columns it made the files larger
and cost twice the CPU.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import get_args

import pyarrow as pa
import pyarrow.parquet as pq

from sparkcdc.core.convert import arrow_schema
from sparkcdc.core.event import TRANSACTION_TYPE, source_type
from sparkcdc.core.json_value import JSONObject
from sparkcdc.core.offset_events import offset_source
from sparkcdc.core.schema import TableSchema
from sparkcdc.sinks import storage
from sparkcdc.sinks.changes.lake import changelog_schema
from sparkcdc.sinks.port import ChunkFiles, ChunkRef, DataFile, TableKind
from sparkcdc.snapshot.split_store import SplitResult, SplitStore

KINDS: tuple[TableKind, ...] = get_args(TableKind)


def write_run(
    results: Sequence[SplitResult],
    schema: TableSchema,
    store: SplitStore,
    fresh: bool,
    database: str | None = None,
    changelog: bool = True,
    columns: pa.Schema | None = None,
    stats: Callable[[pa.Table], JSONObject] | None = None,
) -> ChunkFiles:
    """The two files of a run of chunks (one table's, finished, in the task's order),
    described for their ``k`` events: per kind its path, size and statistics, and the columns.
    A run with a split read now (``fresh``) writes them, replacing any that an attempt which
    crashed before finishing the run left; a run of finished splits (a replay) keeps its own,
    written only if they are missing. ``database``: the rows' ``source.db`` where the table's
    first name part is a schema (:func:`~sparkcdc.core.offset_events.offset_source`). Without
    ``changelog`` (``sink.snapshot_in_changelog: false``) the replica's file alone. ``columns``:
    the replica's column types in the table format (the schema's Arrow types by default);
    ``stats``: the format's statistics of the replica's file (else its row count only)."""
    replica = pa.concat_tables(r.rows for r in results).drop_columns(["key"])
    replica = replica.cast(arrow_schema(schema) if columns is None else columns)
    files: dict[TableKind, DataFile] = {}
    for kind in KINDS if changelog else ("replica",):
        path = run_path(store, results, kind)
        if fresh or not path.exists():
            table = replica if kind == "replica" else _changelog(replica, results, schema, database)
            _write(table, path, dictionary_leaves(table, type(results[0].high).EVENT_COUNTER))
        counted: JSONObject = {"numRecords": replica.num_rows}
        found_stats = stats(replica) if stats is not None and kind == "replica" else counted
        files[kind] = {"path": str(path), "size": path.stat().st_size, "stats": found_stats}
    found: ChunkFiles = {"columns": columns_key(list(replica.schema)), "replica": files["replica"]}
    if changelog:
        found["changelog"] = files["changelog"]
    return found


def run_path(store: SplitStore, results: Sequence[SplitResult], kind: str) -> Path:
    """``<first index>.x<splits>.<kind>.parquet``: named by the run's first split (released
    with it) and its length, so files of another run of the same first split are never taken."""
    return store.data_path(results[0].split, f".x{len(results)}.{kind}.parquet")


def columns_key(columns: list[pa.Field]) -> list[list[str]]:
    """The columns' names and types, as the sink compares them with its tables'."""
    return [[f.name, str(f.type)] for f in columns]


def _changelog(
    replica: pa.Table, results: Sequence[SplitResult], schema: TableSchema, database: str | None
) -> pa.Table:
    """The run's ``r`` rows: each chunk's at its own split's high watermark."""
    n = replica.num_rows
    after = pa.StructArray.from_arrays(
        [c.combine_chunks() for c in replica.columns], fields=list(replica.schema)
    )
    sources = [
        offset_source(r.rows.num_rows, schema.db, schema.table, r.high, int(r.ended * 1000),
                      snapshot=True, database=database)
        for r in results
    ]  # fmt: skip
    source = source_type(type(results[0].high))
    return pa.Table.from_arrays(
        [
            pa.repeat(pa.scalar("r", pa.string()), n),
            pa.nulls(n, after.type),
            after,
            pa.chunked_array(sources, source),
            pa.nulls(n, TRANSACTION_TYPE),
        ],
        schema=changelog_schema(list(replica.schema), source),
    )


def _write(table: pa.Table, path: Path, dictionary: list[str]) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    pq.write_table(table, tmp, compression="snappy", use_dictionary=dictionary)
    os.replace(tmp, path)


def adoptable(refs: Sequence[ChunkRef], columns: list[pa.Field], changelog: bool = True) -> bool:
    """Whether every chunk of ``refs`` (``k`` events) has its files, in ``columns``: the
    replica's, and the change log's unless ``changelog`` is false."""
    want = columns_key(columns)
    return bool(refs) and all(
        "files" in r
        and r["files"]["columns"] == want
        and (not changelog or "changelog" in r["files"])
        for r in refs
    )


def place_file(lake: storage.LakeStorage, source: str, table: str, name: str) -> None:
    """The local file ``source`` as the data file ``name`` of the table at ``table``: linked
    into a folder (:func:`link_file`), copied to object storage (one upload: a file of that name
    an earlier attempt left, never committed, is replaced)."""
    if lake.remote:
        lake.copy_in(source, f"{table}/{name}")
    else:
        link_file(Path(source), Path(table) / name)


def link_file(source: Path, target: Path) -> None:
    """``target`` becomes ``source``'s content: a hard link, a copy across file systems; an
    earlier attempt's file of the same name (never committed) is replaced. Its modification
    time is now: a vacuum counts the age of a file no version holds yet from it
    (:mod:`.upkeep`)."""
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    tmp.unlink(missing_ok=True)
    try:
        os.link(source, tmp)
        os.utime(tmp)
    except OSError:
        shutil.copyfile(source, tmp)
    os.replace(tmp, target)


def dictionary_leaves(table: pa.Table, counter: str | None) -> list[str]:
    """The leaves to dictionary-encode: strings, and in the change log ``op`` and the
    ``source`` leaves a chunk's rows share (all but the event ``counter``)."""
    leaves = _leaves(table.schema)
    out = {name for name, t in leaves if pa.types.is_string(t) or pa.types.is_binary(t)}
    if "op" in table.column_names:
        out |= {"op", *(name for name, _ in leaves if name.startswith("source."))}
        out.discard(f"source.{counter}")
    return sorted(out)


def _leaves(schema: pa.Schema) -> list[tuple[str, pa.DataType]]:
    """Dotted names and types of the leaf columns (as Parquet names them)."""
    out: list[tuple[str, pa.DataType]] = []

    def walk(prefix: str, t: pa.DataType) -> None:
        if pa.types.is_struct(t):
            for i in range(t.num_fields):
                walk(f"{prefix}.{t.field(i).name}", t.field(i).type)
        else:
            out.append((prefix, t))

    for f in schema:
        walk(f.name, f.type)
    return out
