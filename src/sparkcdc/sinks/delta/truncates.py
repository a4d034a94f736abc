"""TRUNCATE in the change log: one ``t`` row per truncated table, as Debezium writes one.

A TRUNCATE reaches the sink as a schema event (``op = 's'``) whose change kind is ``truncate``
(MySQL's and MariaDB's TRUNCATE TABLE statement; each table a PostgreSQL Truncate message names,
CASCADE and RESTART IDENTITY included). :mod:`.lake` notes it as a reset, which empties the
replica in the batch's MERGE; here it becomes a change of its table, ``op = 't'`` with
``before`` and ``after`` null and the event's own ``source`` and ``transaction``, so the sink
appends it to the table's change log with the table's other changes of the batch, in log order
and in the same commit: once per batch id, as every change-log row. A reader of the change log
alone sees where the table was emptied.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from sparkcdc.core.event import OP_TRUNCATE

_TRUNCATE = re.compile(r"\s*TRUNCATE\b", re.IGNORECASE)


def is_truncate(row: dict[str, Any]) -> bool:
    """Whether a schema event (as a dict) is a TRUNCATE of a table the sink knows the schema of
    (by the change's kind, else by the statement)."""
    if not row.get("schema_id"):
        return False  # a table never announced has no change log to write to
    try:
        change = json.loads(row.get("after") or "null")
    except ValueError:
        change = None
    if isinstance(change, dict) and "kind" in change:
        return bool(change["kind"] == "truncate")
    return bool(_TRUNCATE.match(row.get("ddl") or ""))


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
