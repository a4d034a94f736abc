"""The capture rules (:mod:`sparkcdc.core.capture`) applied to the log reader's items before
they enter the event store, written once for every source: nothing a rule leaves out reaches
the store, Spark, the lake or a checkpoint file.

An item's schema events (``op = 's'``) get the captured schema (and previous schema); its
changes' JSON images and typed images lose the left-out columns and have masked ones masked;
changes of a skipped operation leave the item, and the transaction boundaries inside it are
counted again over the rows that stay. The item's offset does not move: a reader reopened
inside a transaction skips the rows it decoded, and the rules drop the same ones again.
"""

from __future__ import annotations

import dataclasses
import json

import pyarrow as pa
import pyarrow.compute as pc

from sparkcdc.core.capture import CaptureRules, TablePlan
from sparkcdc.core.event import OP_SCHEMA, OP_TRUNCATE
from sparkcdc.core.images import TypedImages
from sparkcdc.core.logitem import LogItem


def captured_item(rules: CaptureRules, item: LogItem) -> LogItem:
    """``item`` as the pipeline captures it under ``rules``."""
    batch = item.batch
    if batch is None or not rules.active or batch.num_rows == 0:
        return item
    if rules.skip_operations:
        kept = _kept_rows(rules, batch)
        if kept is not None:
            item = _only(item, batch, kept)
            batch = item.batch
            assert batch is not None
    if not rules.changes_values:
        return item
    batch = _schemas(rules, batch)
    batch = _json_images(rules, batch)
    batch = _schema_ids(rules, batch)
    images = tuple(_typed(rules, i) for i in item.images)
    return dataclasses.replace(item, batch=batch, images=images, nbytes=None)


def _kept_rows(rules: CaptureRules, batch: pa.RecordBatch) -> pa.BooleanArray | None:
    """Which rows stay (None: all of them)."""
    ops = batch.column("op")
    skipped = [op for op in rules.skip_operations if op != OP_TRUNCATE]
    drop = pc.is_in(ops, pa.array(skipped, pa.string()))
    if OP_TRUNCATE in rules.skip_operations:
        kinds = [_kind(op, after) for op, after in zip(
            ops.to_pylist(), batch.column("after").to_pylist(), strict=True)]  # fmt: skip
        drop = pc.or_(drop, pa.array([k == "truncate" for k in kinds], pa.bool_()))
    if not pc.any(drop).as_py():
        return None
    return pc.invert(drop)


def _kind(op: str, after: str | None) -> str | None:
    if op != OP_SCHEMA or not after:
        return None
    found = json.loads(after)
    return found.get("kind") if isinstance(found, dict) else None


def _only(item: LogItem, batch: pa.RecordBatch, kept: pa.BooleanArray) -> LogItem:
    """``item`` with only the rows ``kept``, its boundaries counted over those."""
    flags = kept.to_pylist()
    before = [0]
    for flag in flags:
        before.append(before[-1] + (1 if flag else 0))
    boundaries = tuple((before[rows], at) for rows, at in item.boundaries)
    return dataclasses.replace(item, batch=batch.filter(kept), boundaries=boundaries, nbytes=None)


def _schemas(rules: CaptureRules, batch: pa.RecordBatch) -> pa.RecordBatch:
    """Schema events with their schemas (new, and previous in ``before``) as captured."""
    ops = batch.column("op").to_pylist()
    if OP_SCHEMA not in ops:
        return batch
    names = batch.schema.names
    for column in ("schema", "before"):
        texts = batch.column(column).to_pylist()
        out = [rules.schema_json(t) if op == OP_SCHEMA else t
               for op, t in zip(ops, texts, strict=True)]  # fmt: skip
        batch = batch.set_column(names.index(column), column, pa.array(out, pa.string()))
    return batch


def _schema_ids(rules: CaptureRules, batch: pa.RecordBatch) -> pa.RecordBatch:
    """Every change's schema id as the captured schema's."""
    known: dict[str, str] = {}
    out: list[str | None] = []
    for given in batch.column("schema_id").to_pylist():
        if given is not None and given not in known:
            known[given] = rules.schema_id(given)
        out.append(None if given is None else known[given])
    return batch.set_column(batch.schema.names.index("schema_id"), "schema_id",
                            pa.array(out, pa.string()))  # fmt: skip


def _json_images(rules: CaptureRules, batch: pa.RecordBatch) -> pa.RecordBatch:
    """Changes whose images are JSON text (the typed ones have null text) rewritten."""
    ops = batch.column("op").to_pylist()
    texts = {c: batch.column(c).to_pylist() for c in ("before", "after")}
    if not any(t for c in texts.values() for t in c):
        return batch
    dbs, tables = batch.column("db").to_pylist(), batch.column("table").to_pylist()
    names = batch.schema.names
    for column, values in texts.items():
        out = list(values)
        for i, text in enumerate(values):
            if text and ops[i] != OP_SCHEMA and text.startswith("{"):
                out[i] = rules.json_image(dbs[i], tables[i], text)
        batch = batch.set_column(names.index(column), column, pa.array(out, pa.string()))
    return batch


def _typed(rules: CaptureRules, images: TypedImages) -> TypedImages:
    rows = images.rows
    before = rows.column("before")
    fields = [before.type.field(i).name for i in range(before.type.num_fields)]
    plan: TablePlan | None = rules.plan(images.db, images.table, fields)
    schema_id = rules.schema_id(images.schema_id)
    if plan is None:
        return dataclasses.replace(images, schema_id=schema_id)
    names = rows.schema.names
    for column in ("before", "after"):
        struct = plan.struct(rows.column(column))
        rows = rows.set_column(names.index(column), pa.field(column, struct.type), struct)
    return dataclasses.replace(images, rows=rows, schema_id=schema_id)
