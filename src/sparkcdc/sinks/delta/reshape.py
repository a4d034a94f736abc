"""Columns of a Delta table given new types or dropped: a rewrite of the table as one version.

A source's ``ALTER TABLE t MODIFY id BIGINT`` must turn the replica's ``int32`` column into
``int64`` before values over 2^31 arrive, and a column the source drops may be dropped from the
replica. delta-rs has neither (``DeltaTable.alter`` adds columns, constraints and properties),
and its append with ``schema_mode="merge"`` casts new values to the table's types (an int64 to
the table's int32, silently). So the table is rewritten: its rows read as a stream of record
batches (never the whole table in memory), each cast exactly (``safe``) to the new columns or
left without the dropped ones, and written by ``write_deltalake`` as an overwrite of rows and
schema, one commit. That commit keeps what the sink depends on: the transaction identifiers of
each app id (the exactly-once of :mod:`.commits`: an overwrite removes no ``txn``), the table's
id and configuration (``delta.checkpointInterval``; delta-rs carries them into the new
``metaData``) and its history (the earlier versions' files are only marked removed). A type
that needs a table feature gains it (a timestamp without time zone: ``timestampNtz``).

delta-rs would commit an overwrite on top of a version another writer made after the rows were
read, and keep that writer's files (a compaction's: every row twice), so the commit is allowed no
retry (``max_commit_retries=0``): the rewrite is made again from the new version. The table
object written is the one kept open (:mod:`.opened`), which delta-rs moves to the new version:
:func:`.commits.arrow_fields` reports the new types from then on.

Idempotent by content: a table whose columns have the types already (or lack the dropped ones)
is not written. A value the new type cannot hold stops the rewrite before its commit with a
``ValueError`` naming the column (:class:`UnfitValue`); nothing is committed (the data files
written until then are left for vacuum).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from functools import partial

import pyarrow as pa
import pyarrow.dataset as ds
from deltalake import CommitProperties, write_deltalake
from deltalake.exceptions import CommitFailedError

from sparkcdc.sinks import storage
from sparkcdc.sinks.delta import commits, log_commit, opened

log = logging.getLogger("sparkcdc.sink")

IMAGES = ("before", "after")  # the change log's structs of the replica's columns
BATCH_ROWS = 32_768  # rows read and cast at a time; one data file read ahead, a few batches
RETYPE = "RETYPE"  # the commits' ``sparkcdc.operation`` (Delta names them WRITE)
DROP_COLUMNS = "DROP COLUMNS"

Reshape = Callable[[pa.Schema], pa.Schema]  # the table's columns -> the rewrite's


class UnfitValue(ValueError):
    """A value of the table the new type of its column cannot hold (the column named)."""


def retype_replica(path: str, fields: Sequence[pa.Field]) -> list[pa.Field]:
    """Give the replica's columns named in ``fields`` their types (the others named are not the
    replica's: left out); its columns afterwards (none: there is no replica)."""
    _rewrite(path, partial(_retyped, _types(fields)), RETYPE)
    return _columns(path)


def retype_changelog(path: str, fields: Sequence[pa.Field]) -> None:
    """Give the fields of the change log's ``before`` and ``after`` structs named in ``fields``
    their types (the others named are not the structs': left out)."""
    _rewrite(path, partial(_images_retyped, _types(fields)), RETYPE)


def drop_replica_columns(path: str, names: Sequence[str]) -> list[pa.Field]:
    """Remove the columns ``names`` from the replica; its columns afterwards."""
    gone = {n.lower() for n in names}
    _rewrite(path, lambda schema: pa.schema([f for f in schema if f.name.lower() not in gone]),
             DROP_COLUMNS)  # fmt: skip
    return _columns(path)


def _columns(path: str) -> list[pa.Field]:
    table = commits.open_table(path)
    return [] if table is None else commits.arrow_fields(table)


def _types(fields: Sequence[pa.Field]) -> dict[str, pa.DataType]:
    """The new types by lowercase column name, in the forms the sink writes."""
    return {f.name.lower(): commits.plain_field(f).type for f in fields}


