"""PostgreSQL behind the source port (:class:`sparkcdc.sources.port.Source`).

=====================  =====================================================================
catalog                :class:`~.server.catalog.PostgresCatalog`: ``pg_catalog``, readiness,
                       ``pg_current_wal_insert_lsn()``
offsets                :class:`~.offset.LsnOffset`: the LSN after the last whole transaction
startup resolution     ``earliest`` (the slot's confirmed position), ``latest`` (the WAL's end
                       now), ``lsn:<X/Y>``; the slot and the publication are made first
log reader             :class:`~.stream.reader.PgLogReader` over a logical replication stream
                       with pgoutput; ``ack`` moves the slot's confirmed position
back-fill read         not yet (``startup: initial`` and ``snapshot`` are refused by the
                       settings' check)
chunk dialect          :class:`~.chunks.dialect.PostgresChunks`: keyset chunks read with COPY
type mapping           :mod:`.pgoutput.types`
=====================  =====================================================================
"""

from __future__ import annotations

from typing import NoReturn

from sparkcdc.core.errors import ConfigError, LogPositionGone
from sparkcdc.core.event import Change
from sparkcdc.core.offset import Offset
from sparkcdc.core.schema import TableSchema
from sparkcdc.sources.port import ChangeFilter, Source, TableName
from sparkcdc.sources.postgres.chunks.dialect import PostgresChunks
from sparkcdc.sources.postgres.offset import LsnOffset
from sparkcdc.sources.postgres.server.catalog import PostgresCatalog
from sparkcdc.sources.postgres.server.publication import ensure_publication, ensure_slot
from sparkcdc.sources.postgres.settings import PostgresSettings
from sparkcdc.sources.postgres.stream.reader import PgLogReader
from sparkcdc.sources.postgres.wire.lsn import format_lsn, parse_lsn
from sparkcdc.store.ring import EventStore

_NO_SNAPSHOT = (
    "the PostgreSQL source cannot snapshot tables yet; start from the log with source.startup "
    "latest, earliest or lsn:<X/Y>."
)


class PostgresSource(Source):
    """A PostgreSQL database's logical replication slot and tables (module docstring)."""

    offsets = LsnOffset

    @property
    def settings(self) -> PostgresSettings:
        return PostgresSettings.of(self.config)

    def catalog(self) -> PostgresCatalog:
        return PostgresCatalog.of(self.config, self.settings.names()[0])

    def _prepare_server(self, catalog: PostgresCatalog) -> dict[TableName, TableSchema]:
        """Check readiness, make the publication and the slot; the captured tables' schemas."""
        slot, publication = self.settings.names()
        tables = catalog.match_tables(self.config.tables)
        catalog.check_ready(sorted({schema for schema, _ in tables}))
        ensure_publication(catalog.session, publication, tables, self.config.user)
        ensure_slot(catalog.session, slot, catalog.database)
        keys = self.config.row_keys
        return {(s, t): catalog.load_schema(s, t, keys.get(f"{s}.{t}", ())) for s, t in tables}

    def startup_offset(self, startup: str) -> LsnOffset:
        slot = self.settings.names()[0]
        with self.catalog() as catalog:
            self._prepare_server(catalog)
            state = ensure_slot(catalog.session, slot, catalog.database)
            confirmed = state.confirmed_flush_lsn or 0
            if startup == "earliest":
                return LsnOffset(confirmed)
            if startup == "latest":
                end = catalog.log_end()
                assert isinstance(end, LsnOffset)
                return LsnOffset(max(end.lsn, confirmed))
            if startup.startswith("lsn:"):
                lsn = parse_lsn(startup[4:])
                if lsn < confirmed:
                    raise LogPositionGone(
                        f"startup lsn:{format_lsn(lsn)} lies before what replication slot "
                        f"{slot} on {catalog.address} still holds (from "
                        f"{format_lsn(confirmed)}); start at or after it, or with earliest."
                    )
                return LsnOffset(lsn)
        raise ConfigError(
            f"source.startup: {startup!r} is not a start of the PostgreSQL log; use latest, "
            "earliest or lsn:<X/Y>.",
            key="source.startup",
        )

    def open_reader(
        self,
        start: Offset,
        store: EventStore,
        schema_history: str,
        item_rows: int,
        change_filter: ChangeFilter | None = None,
        typed: bool = False,
    ) -> PgLogReader:
        if change_filter is not None:
            _no_snapshot()
        if not isinstance(start, LsnOffset):
            raise TypeError(f"{start!r} is not a PostgreSQL LSN offset")
        slot, publication = self.settings.names()
        with self.catalog() as catalog:
            schemas = self._prepare_server(catalog)
        return PgLogReader(
            self.config, start, store, schemas, slot=slot, publication=publication,
            item_rows=item_rows, typed=typed,
        )  # fmt: skip

    def back_fill(
        self, db: str, table: str, low: Offset, high: Offset, worker: int
    ) -> list[Change]:
        _no_snapshot()

    def chunks(self) -> PostgresChunks:
        return PostgresChunks(self.config)


def _no_snapshot() -> NoReturn:
    raise ConfigError(_NO_SNAPSHOT, key="source.startup")
