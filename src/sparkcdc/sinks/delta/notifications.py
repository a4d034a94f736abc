"""The notifications of the incremental snapshots in a Delta table,
``<sink>/_sparkcdc/notifications`` (their rows and their logging:
:mod:`sparkcdc.sinks.changes.notices`)."""

from __future__ import annotations

import pyarrow as pa

from sparkcdc.sinks.changes import notices
from sparkcdc.sinks.delta import commits
from sparkcdc.sinks.storage import LakeStorage, as_storage

NOTIFICATIONS_DIR = "_sparkcdc/notifications"


def write_notifications(
    lake: str | LakeStorage, rows: pa.Table, app_id: str, batch_id: int
) -> bool:
    """Append ``rows`` (:func:`~sparkcdc.sinks.changes.notices.notification_rows`) as
    micro-batch ``batch_id`` of pipeline ``app_id``; False if there are none or this batch was
    written before."""
    if rows.num_rows == 0:
        return False
    where = as_storage(lake)
    path = where.join(*NOTIFICATIONS_DIR.split("/"))
    where.mkdir(path)
    return commits.append_once(path, notices.with_batch_id(rows, batch_id), app_id, batch_id)


def read_notifications(lake: str | LakeStorage) -> list[dict[str, object]]:
    """Every notification kept in the sink, by batch and in stream order inside a batch."""
    table = commits.open_table(as_storage(lake).join(*NOTIFICATIONS_DIR.split("/")))
    if table is None:
        return []
    rows = table.to_pyarrow_table().sort_by([("batch_id", "ascending"), ("index", "ascending")])
    kept: list[dict[str, object]] = rows.to_pylist()
    return kept


def record(lake: str | LakeStorage, envelope: pa.Table, app_id: str, batch_id: int) -> int:
    """Keep and log the notifications of one micro-batch; how many it holds."""
    return notices.record(envelope, lambda rows: write_notifications(lake, rows, app_id, batch_id))
