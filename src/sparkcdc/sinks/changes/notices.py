"""Notifications of the incremental snapshots (``op = 'n'`` events): kept and logged, never changes.

The source tells how its incremental snapshots are going with ``n`` events in the change stream:
``after`` is the notification as JSON (``{"type": ..., ...}``, type one of ``queued``,
``started``, ``chunk``, ``table-done``, ``completed``, ``paused``, ``resumed``, ``stopped``,
``skipped`` or ``log``), ``db``/``table`` the table it is about (empty for the snapshots as
a whole) and ``source`` the log position it was made at (built by
:func:`sparkcdc.core.offset_events.notice_batch`). They are no change of a table: each sink
appends them to one table of its format with the columns of :data:`NOTIFICATIONS_SCHEMA`, in
stream order and once per micro-batch (the commit carries the pipeline id and batch id, as the
change logs' do), and logs each one on ``sparkcdc.sink`` (:func:`record`).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from sparkcdc.core.event import OP_NOTICE
from sparkcdc.core.table_name import TableName

log = logging.getLogger("sparkcdc.sink")

NOTIFICATIONS_SCHEMA = pa.schema(
    [
        ("batch_id", pa.int64()),
        ("index", pa.int64()),  # order inside the micro-batch
        ("type", pa.string()),
        ("db", pa.string()),
        ("table", pa.string()),
        ("details", pa.string()),  # the notification's JSON text, as sent
        ("position", pa.string()),  # where in the log it was made (``source.position``)
        ("ts_ms", pa.int64()),
    ]
)


def has_notices(envelope: pa.Table) -> bool:
    """Whether a micro-batch holds any ``n`` event."""
    return envelope.num_rows > 0 and bool(
        pc.any(pc.equal(envelope.column("op"), OP_NOTICE)).as_py()
    )


def notification_rows(envelope: pa.Table) -> pa.Table:
    """The notifications of a micro-batch in stream order: the columns of
    :data:`NOTIFICATIONS_SCHEMA` but ``batch_id``."""
    fields = pa.schema([f for f in NOTIFICATIONS_SCHEMA if f.name != "batch_id"])
    if not has_notices(envelope):
        return fields.empty_table()
    picked = envelope.filter(pc.equal(envelope.column("op"), OP_NOTICE))
    details = picked.column("after").combine_chunks()
    source = picked.column("source").combine_chunks()
    return pa.Table.from_arrays(
        [
            pa.array(range(picked.num_rows), pa.int64()),
            pa.array([_kind(text) for text in details.to_pylist()], pa.string()),
            pc.fill_null(picked.column("db"), ""),
            pc.fill_null(picked.column("table"), ""),
            details,
            source.field("position"),
            source.field("ts_ms"),
        ],
        names=fields.names,
    ).cast(fields)  # whatever string type the batch came with


def with_batch_id(rows: pa.Table, batch_id: int) -> pa.Table:
    """``rows`` (:func:`notification_rows`) with their micro-batch's id: a row of the table."""
    ids = pa.repeat(pa.scalar(batch_id, pa.int64()), rows.num_rows)
    return rows.add_column(0, NOTIFICATIONS_SCHEMA.field("batch_id"), ids).cast(
        NOTIFICATIONS_SCHEMA
    )


def record(envelope: pa.Table, write: Callable[[pa.Table], bool]) -> int:
    """Keep (``write``: :func:`notification_rows` appended once per micro-batch; False if this
    batch's were written before) and log the notifications of one micro-batch; how many it
    holds."""
    if not has_notices(envelope):
        return 0
    rows = notification_rows(envelope)
    if write(rows):
        for row in rows.select(["db", "table", "details"]).to_pylist():
            log.info("%s", describe(row["db"], row["table"], row["details"]))
    else:
        log.debug("the micro-batch's notifications were written before")
    return int(rows.num_rows)


def describe(db: str, table: str, details: str | None) -> str:
    """One notification in words, e.g. ``incremental snapshot of shop.orders: done, 2,000
    rows``."""
    notice = _parse(details)
    kind, rows = notice.get("type"), notice.get("rows")
    subject = (
        f"incremental snapshot of {TableName(db, table)}"
        if db or table
        else "incremental snapshots"
    )
    last, top = notice.get("last_key"), notice.get("max_key")
    if kind == "chunk":
        so_far = f", {_count(rows)} rows so far" if rows is not None else ""
        if last is not None:
            of = f" of {_key(top)}" if top is not None else ""
            return f"{subject}: chunk done{so_far} (last key {_key(last)}{of})"
        upto = f" (keys up to {_key(top)})" if top is not None else ""
        return f"{subject}: chunk done{so_far}{upto}"
    if kind == "table-done":
        return f"{subject}: done" + (f", {_count(rows)} rows" if rows is not None else "")
    if kind == "log":
        return f"{subject}: {notice.get('message') or details}"
    if kind not in ("started", "queued", "completed", "paused", "resumed", "stopped", "skipped"):
        return f"{subject}: {details}"
    said = f"{subject} {kind}"
    if notice.get("where"):
        said += f" (where {notice['where']})"
    if kind == "started" and isinstance(notice.get("estimate"), int):
        said += f", about {_count(notice['estimate'])} rows"
    if kind == "stopped" and rows is not None:
        said += f" after {_count(rows)} rows"
    why = notice.get("reason") or notice.get("message")
    return said + (f": {why}" if why else "")


def _parse(details: str | None) -> dict[str, Any]:
    try:
        found = json.loads(details or "null")
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}


def _kind(details: str | None) -> str | None:
    kind = _parse(details).get("type")
    return None if kind is None else str(kind)


def _count(rows: object) -> str:
    return f"{rows:,}" if isinstance(rows, int) else str(rows)


def _key(values: object) -> str:
    return json.dumps(values, separators=(", ", ":"))
