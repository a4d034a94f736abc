"""After a re-snapshot, the Iceberg replica's rows whose keys the source no longer has, deleted
(which they are, and their ``d`` rows: :mod:`sparkcdc.sinks.changes.gone_keys`): the change
log's ``d`` rows appended, the history table's versions closed and the keys deleted from the
replica, each in one commit marked as batch 0 of the re-snapshot's own id (:mod:`.tables`), so
a crash and a second try write nothing twice.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import cast

import pyarrow as pa
from pyiceberg.expressions import BooleanExpression, In
from pyiceberg.table import Table

from sparkcdc.core.errors import SinkError
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
from sparkcdc.sinks.iceberg import tables
from sparkcdc.sinks.iceberg.history import write_history
from sparkcdc.sinks.iceberg.tables import (
    IcebergTables,
    Identifier,
    changelog_id,
    plain_fields,
    replica_id,
)

_IN = cast(Callable[[str, list[object]], BooleanExpression], In)  # pyiceberg's types: a term


class IcebergGoneKeys:
    """The :class:`~sparkcdc.sinks.port.GoneKeys` of the Iceberg tables of one catalog."""

    def __init__(self, found: IcebergTables, history: HistorySpec | None = None) -> None:
        self.found, self.history = found, history or HistorySpec()

    def __call__(
        self, name: TableName, key: Sequence[str], since: str, at: Offset, app_id: str
    ) -> int:
        replica = self.found.table(replica_id(name))
        changelog = self.found.table(changelog_id(name))
        if replica is None or changelog is None:
            return 0
        rows = replica.scan().to_arrow().cast(pa.schema(plain_fields(replica)))
        held = changelog.scan(
            row_filter=_IN("op", list(LIVE_OPS)), selected_fields=("op", "after", "source")
        ).to_arrow()
        live = live_after(held, since)
        gone = gone_rows(rows, live, key)
        if gone.num_rows == 0:
            return 0
        first = changelog.scan(selected_fields=("source",), limit=1).to_arrow()
        log_schema = pa.schema(plain_fields(changelog))
        props = tables.marks(app_id, 0, None)
        deleted = delete_rows(gone, log_schema, at, source_names(first), observed_at(live))
        tables.append_once(changelog, deleted, props)
        if self.history.of(name) is not None:
            batch = history_batch(name, key, gone, deleted)
            write_history(self.found, self.history, batch, props, self._commit)
        empty = rows.schema.empty_table()
        tables.upsert_once(replica, empty, gone.select(list(key)), key, False, props)
        return int(gone.num_rows)

    def _commit(self, ident: Identifier, write: Callable[[Table], bool]) -> bool:
        """``write`` to the table ``ident`` (the history table, made by then)."""
        table = self.found.table(ident)
        if table is None:
            raise SinkError(f"the Iceberg table {'.'.join(ident)} is gone", table=ident[1])
        return write(table)
