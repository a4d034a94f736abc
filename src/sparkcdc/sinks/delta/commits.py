"""Delta table operations of the sink, each one commit, each idempotent per micro-batch.

Every data commit carries a Delta *transaction identifier* (``txn`` action: ``app_id`` and
``version``), here the pipeline's id and the Spark batch id. Before writing batch N to a table the
sink reads ``DeltaTable.transaction_version(app_id)``; if it is N or more the table already holds
batch N (the run crashed after this commit and Spark replays the batch) and the write is skipped.
Schema changes (create, add columns) are idempotent by content and need no identifier.

A commit that loses a race for its table version (``CommitFailedError``: another writer committed
first, which object storage detects with a conditional PUT) is tried again a few times
(:func:`_once`), each time reading the transaction version anew first: a batch whose commit did
land is never written twice.

Spark's checkpoint has no Delta on its classpath here, so tables are written with delta-rs
(``deltalake``); any Delta reader (Spark with Delta, DuckDB, Polars, pandas) reads them.
"""

from __future__ import annotations

import logging
import time
import weakref
from collections.abc import Callable, Sequence
from functools import partial

import pyarrow as pa
from deltalake import CommitProperties, DeltaTable, Field, write_deltalake
from deltalake.exceptions import CommitFailedError, DeltaError
from deltalake.transaction import AddAction

from sparkcdc.sinks import storage
from sparkcdc.sinks.changes.lake import changelog_schema
from sparkcdc.sinks.changes.latest import OP_COLUMN, ORDER_COLUMN
from sparkcdc.sinks.delta import change_data, log_commit, opened, rewrite
from sparkcdc.sinks.delta.data_files import write_data_file

log = logging.getLogger("sparkcdc.sink")

OPERATION_KEY = log_commit.OPERATION_KEY
COMMIT_ATTEMPTS = 5  # a commit that lost a race for its version, tried again


def open_table(path: str, current: bool = True) -> DeltaTable | None:
    """The Delta table at ``path`` (kept open in this process, :mod:`.opened`; ``current``: as
    :func:`.opened.cached` says); None if there is none."""
    found = opened.cached(path, current)
    if found is not None:
        return found
    options = storage.delta_options(path)
    if not DeltaTable.is_deltatable(path, storage_options=options):
        return None
    return opened.keep(path, DeltaTable(path, storage_options=options))


def table(path: str) -> DeltaTable:
    """The Delta table at ``path``, opened with its lake's storage options."""
    found = opened.cached(path)
    if found is not None:
        return found
    return opened.keep(path, DeltaTable(path, storage_options=storage.delta_options(path)))


# a table object's plain fields as of its version, by the object's id while it lives
_FIELDS: dict[int, tuple[weakref.ref[DeltaTable], int, list[pa.Field]]] = {}


def arrow_fields(table: DeltaTable) -> list[pa.Field]:
    """The table's columns as the sink writes them (:func:`plain_field`)."""
    version, key = table.version(), id(table)
    found = _FIELDS.get(key)
    if found is not None and found[0]() is table and found[1] == version:
        return list(found[2])
    fields = [plain_field(f) for f in pa.schema(table.schema().to_arrow())]
    _FIELDS[key] = (weakref.ref(table, lambda _: _FIELDS.pop(key, None)), version, fields)
    return list(fields)


def plain_field(f: pa.Field) -> pa.Field:
    """delta-rs reports string/binary as their large/view forms and lists with ``element``
    items (or large/view lists); the sink writes the plain ones (``pa.list_``, nullable items)."""
    t = f.type
    if pa.types.is_large_string(t) or pa.types.is_string_view(t):
        t = pa.string()
    elif pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
        t = pa.binary()
    elif pa.types.is_struct(t):
        t = pa.struct([plain_field(t.field(i)) for i in range(t.num_fields)])
    elif _is_list(t):
        t = pa.list_(plain_field(t.value_field).type)
    return pa.field(f.name, t, nullable=True)


def _is_list(t: pa.DataType) -> bool:
    kinds = (pa.types.is_list, pa.types.is_large_list, pa.types.is_list_view,
             pa.types.is_large_list_view)  # fmt: skip
    return any(kind(t) for kind in kinds)


