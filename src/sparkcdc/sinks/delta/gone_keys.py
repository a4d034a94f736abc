"""After a re-snapshot, the Delta replica's rows whose keys the source no longer has, deleted
(which they are, and their ``d`` rows: :mod:`sparkcdc.sinks.changes.gone_keys`): the change
log's ``d`` rows appended by the re-snapshot's transaction id, the keys deleted by a MERGE of
the same id, each written once.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
import pyarrow.dataset as ds

from sparkcdc.core.event import OP_DELETE
from sparkcdc.core.offset import Offset
from sparkcdc.core.table_name import TableName
from sparkcdc.sinks.changes.gone_keys import (
    LIVE_OPS,
    delete_rows,
    gone_rows,
    live_after,
    source_names,
)
from sparkcdc.sinks.changes.latest import OP_COLUMN, ORDER_COLUMN
from sparkcdc.sinks.delta import commits
from sparkcdc.sinks.delta.lake import Lake


class DeltaGoneKeys:
    """The :class:`~sparkcdc.sinks.port.GoneKeys` of the Delta tables of one lake."""

    def __init__(self, lake: Lake) -> None:
        self.lake = lake

    def __call__(
        self, name: TableName, key: Sequence[str], since: str, at: Offset, app_id: str
    ) -> int:
        return delete_gone(
            self.lake.replica(name), self.lake.changelog(name), key, since, at, app_id
        )


def delete_gone(
    replica: str,
    changelog: str,
    key: Sequence[str],
    since: str,
    at: Offset,
    app_id: str,
) -> int:
    """Delete the keys of the replica at ``replica`` that no change-log row at or after
    ``since`` holds; ``at`` is the hand-off offset the ``d`` rows carry. The number deleted."""
    if commits.open_table(replica) is None:
        return 0
    rows = commits.table(replica).to_pyarrow_table()
    gone = gone_rows(rows, _live(changelog, since), key)
    if gone.num_rows == 0:
        return 0
    log = commits.table(changelog)
    log_schema = pa.schema([commits.plain_field(f) for f in pa.schema(log.schema().to_arrow())])
    first = log.to_pyarrow_dataset().head(1, columns=["source"])
    commits.append_once(changelog, delete_rows(gone, log_schema, at, source_names(first)),
                        app_id, 0)  # fmt: skip
    deletes = gone.select(list(key)).append_column(
        OP_COLUMN, pa.array([OP_DELETE] * gone.num_rows, pa.string())
    )
    deletes = deletes.append_column(ORDER_COLUMN, pa.array(range(gone.num_rows), pa.int64()))
    commits.merge_replica(replica, deletes, key, app_id, 0)
    return int(gone.num_rows)


def _live(changelog: str, since: str) -> pa.Table:
    """The change log's rows holding a live key (:func:`.live_after`), filtered as read."""
    empty = pa.table({"op": pa.array([], pa.string())})
    if commits.open_table(changelog) is None:
        return empty.append_column("after", pa.array([], pa.struct([])))
    wanted = ds.field("op").isin(list(LIVE_OPS)) & (ds.field("source", "position") >= since)
    found = (
        commits.table(changelog)
        .to_pyarrow_dataset()
        .to_table(columns=["op", "after", "source"], filter=wanted)
    )
    return live_after(found, since)
