"""After a re-snapshot, the Delta replica's rows whose keys the source no longer has, deleted
(which they are, and their ``d`` rows: :mod:`sparkcdc.sinks.changes.gone_keys`): the change
log's ``d`` rows appended by the re-snapshot's transaction id, the history table's versions
closed and the keys deleted by MERGEs of the same id, each written once.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
import pyarrow.dataset as ds

from sparkcdc.core.event import OP_DELETE
from sparkcdc.core.history_spec import HistorySpec
from sparkcdc.core.offset import Offset
from sparkcdc.core.table_name import TableName
from sparkcdc.sinks.changes.gone_keys import (
    LIVE_OPS,
    delete_rows,
    gone_rows,
    history_batch,
    live_after,
    observed_at,
    source_names,
)
from sparkcdc.sinks.changes.latest import OP_COLUMN, ORDER_COLUMN
from sparkcdc.sinks.delta import commits
from sparkcdc.sinks.delta.history import write_history
from sparkcdc.sinks.delta.lake import Lake


class DeltaGoneKeys:
    """The :class:`~sparkcdc.sinks.port.GoneKeys` of the Delta tables of one lake."""

    def __init__(self, lake: Lake, history: HistorySpec | None = None) -> None:
        self.lake, self.history = lake, history or HistorySpec()

    def __call__(
        self, name: TableName, key: Sequence[str], since: str, at: Offset, app_id: str
    ) -> int:
        """Delete the keys of the replica of ``name`` that no change-log row at or after
        ``since`` holds; ``at`` is the hand-off offset the ``d`` rows carry. How many."""
        replica, changelog = self.lake.replica(name), self.lake.changelog(name)
        if commits.open_table(replica) is None:
            return 0
        rows = commits.table(replica).to_pyarrow_table()
        live = _live(changelog, since)
        gone = gone_rows(rows, live, key)
        if gone.num_rows == 0:
            return 0
        log = commits.table(changelog)
        log_schema = pa.schema([commits.plain_field(f) for f in pa.schema(log.schema().to_arrow())])
        first = log.to_pyarrow_dataset().head(1, columns=["source"])
        deleted = delete_rows(gone, log_schema, at, source_names(first), observed_at(live))
        commits.append_once(changelog, deleted, app_id, 0)
        if self.history.of(name) is not None:
            batch = history_batch(name, key, gone, deleted)
            write_history(self.lake.storage, self.history, batch, app_id, 0)
        _delete_keys(replica, gone, key, app_id)
        return int(gone.num_rows)


def _delete_keys(replica: str, gone: pa.Table, key: Sequence[str], app_id: str) -> None:
    """The keys of ``gone`` deleted from the replica by a MERGE of ``app_id``'s batch 0."""
    deletes = gone.select(list(key)).append_column(
        OP_COLUMN, pa.array([OP_DELETE] * gone.num_rows, pa.string())
    )
    deletes = deletes.append_column(ORDER_COLUMN, pa.array(range(gone.num_rows), pa.int64()))
    commits.merge_replica(replica, deletes, key, app_id, 0)


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
