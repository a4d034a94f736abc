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

Only where it is the same: a table with deletion vectors, column mapping, the change data feed,
partitions or data files outside its folder, candidates over :data:`MAX_BYTES`, or a key type
the anti-join cannot match, is left to the MERGE (:func:`upsert` returns False before writing).
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc
from deltalake import DeltaTable

from sparkcdc.sinks import storage
from sparkcdc.sinks.delta import log_commit
from sparkcdc.sinks.delta.data_files import write_data_file

MAX_BYTES = 64 * 1024 * 1024  # the candidates' data files read into memory at most
_ROW = "_sparkcdc_row"
_UNSUPPORTED_CONFIG = ("delta.enableChangeDataFeed", "delta.columnMapping.mode",
                       "delta.enableDeletionVectors")  # fmt: skip


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
    if not _plain(table):
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
    try:
        upserts = changes.filter(pc.not_equal(changes.column(op_column), "d"))
        if all(n in upserts.column_names for n in names):
            upserts = upserts.select(names).cast(schema)
        elif upserts.num_rows:
            return False  # upserts of some columns only: the MERGE keeps the others' values
        else:
            upserts = schema.empty_table()  # deletes given by their key alone
        kept = schema.empty_table()
        if not reset and paths:
            kept = _kept_rows(_read(lake, path, paths, schema), _keys(changes, key_names, schema))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, KeyError):
        return False  # a type the anti-join or the cast cannot take, a key column missing
    rows = pa.concat_tables([kept, upserts])
    sizes = candidates.column("size_bytes").to_pylist()
    removes = [log_commit.Removed(p, int(s)) for p, s in zip(paths, sizes, strict=True)]
    adds = [write_data_file(lake, path, rows)] if rows.num_rows else []
    # committed even with no action: the batch's identifier says the table holds it
    log_commit.commit_files(path, table, adds, removes, txn, "MERGE")
    return True


def _keys(changes: pa.Table, key_names: list[str], schema: pa.Schema) -> pa.Table:
    """The batch's keys, in the replica's key types."""
    return changes.select(key_names).cast(pa.schema([schema.field(n) for n in key_names]))


def _plain(table: DeltaTable) -> bool:
    """No table feature the copy-on-write would have to write as well."""
    config = table.metadata().configuration
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


def _kept_rows(old: pa.Table, keys: pa.Table) -> pa.Table:
    """The rows of ``old`` whose key is none of ``keys`` (in ``old``'s order): a set lookup
    for a one-column key (a tenth of the join's cost on a small file), else an anti-join."""
    names = keys.column_names
    if len(names) == 1:
        found = pc.is_in(old.column(names[0]), value_set=keys.column(0).combine_chunks(),
                          skip_nulls=True)  # fmt: skip
        return old.filter(pc.invert(found))
    numbered = old.select(names).append_column(_ROW, pa.array(range(old.num_rows), pa.int64()))
    left = numbered.join(keys, keys=names, join_type="left anti").column(_ROW)
    return old.take(pc.take(left, pc.sort_indices(left)))