def _with_types(fields: Sequence[pa.Field], types: Mapping[str, pa.DataType]) -> list[pa.Field]:
    return [f.with_type(types.get(f.name.lower(), f.type)) for f in fields]


def _retyped(types: Mapping[str, pa.DataType], schema: pa.Schema) -> pa.Schema:
    return pa.schema(_with_types(list(schema), types))


def _images_retyped(types: Mapping[str, pa.DataType], schema: pa.Schema) -> pa.Schema:
    return pa.schema([_image_retyped(types, f) for f in schema])


def _image_retyped(types: Mapping[str, pa.DataType], column: pa.Field) -> pa.Field:
    if column.name not in IMAGES or not pa.types.is_struct(column.type):
        return column
    inner = [column.type.field(i) for i in range(column.type.num_fields)]
    return column.with_type(pa.struct(_with_types(inner, types)))


def _rewrite(path: str, reshape: Reshape, operation: str) -> bool:
    """Rewrite the table at ``path`` in the columns ``reshape`` makes of its own, as one commit
    on the version its rows were read at (module docstring); False where they are its columns
    already, or there is no table."""
    for attempt in range(1, commits.COMMIT_ATTEMPTS + 1):
        table = commits.open_table(path)  # current: the commit follows the version read
        if table is None:
            return False
        dataset = table.to_pyarrow_dataset()
        schema = reshape(dataset.schema)
        if _plain(schema) == _plain(dataset.schema):
            return False
        rows = _CastRows(path, dataset, schema)
        done = CommitProperties(custom_metadata={log_commit.OPERATION_KEY: operation},
                                max_commit_retries=0)  # fmt: skip
        try:
            write_deltalake(table, pa.RecordBatchReader.from_batches(schema, iter(rows)),
                            mode="overwrite", schema_mode="overwrite", commit_properties=done,
                            storage_options=storage.delta_options(path))  # fmt: skip
        except CommitFailedError:
            if attempt == commits.COMMIT_ATTEMPTS:
                raise
            log.warning("another writer committed to %s first; rewriting it again", path)
            opened.forget(path)
            time.sleep(0.2 * attempt)
            continue
        except Exception:
            if rows.unfit is not None:
                raise rows.unfit from None  # delta-rs's text holds the Python traceback
            raise
        opened.keep(path, table)  # moved to the rewrite's version, schema and all
        return True
    raise AssertionError("unreachable")


def _plain(schema: pa.Schema) -> list[pa.Field]:
    return [commits.plain_field(f) for f in schema]


class _CastRows:
    """The rows of ``dataset`` in ``schema``, batch by batch; the first value that does not fit
    its new type is kept as :attr:`unfit` (and raised into the writer, which stops)."""

    def __init__(self, path: str, dataset: ds.Dataset, schema: pa.Schema) -> None:
        self.path, self.dataset, self.schema = path, dataset, schema
        self.unfit: UnfitValue | None = None

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        batches = self.dataset.to_batches(columns=self.schema.names, batch_size=BATCH_ROWS,
                                          batch_readahead=4, fragment_readahead=1)  # fmt: skip
        for batch in batches:
            try:
                yield pa.RecordBatch.from_arrays(
                    [self._cast(batch.column(f.name), f) for f in self.schema], schema=self.schema
                )
            except UnfitValue as exc:
                self.unfit = exc
                raise

    def _cast(self, values: pa.Array, field: pa.Field) -> pa.Array:
        try:
            return values.cast(field.type, safe=True)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            name, new = _unfit(values, field)
            reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise UnfitValue(f"a value of column {name} of {self.path} does not fit its new "
                             f"type {new} ({reason})") from None  # fmt: skip


def _unfit(values: pa.Array, field: pa.Field) -> tuple[str, pa.DataType]:
    """The column whose cast to ``field`` fails (a struct's field as ``struct.field``) and its
    new type."""
    if pa.types.is_struct(field.type) and pa.types.is_struct(values.type):
        for inner in (field.type.field(i) for i in range(field.type.num_fields)):
            try:
                values.field(inner.name).cast(inner.type, safe=True)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, KeyError):
                return f"{field.name}.{inner.name}", inner.type
    return field.name, field.type
