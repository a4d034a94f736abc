"""History tables in Delta (``sink.history``): ``<lake>/<db>/<t>__history`` beside the replica,
its versions computed by :mod:`sparkcdc.sinks.changes.history`.

Written after the table's change log and replica in each micro-batch (the versions follow the
changes the replica took, snapshot chunks read as ``r`` rows included), as one commit carrying
the batch's transaction identifier like theirs: a batch replayed after a crash between the
replica's commit and this one writes the history alone, and a replay after this one writes
nothing (:mod:`.commits`). The commit is the replica's copy-on-write upsert
(:mod:`.rewrite`, delta-rs's MERGE where it must) keyed on the table's key and
``__start_position``; a history table has no change data feed. It gains the columns the replica
gains and takes the types the replica is retyped to; a column dropped from the replica stays
(earlier versions hold its values; later ones hold null), as in the change log. Versions hold
the images as the change log does: a column added holds null in the versions of changes before
it, even when its ALTER gave the replica's rows a default in the same batch.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from sparkcdc.core.errors import SinkError
from sparkcdc.core.history_spec import HistorySpec
from sparkcdc.core.table_name import TableName
from sparkcdc.sinks.changes import history_plan
from sparkcdc.sinks.changes.history import (
    HISTORY_SUFFIX,
    START_POSITION,
    history_schema,
)
from sparkcdc.sinks.changes.history_plan import HistoryBatch
from sparkcdc.sinks.changes.latest import OP_COLUMN, ORDER_COLUMN
from sparkcdc.sinks.delta import commits, reshape
from sparkcdc.sinks.storage import LakeStorage


def history_path(lake: LakeStorage, name: TableName) -> str:
    """Where the history table of ``name`` is: ``<lake>/<db>/<t>__history``."""
    return lake.join(name[0], f"{name[1]}{HISTORY_SUFFIX}")


def write_history(
    lake: LakeStorage, spec: HistorySpec, batch: HistoryBatch, app_id: str, batch_id: int
) -> bool:
    """Write the versions ``batch`` opens, closes or changes to its table's history table as
    batch ``batch_id`` of ``app_id`` (module docstring); False if the table keeps no history,
    holds this batch already, or the batch changes no version."""
    found = history_plan.table_history(spec, batch)
    if found is None:
        return False
    path = history_path(lake, batch.name)
    if commits.already_applied(path, app_id, batch_id):
        return False
    label = str(batch.name)
    try:
        schema = _ensure(path, batch.columns)
        rows, key = history_plan.batch_versions(
            batch, found, schema, lambda key: _open_versions(path, schema, batch, key)
        )
        if rows.num_rows == 0:
            return False
        n = rows.num_rows
        changes = rows.append_column(OP_COLUMN, pa.repeat(pa.scalar("u"), n)).append_column(
            ORDER_COLUMN, pa.repeat(pa.scalar(0, pa.int64()), n)
        )
        return commits.merge_replica(path, changes, [*key, START_POSITION], app_id, batch_id)
    except SinkError:
        raise
    except Exception as exc:
        raise SinkError(
            f"writing batch {batch_id} of the history of {label} to Delta failed: {exc}",
            table=label,
        ) from exc


def _ensure(path: str, columns: list[pa.Field]) -> pa.Schema:
    """Create the history table, or give it the replica's new columns and types; its columns."""
    table = commits.open_table(path)
    if table is None:
        return pa.schema(commits.ensure_replica(path, history_schema(columns), False))
    held = commits.arrow_fields(table)
    retyped = history_plan.retyped_columns(held, columns)
    if retyped:
        held = reshape.retype_replica(path, retyped)
    missing = history_plan.missing_columns(held, columns)
    if missing:  # added after the version's columns
        held = commits.ensure_replica(path, missing, False)
    return pa.schema(held)


def _open_versions(path: str, schema: pa.Schema, batch: HistoryBatch, key: list[str]) -> pa.Table:
    """The open versions of the keys ``batch`` touches (of every key after a TRUNCATE)."""
    table = commits.open_table(path)
    if table is None:
        return schema.empty_table()
    # no filter on __current read by the files: their boolean statistics skip every file
    wanted = None
    keys = None if batch.closes_all else history_plan.touched_keys(batch, key)
    if keys is not None:
        if keys.num_rows == 0:
            return schema.empty_table()
        first = keys.column(key[0]).cast(schema.field(key[0]).type)
        wanted = ds.field(key[0]).isin(pc.unique(first))
    found = table.to_pyarrow_dataset().to_table(filter=wanted)
    found = pa.Table.from_arrays(
        [found.column(f.name).cast(f.type) if f.name in found.column_names
         else pa.nulls(found.num_rows, f.type) for f in schema], schema=schema,
    )  # fmt: skip
    return history_plan.open_of(found, keys)
