"""MySQL/MariaDB behind the source port (:class:`sparkcdc.sources.port.Source`).

=====================  =====================================================================
catalog                :class:`~.server.catalog.MySQLCatalog`: ``information_schema``,
                       ``SHOW GRANTS``, ``SHOW MASTER STATUS``
offsets                :class:`~.offset.BinlogOffset`: binlog file, position, GTID position
startup resolution     :mod:`.server.startup`: earliest, latest, ``gtid:``, ``position:``,
                       ``timestamp:``
log reader             :class:`~.binlog.reader.LogReader` over a binlog dump; ``ack`` does
                       nothing (the server keeps no position of its readers)
back-fill read         :func:`~.binlog.backfill.changes_between`: a bounded log reader with the
                       snapshot reader's own server id
chunk dialect          :class:`~.chunks.dialect.MySQLChunks`: keyset queries with the columns'
                       collations, read through connectorx
type mapping           :mod:`.schema.column_types`
=====================  =====================================================================
"""

from __future__ import annotations

from sparkcdc.core.errors import ConfigError
from sparkcdc.core.event import Change
from sparkcdc.core.offset import Offset
from sparkcdc.core.schema import TableSchema
from sparkcdc.sources.mysql.binlog.backfill import changes_between
from sparkcdc.sources.mysql.binlog.reader import LogReader
from sparkcdc.sources.mysql.chunks.dialect import MySQLChunks
from sparkcdc.sources.mysql.offset import BinlogOffset
from sparkcdc.sources.mysql.schema.history import SchemaHistory
from sparkcdc.sources.mysql.server.catalog import MySQLCatalog
from sparkcdc.sources.mysql.server.startup import resolve_startup
from sparkcdc.sources.mysql.settings import MySQLSettings
from sparkcdc.sources.port import ChangeFilter, SnapshotPin, Source
from sparkcdc.store.ring import EventStore


class MySQLSource(Source):
    """A MySQL/MariaDB server's binary log and tables (see the module docstring)."""

    offsets = BinlogOffset

    def catalog(self) -> MySQLCatalog:
        return MySQLCatalog.of(self.config)

    def startup_offset(self, startup: str) -> BinlogOffset:
        with self.catalog() as catalog:
            return resolve_startup(catalog, self.config, startup)

    def open_reader(
        self,
        start: Offset,
        store: EventStore,
        schema_history: str,
        item_rows: int,
        change_filter: ChangeFilter | None = None,
        typed: bool = False,
    ) -> LogReader:
        history = SchemaHistory(schema_history)
        return LogReader(
            self.config, _binlog(start), store, history, item_rows, change_filter=change_filter,
            typed=typed,
        )  # fmt: skip

    def back_fill(
        self, db: str, table: str, low: Offset, high: Offset, worker: int
    ) -> list[Change]:
        """With the ``worker``-th snapshot server id (``source.server_id``'s range)."""
        ids = MySQLSettings.of(self.config).snapshot_ids(self.config.snapshot.parallelism)
        if not ids:
            raise ConfigError(
                "source.server_id names no server id for the snapshot readers; give a range "
                "such as 5701-5705.",
                key="source.server_id",
            )
        server_id = ids[worker % len(ids)]
        return changes_between(self.config, db, table, _binlog(low), _binlog(high), server_id)

    records_snapshot_schemas = True

    def record_snapshot_schema(
        self, schema_history: str, at: Offset, read_at: Offset, schema: TableSchema
    ) -> None:
        history = SchemaHistory(schema_history)
        start = _binlog(at)
        schemas = history.schemas_at(start) or {}
        schemas[(schema.db, schema.table)] = schema
        history.record(start, schemas, {(schema.db, schema.table): _binlog(read_at)})

    def chunks(self, pin: SnapshotPin | None = None) -> MySQLChunks:
        if pin is not None:
            raise TypeError("this source pins no snapshot; its chunks are read between watermarks")
        return MySQLChunks(self.config)


def _binlog(offset: Offset) -> BinlogOffset:
    if not isinstance(offset, BinlogOffset):
        raise TypeError(f"{offset!r} is not a binlog offset")
    return offset
