"""A micro-batch's schema rows (``op = 's'``) read by every table format's sink, in log order:
each schema kept and the tables created or evolved (:meth:`.lake.Lake.announce`), each TRUNCATE
made a ``t`` change (:mod:`.truncates`), a TRUNCATE or DROP noted as the replica's reset, and
what each change did to the rows the table held (:mod:`.effects`)."""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from sparkcdc.core.event import OP_SCHEMA
from sparkcdc.core.table_name import TableName
from sparkcdc.sinks.batch_events import is_truncate
from sparkcdc.sinks.changes import truncates
from sparkcdc.sinks.changes.effects import Effect, effect_of, replica_columns
from sparkcdc.sinks.changes.lake import Lake


@dataclass(frozen=True)
class SchemaRows:
    """What a batch's schema rows leave for its changes."""

    envelope: pa.Table  # the batch, each TRUNCATE a ``t`` change
    resets: dict[TableName, int]  # the position of a table's TRUNCATE or DROP in the batch
    effects: dict[TableName, list[Effect]]  # by table, in log order


def read_schema_rows(envelope: pa.Table, ops: list[str], lake: Lake) -> SchemaRows:
    """The schema rows of ``envelope`` (its ``ops``) announced to ``lake``, in log order."""
    resets: dict[TableName, int] = {}
    truncated: list[int] = []
    effects: dict[TableName, list[Effect]] = {}
    for i in (i for i, op in enumerate(ops) if op == OP_SCHEMA):
        row = envelope.slice(i, 1).to_pylist()[0]
        had = replica_columns(lake, TableName(row["db"], row["table"]))
        lake.announce(row, i, resets)
        if is_truncate(row):
            truncated.append(i)
        found = effect_of(row, i, lake, had)
        if found is not None:
            effects.setdefault(found.table, []).append(found)
    return SchemaRows(truncates.as_changes(envelope, truncated), resets, effects)
