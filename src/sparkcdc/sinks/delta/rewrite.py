"""The replica's upserts and deletes as a copy-on-write of the data files they touch.

What a MERGE does, without planning a query: delta-rs's MERGE plans a DataFusion query at each
call, about 10 ms even for one changed row, which a micro-batch pays once per changed table
(bench section 9: 300 tables, 300 MERGEs a batch). Copy-on-write as Delta's own MERGE writes it
(no deletion vectors): the data files whose key statistics reach the batch's keys (every file
where the key has none) are read, the rows whose key the batch changes are left out (a set
lookup or an anti-join on the key, null matching nothing, so keys match as the MERGE's
``t.k = s.k`` does), the batch's upserts are added, and the result is written as one new data
file; its add action and the candidates' remove actions are one commit, carrying the batch's
transaction identifier (:mod:`.commits`). A TRUNCATE or DROP in the batch (``reset``) removes
every file. Delta's history names the commit a ``WRITE`` (delta-rs names a commit of given
actions so); its ``sparkcdc.operation`` says ``MERGE``.

A table with the change data feed gets its change data file in the same commit (the rows the
commit drops and adds, as MERGE writes them: :mod:`.change_data`; a reset reads the old rows for
it). Only where it is the same: a table with deletion vectors, column mapping, partitions or data
files outside its folder, the change data feed where the sink cannot write the commit itself
(:func:`.log_commit.usable`), candidates over :data:`MAX_BYTES`, or a key type the lookup cannot
match, is left to the MERGE (:func:`upsert` returns False before writing).
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc
from deltalake import DeltaTable

from sparkcdc.sinks import storage
from sparkcdc.sinks.delta import change_data, log_commit
from sparkcdc.sinks.delta.data_files import write_data_file

MAX_BYTES = 64 * 1024 * 1024  # the candidates' data files read into memory at most
_UNSUPPORTED_CONFIG = ("delta.columnMapping.mode", "delta.enableDeletionVectors")


def upsert(
    table: DeltaTable,
    path: str,
    fields: Sequence[pa.Field],
    changes: pa.Table,
    key: Sequence[str],
    op_column: str,
    txn: tuple[str, int],
    reset: bool,
) -> bool:
    """Apply ``changes`` (the replica's ``fields``, ``op_column`` 'd' deletes, else upserts; one
    row per key) to the table at ``path`` as one commit of the transaction identifier ``txn``
    (app id, batch; :mod:`.log_commit`); False (nothing written) where the MERGE must do it
    (module docstring)."""
    if not _plain(path, table):
        return False
    schema = pa.schema(list(fields))
    names = schema.names
    key_names = [n for k in key for n in names if n.lower() == k.lower()]
    if len(key_names) != len(key):
        return False
    files = pa.table(table.get_add_actions(flatten=False))
    try:
        candidates = files if reset else _candidates(files, changes, key_names)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, KeyError):
        return False  # a key column the changes name otherwise, statistics of another type
    paths = candidates.column("path").to_pylist()
    if any("://" in p or p.startswith("/") for p in paths):
        return False
    if sum(candidates.column("size_bytes").to_pylist()) > MAX_BYTES:
        return False
    lake = storage.at(path)
    feed = change_data.enabled(table.metadata().configuration)
    try:
        upserts = changes.filter(pc.not_equal(changes.column(op_column), "d"))
        if all(n in upserts.column_names for n in names):
            upserts = upserts.select(names).cast(schema)
        elif upserts.num_rows:
            return False  # upserts of some columns only: the MERGE keeps the others' values
        else:
            upserts = schema.empty_table()  # deletes given by their key alone
        kept, dropped = schema.empty_table(), schema.empty_table()
        if paths and (feed or not reset):  # a reset's old rows are read for the feed alone
            old = _read(lake, path, paths, schema)
            kept, dropped = _split(old, None if reset else _keys(changes, key_names, schema))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, KeyError):
        return False  # a type the anti-join or the cast cannot take, a key column missing
    if not reset and dropped.num_rows == upserts.num_rows == 0:
        paths = []  # deletes of keys the table lacks: no file rewritten (read as a change)
    rows = pa.concat_tables([kept, upserts]) if paths else upserts
    sizes = candidates.column("size_bytes").to_pylist()[: len(paths)]
    removes = [log_commit.Removed(p, int(s)) for p, s in zip(paths, sizes, strict=True)]
    adds = [write_data_file(lake, path, rows)] if rows.num_rows else []
    feed_rows = change_data.change_rows(dropped, upserts, key_names) if feed else None
    cdc = []  # the change data feed's file, where the table has it and the commit changes rows
    if feed_rows is not None and feed_rows.num_rows:
        cdc = [change_data.write_change_file(lake, path, feed_rows)]
    # committed even with no action: the batch's identifier says the table holds it
    log_commit.commit_files(path, table, adds, removes, txn, "MERGE", cdc)
    return True


def _keys(changes: pa.Table, key_names: list[str], schema: pa.Schema) -> pa.Table:
    """The batch's keys, in the replica's key types."""
    return changes.select(key_names).cast(pa.schema([schema.field(n) for n in key_names]))


def _split(old: pa.Table, keys: pa.Table | None) -> tuple[pa.Table, pa.Table]:
    """``old``'s rows whose key is none of ``keys`` and the others (each in ``old``'s order;
    ``keys`` None: every row is the batch's): a set lookup for a one-column key (a tenth of a
    join's cost on a small file), else a join (:func:`.change_data.has_key`)."""
    if keys is None:
        return old.schema.empty_table(), old
    changed = change_data.has_key(old, keys, keys.column_names)
    return old.filter(pc.invert(changed)), old.filter(changed)


