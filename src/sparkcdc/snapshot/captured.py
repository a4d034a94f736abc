"""The capture rules (:mod:`sparkcdc.core.capture`) applied to a snapshot's chunks: each chunk
is read and corrected with its window in the table's whole schema, then loses its left-out
columns and has its masked ones masked before it is kept (split store, sink files, events) or
handed on, so the snapshot agrees with the log reader's items
(:mod:`sparkcdc.sources.captured_items`)."""

from __future__ import annotations

import dataclasses

import pyarrow as pa

from sparkcdc.core.capture import CaptureRules
from sparkcdc.core.schema import TableSchema
from sparkcdc.snapshot.split_store import SplitResult


def captured_rows(rules: CaptureRules, schema: TableSchema, rows: pa.Table) -> pa.Table:
    """Chunk rows of ``schema``'s table (typed, or ``key`` and ``after``) as captured."""
    plan = rules.plan(schema.db, schema.table, schema.column_names())
    return rows if plan is None else plan.table_columns(rows)


def captured_result(rules: CaptureRules, schema: TableSchema, result: SplitResult) -> SplitResult:
    """A split's result with its rows as captured."""
    rows = captured_rows(rules, schema, result.rows)
    return result if rows is result.rows else dataclasses.replace(result, rows=rows)