def ensure_replica(
    path: str, columns: Sequence[pa.Field], change_data_feed: bool = True
) -> list[pa.Field]:
    """Create the replica (with Delta's change data feed unless ``change_data_feed`` is false)
    or add the columns it lacks (its properties left as they are); its columns afterwards."""
    table = open_table(path)
    if table is None:
        _create(path, pa.schema(list(columns)), change_data_feed)
        return list(columns)
    have = arrow_fields(table)
    names = {f.name.lower() for f in have}
    missing = [f for f in columns if f.name.lower() not in names]
    if missing:
        table.alter.add_columns([Field.from_arrow(f) for f in missing])
        have += missing
    return have


def ensure_changelog(path: str, columns: Sequence[pa.Field], source: pa.DataType) -> None:
    """Create the change log or widen its before/after structs with new columns."""
    schema = changelog_schema(columns, source)
    table = open_table(path)
    if table is None:
        _create(path, schema)
        return
    after = next(f for f in arrow_fields(table) if f.name == "after").type
    have = {after.field(i).name.lower() for i in range(after.num_fields)}
    if any(f.name.lower() not in have for f in columns):
        write_deltalake(table, schema.empty_table(), mode="append", schema_mode="merge",
                        storage_options=storage.delta_options(path))  # fmt: skip


def _create(path: str, schema: pa.Schema, change_data_feed: bool = False) -> None:
    lake = storage.at(path)
    lake.mkdir(path)
    config = {log_commit.CHECKPOINT_KEY: str(log_commit.CHECKPOINT_EVERY)}
    if change_data_feed:  # protocol writer version 4 (:mod:`.change_data`)
        config[change_data.ENABLE_KEY] = "true"
    DeltaTable.create(path, schema=schema, mode="ignore", configuration=config,
                      storage_options=lake.delta_options())  # fmt: skip


def already_applied(path: str, app_id: str, batch_id: int) -> bool:
    return _holds(path, open_table(path), app_id, batch_id)


def _holds(path: str, table: DeltaTable | None, app_id: str, batch_id: int) -> bool:
    """Whether ``table`` (as it is now) holds batch ``batch_id`` of ``app_id``."""
    if table is None:
        return False
    version = opened.transaction_version(path, table, app_id)
    return version is not None and version >= batch_id


def _commit(app_id: str, batch_id: int, operation: str | None = None) -> CommitProperties:
    """The commit's transaction identifier; ``operation``: what the commit did, where delta-rs
    records another (``sparkcdc.operation`` in the commit info, :mod:`.rewrite`)."""
    return log_commit.properties((app_id, batch_id), operation)


def append_changelog(path: str, rows: pa.Table, app_id: str, batch_id: int) -> bool:
    """Append a change log's ``rows`` of batch ``batch_id``: one data file committed by
    :mod:`.log_commit` where the table's columns are the rows' own, else :func:`append_once`
    (which widens the table); False if this batch was appended before, or ``rows`` is empty
    (the snapshot's rows left out of the change log: ``sink.snapshot_in_changelog``)."""
    if rows.num_rows == 0:
        return False

    def write(found: DeltaTable | None) -> None:
        if (
            found is not None
            and _same_columns(found, rows.schema)
            and log_commit.usable(path, found)
        ):
            adds = [write_data_file(storage.at(path), path, rows)]
            log_commit.commit(path, found, adds, [], (app_id, batch_id))
            return
        found = open_table(path)  # current: delta-rs commits after its version
        _append(path, rows, _commit(app_id, batch_id), found, schema_mode="merge")
        if found is not None:
            opened.committed(path, found.version(), app_id, batch_id)

    return _once(path, app_id, batch_id, write, current=False)


def _same_columns(table: DeltaTable, schema: pa.Schema) -> bool:
    """Whether ``table``'s columns are ``schema``'s, names and types."""
    return [(f.name, f.type) for f in arrow_fields(table)] == [(f.name, f.type) for f in schema]


def append_once(path: str, rows: pa.Table, app_id: str, batch_id: int) -> bool:
    """Append ``rows`` as batch ``batch_id`` (creating the table if there is none); False if
    this batch was appended before."""

    def write(opened: DeltaTable | None) -> None:
        _append(path, rows, _commit(app_id, batch_id), opened, schema_mode="merge")

    return _once(path, app_id, batch_id, write)


def append_replica(path: str, rows: pa.Table, app_id: str, batch_id: int) -> bool:
    """Append rows no replica row shares a key with (see :mod:`.chunk_rows`); False if this batch
    was written before."""
    return _once(path, app_id, batch_id, partial(_append, path, rows, _commit(app_id, batch_id)))


