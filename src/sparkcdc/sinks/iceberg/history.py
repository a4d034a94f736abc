"""History tables in Iceberg (``sink.history``): ``<db>.<t>__history`` beside the replica, its
versions computed by :mod:`sparkcdc.sinks.changes.history`.

Written after the table's change log and replica in each micro-batch, as one transaction of the
replica's kind (:func:`.tables.upsert_once`: the versions' rows deleted by the table's key and
``__start_position``, then appended) whose snapshot summary and table property carry the batch,
so a replay after a crash between the replica's commit and this one writes the history alone,
and one after it writes nothing. It gains the columns the replica gains and takes the types the
replica is retyped to; a column dropped from the replica stays, as in the change log.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

import pyarrow as pa
import pyarrow.compute as pc
from pyiceberg.expressions import And, BooleanExpression, EqualTo, In
from pyiceberg.table import Table

from sparkcdc.core.history_spec import HistorySpec
from sparkcdc.core.table_name import TableName
from sparkcdc.sinks.changes import history_plan
from sparkcdc.sinks.changes.history import (
    CURRENT,
    HISTORY_SUFFIX,
    START_POSITION,
    history_schema,
)
from sparkcdc.sinks.changes.history_plan import HistoryBatch
from sparkcdc.sinks.iceberg import tables
from sparkcdc.sinks.iceberg.reshape import TOP, retyped
from sparkcdc.sinks.iceberg.tables import IcebergTables, Identifier, plain_fields

_EQUAL = cast(Callable[[str, object], BooleanExpression], EqualTo)
_IN = cast(Callable[[str, list[object]], BooleanExpression], In)


def history_id(name: TableName) -> Identifier:
    """The history table of ``name``: ``<db>.<t>__history``."""
    return (name[0], f"{name[1]}{HISTORY_SUFFIX}")


def write_history(
    found: IcebergTables,
    spec: HistorySpec,
    batch: HistoryBatch,
    props: dict[str, str],
    commit: Callable[[Identifier, Callable[[Table], bool]], bool],
) -> bool:
    """Write the versions ``batch`` opens, closes or changes to its table's history table, as
    the batch ``props`` names, through ``commit`` (the sink's retried commit); False if the
    table keeps no history, holds the batch already, or the batch changes no version."""
    history = history_plan.table_history(spec, batch)
    if history is None:
        return False
    ident = history_id(batch.name)
    table = _ensure(found, ident, batch.columns)
    if tables.holds(table, props[tables.APP_KEY], int(props[tables.BATCH_KEY])):
        return False
    schema = pa.schema(plain_fields(table))
    rows, key = history_plan.batch_versions(
        batch, history, schema, lambda key: _open_versions(table, schema, batch, key)
    )
    if rows.num_rows == 0:
        return False
    names = [*key, START_POSITION]
    return commit(ident, lambda t: tables.upsert_once(t, rows, rows.select(names), names, False,
                                                      props))  # fmt: skip


def _ensure(found: IcebergTables, ident: Identifier, columns: list[pa.Field]) -> Table:
    """The history table, created or given the replica's new columns and types."""
    table = found.table(ident)
    if table is None:
        found.catalog.create_namespace_if_not_exists(ident[0])
        made = found.catalog.create_table_if_not_exists(ident, history_schema(columns))
        return found.keep(ident, made)
    held = plain_fields(table)
    changed = history_plan.retyped_columns(held, columns)
    tx = retyped(table, changed, TOP) if changed else None
    if tx is not None:
        table = found.keep(ident, tx.commit_transaction())
    missing = history_plan.missing_columns(plain_fields(table), columns)
    if missing:  # added after the version's columns
        with table.update_schema() as update:
            update.union_by_name(pa.schema(missing))
    return table


def _open_versions(
    table: Table, schema: pa.Schema, batch: HistoryBatch, key: list[str]
) -> pa.Table:
    """The open versions of the keys ``batch`` touches (of every key after a TRUNCATE)."""
    if table.current_snapshot() is None:
        return schema.empty_table()
    keys = None if batch.closes_all else history_plan.touched_keys(batch, key)
    current = _EQUAL(CURRENT, True)
    if keys is not None:
        if keys.num_rows == 0:
            return schema.empty_table()
        values = pc.unique(keys.column(key[0]).cast(schema.field(key[0]).type)).to_pylist()
        found = table.scan(row_filter=And(current, _IN(key[0], values))).to_arrow()
    else:
        found = table.scan(row_filter=current).to_arrow()
    return history_plan.open_of(found.cast(schema), keys)
