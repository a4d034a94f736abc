"""TRUNCATE in the change log: one ``t`` row per truncated table, as Debezium writes one.

A TRUNCATE reaches the sink as a schema event (``op = 's'``) whose change kind is ``truncate``
(MySQL's and MariaDB's TRUNCATE TABLE statement; each table a PostgreSQL Truncate message names,
CASCADE and RESTART IDENTITY included; :func:`sparkcdc.sinks.batch_events.is_truncate`).
:mod:`.lake` notes it as a reset, which empties the replica in the batch's MERGE; here it
becomes a change of its table, ``op = 't'`` with ``before`` and ``after`` null and the event's
own ``source`` and ``transaction``, so the sink appends it to the table's change log with the
table's other changes of the batch, in log order and in the same commit: once per batch id, as
every change-log row. A reader of the change log alone sees where the table was emptied.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc

from sparkcdc.core.event import OP_TRUNCATE


def as_changes(envelope: pa.Table, truncates: Sequence[int]) -> pa.Table:
    """``envelope`` with its schema events at the positions ``truncates`` made ``t`` changes:
    op ``t``, no key, no row images (their ``schema_id``, ``source`` and ``transaction`` stay)."""
    if not truncates:
        return envelope
    marked = pc.is_in(pa.array(range(envelope.num_rows), pa.int64()), pa.array(truncates))
    nothing = pa.scalar(None, pa.string())
    columns = {
        "op": pc.if_else(marked, pa.scalar(OP_TRUNCATE, pa.string()), envelope.column("op")),
        **{name: pc.if_else(marked, nothing, envelope.column(name))
           for name in ("key", "before", "after", "ddl", "schema")},
    }  # fmt: skip
    for name, values in columns.items():
        index = envelope.schema.get_field_index(name)
        envelope = envelope.set_column(index, envelope.schema.field(index), values)
    return envelope