def _append(
    path: str,
    rows: pa.Table,
    commit: CommitProperties,
    opened: DeltaTable | None,
    schema_mode: str | None = None,
) -> None:
    options = storage.delta_options(path)
    target: DeltaTable | str = opened or path  # kept open: moved to the new version
    if schema_mode == "merge":
        write_deltalake(target, rows, mode="append", schema_mode="merge",
                        commit_properties=commit, storage_options=options)  # fmt: skip
    else:
        write_deltalake(target, rows, mode="append", commit_properties=commit,
                        storage_options=options)  # fmt: skip


def commit_files(path: str, adds: list[AddAction], app_id: str, batch_id: int) -> bool:
    """Commit data files already in the table's folder (written elsewhere, in its columns) as
    one append of batch ``batch_id``; False if this batch was committed before."""

    def commit(found: DeltaTable | None) -> None:
        log_commit.commit_files(path, found or table(path), adds, [], (app_id, batch_id))

    return _once(path, app_id, batch_id, commit)


def _once(
    path: str,
    app_id: str,
    batch_id: int,
    write: Callable[[DeltaTable | None], object],
    current: bool = True,
) -> bool:
    """``write`` batch ``batch_id`` to the table at ``path`` (given as kept, :func:`open_table`
    with ``current``; None if there is none yet) unless it holds it; a commit that lost a race
    (``CommitFailedError``) is tried again after reading the table anew, so a batch is written
    once. False if the table held
    the batch. A kept table (:mod:`.opened`) whose log files another writer's cleanup removed
    fails to read (``DeltaError``): it is opened anew, once."""
    reopened = False
    for attempt in range(1, COMMIT_ATTEMPTS + 1):
        found = open_table(path, current)
        try:
            if _holds(path, found, app_id, batch_id):
                return False
            before = found.version() if found is not None else None
            write(found)
            if found is not None and found.version() != before:  # moved to this commit's
                opened.committed(path, found.version(), app_id, batch_id)
            return True
        except CommitFailedError as exc:
            if attempt == COMMIT_ATTEMPTS:
                raise
            log.warning("batch %d: another writer committed to %s first (%s); trying again",
                        batch_id, path, exc)  # fmt: skip
            time.sleep(0.2 * attempt)
        except DeltaError:
            if reopened:
                raise
            reopened = True
            opened.forget(path)
    raise AssertionError("unreachable")


def merge_replica(
    path: str,
    changes: pa.Table,
    key: Sequence[str],
    app_id: str,
    batch_id: int,
    reset: bool = False,
) -> bool:
    """MERGE the latest change per key (``OP_COLUMN`` 'd' deletes, else upserts) as one commit.

    ``reset`` (a TRUNCATE or DROP TABLE in the batch) also deletes every row the changes do not
    touch. False if this batch was merged before.
    """
    return _once(
        path, app_id, batch_id, partial(_merge, path, changes, key, app_id, batch_id, reset)
    )


def _merge(
    path: str,
    changes: pa.Table,
    key: Sequence[str],
    app_id: str,
    batch_id: int,
    reset: bool,
    opened: DeltaTable | None,
) -> None:
    target = opened or table(path)
    commit = _commit(app_id, batch_id)
    if changes.num_rows == 0:
        if reset:
            target.delete(commit_properties=commit)
        return
    txn = (app_id, batch_id)
    if rewrite.upsert(target, path, arrow_fields(target), changes, key, OP_COLUMN, txn, reset):
        return  # the touched files copied on write: no query planned (:mod:`.rewrite`)
    predicate = " AND ".join(f"t.{_quote(k)} = s.{_quote(k)}" for k in key)
    helper = [OP_COLUMN, ORDER_COLUMN]
    merger = target.merge(
        changes,
        predicate,
        source_alias="s",
        target_alias="t",
        merge_schema=False,
        commit_properties=commit,
    )
    merger = (
        merger.when_matched_delete(predicate=f"s.{OP_COLUMN} = 'd'")
        .when_matched_update_all(predicate=f"s.{OP_COLUMN} <> 'd'", except_cols=helper)
        .when_not_matched_insert_all(predicate=f"s.{OP_COLUMN} <> 'd'", except_cols=helper)
    )
    if reset:
        merger = merger.when_not_matched_by_source_delete()
    merger.execute()


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'
