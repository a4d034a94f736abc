"""After a re-snapshot, the Iceberg replica's rows whose keys the source no longer has, deleted
(which they are, and their ``d`` rows: :mod:`sparkcdc.sinks.changes.gone_keys`): the change
log's ``d`` rows appended and the keys deleted from the replica, each in one commit marked as
batch 0 of the re-snapshot's own id (:mod:`.tables`), so a crash and a second try write nothing
twice.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import cast

import pyarrow as pa
from pyiceberg.expressions import BooleanExpression, In

from sparkcdc.core.offset import Offset
from sparkcdc.core.table_name import TableName
from sparkcdc.sinks.changes.gone_keys import (
    LIVE_OPS,
    delete_rows,
    gone_rows,
    live_after,
    source_names,
)
from sparkcdc.sinks.iceberg import tables
from sparkcdc.sinks.iceberg.tables import IcebergTables, changelog_id, plain_fields, replica_id

_IN = cast(Callable[[str, list[object]], BooleanExpression], In)  # pyiceberg's types: a term


class IcebergGoneKeys:
    """The :class:`~sparkcdc.sinks.port.GoneKeys` of the Iceberg tables of one catalog."""

    def __init__(self, found: IcebergTables) -> None:
        self.found = found

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
        gone = gone_rows(rows, live_after(held, since), key)
        if gone.num_rows == 0:
            return 0
        first = changelog.scan(selected_fields=("source",), limit=1).to_arrow()
        log_schema = pa.schema(plain_fields(changelog))
        props = tables.marks(app_id, 0, None)
        tables.append_once(changelog, delete_rows(gone, log_schema, at, source_names(first)),
                           props)  # fmt: skip
        empty = rows.schema.empty_table()
        tables.upsert_once(replica, empty, gone.select(list(key)), key, False, props)
        return int(gone.num_rows)