def _plain(path: str, table: DeltaTable) -> bool:
    """No table feature the copy-on-write would have to write as well; the change data feed
    where the sink writes the commit itself (else delta-rs's MERGE writes the feed)."""
    config = table.metadata().configuration
    if change_data.enabled(config) and not log_commit.usable(path, table):
        return False
    if any(str(config.get(k, "")).lower() not in ("", "false", "none") for k in
           _UNSUPPORTED_CONFIG):  # fmt: skip
        return False
    if table.metadata().partition_columns:
        return False
    features = table.protocol().reader_features or []
    return "deletionVectors" not in features and "columnMapping" not in features


def _candidates(files: pa.Table, changes: pa.Table, key_names: list[str]) -> pa.Table:
    """The data files whose statistics of an integer key column reach the batch's keys (every
    file, where a key column has no such statistics)."""
    if files.num_rows == 0:
        return files
    reach = pa.array([True] * files.num_rows)
    for name in key_names:
        values = changes.column(name)
        if not pa.types.is_integer(values.type) or values.null_count == len(values):
            continue
        try:
            low = files.column("min").combine_chunks().field(name)
            high = files.column("max").combine_chunks().field(name)
        except KeyError:
            continue
        bounds = pc.min_max(values)
        lo, hi = bounds["min"], bounds["max"]
        inside = pc.and_(pc.less_equal(low, hi), pc.greater_equal(high, lo))
        reach = pc.and_(reach, pc.fill_null(inside, True))  # no statistics: a candidate
    return files.filter(reach)


def _read(lake: storage.LakeStorage, path: str, paths: list[str], schema: pa.Schema) -> pa.Table:
    """The rows of the data files ``paths``, in the replica's columns (a column added after
    a file was written reads as null in it)."""
    parts = []
    for name in paths:
        found = lake.read_parquet(f"{path.rstrip('/')}/{name}")
        columns = [
            found.column(f.name).cast(f.type) if f.name in found.column_names
            else pa.nulls(found.num_rows, f.type)
            for f in schema
        ]  # fmt: skip
        parts.append(pa.Table.from_arrays(columns, schema=schema))
    return pa.concat_tables(parts) if parts else schema.empty_table()
