"""PostgreSQL behind the source port (:class:`sparkcdc.sources.port.Source`).

=====================  =====================================================================
catalog                :class:`~.server.catalog.PostgresCatalog`: ``pg_catalog``, readiness,
                       ``pg_current_wal_insert_lsn()``
offsets                :class:`~.offset.LsnOffset`: the LSN after the last whole transaction
startup resolution     ``earliest`` (the slot's confirmed position), ``latest`` (the WAL's end
                       now), ``lsn:<X/Y>``; the slot and the publication are made first
                       (checked without making them: :meth:`PostgresSource.check_startup`)
log reader             :class:`~.stream.reader.PgLogReader` over a logical replication stream
                       with pgoutput; ``ack`` moves the slot's confirmed position
back-fill read         none: every chunk is read in a pinned snapshot
                       (:class:`~.chunks.export.ExportedSnapshot`), so no chunk has a window;
                       the pin records the tables' schemas as it sees them, which the log
                       reader starting at its point starts from (:mod:`.chunks.pin_view`)
chunk dialect          :class:`~.chunks.dialect.PostgresChunks`: keyset chunks read with COPY;
                       an incremental snapshot's in the log reader's schema of the table
                       (:mod:`.chunks.stream_view`)
type mapping           :mod:`.pgoutput.types`
=====================  =====================================================================
"""

from __future__ import annotations

import time

from sparkcdc.core.errors import ConfigError, LogPositionGone, SourceError
from sparkcdc.core.event import Change
from sparkcdc.core.offset import Offset
from sparkcdc.core.schema import TableSchema
from sparkcdc.core.table_name import TableName
from sparkcdc.sources.port import ChangeFilter, SnapshotPin, Source, TableView
from sparkcdc.sources.postgres.chunks.dialect import PostgresChunks
from sparkcdc.sources.postgres.chunks.export import ExportedSnapshot
from sparkcdc.sources.postgres.chunks.holder import hold_for_readers, release
from sparkcdc.sources.postgres.chunks.pin_view import PinnedView, pin_view
from sparkcdc.sources.postgres.chunks.stream_view import StreamedChunks
from sparkcdc.sources.postgres.offset import LsnOffset
from sparkcdc.sources.postgres.server.catalog import PostgresCatalog
from sparkcdc.sources.postgres.server.publication import (
    SlotState,
    drop_slot,
    ensure_publication,
    ensure_slot,
    slot_state,
)
from sparkcdc.sources.postgres.settings import PostgresSettings
from sparkcdc.sources.postgres.stream.reader import PgLogReader
from sparkcdc.sources.postgres.stream.tables import first_baseline
from sparkcdc.sources.postgres.stream.transport import OpenStream, open_wire_stream
from sparkcdc.sources.postgres.wire.lsn import format_lsn, parse_lsn
from sparkcdc.store.ring import EventStore


class PostgresSource(Source):
    """A PostgreSQL database's logical replication slot and tables (module docstring)."""

    offsets = LsnOffset

    @property
    def settings(self) -> PostgresSettings:
        return PostgresSettings.of(self.config)

    def catalog(self) -> PostgresCatalog:
        return PostgresCatalog.of(self.config, self.settings.names()[0])

    def _prepare_server(
        self, catalog: PostgresCatalog
    ) -> tuple[dict[TableName, TableSchema], SlotState]:
        """Check readiness, make the publication and the slot; the captured tables' schemas
        and the slot."""
        slot, publication = self.settings.names()
        tables = catalog.match_tables(
            self.config.tables, exclude=self.config.capture.excluded_tables
        )
        catalog.check_ready(sorted({schema for schema, _ in tables}))
        ensure_publication(catalog.session, publication, tables, self.config.user)
        state = ensure_slot(catalog.session, slot, catalog.database)
        keys = self.config.row_keys
        schemas = {n: catalog.load_schema(*n, keys.get(str(n), ())) for n in tables}
        return schemas, state

    def startup_offset(self, startup: str) -> LsnOffset:
        with self.catalog() as catalog:
            state = self._prepare_server(catalog)[1]
            return self._resolve(catalog, startup, state.confirmed_flush_lsn or 0, True)

    def check_startup(self, startup: str) -> None:
        """As :meth:`startup_offset`, but the slot and publication are left as they are: a
        slot still to be made will start at the WAL's end now."""
        with self.catalog() as catalog:
            state = slot_state(catalog.session, self.settings.names()[0])
            if state is not None:
                self._resolve(catalog, startup, state.confirmed_flush_lsn or 0, True)
            else:
                self._resolve(catalog, startup, catalog.log_end().lsn, False)

    def _resolve(
        self, catalog: PostgresCatalog, startup: str, confirmed: int, slot_exists: bool
    ) -> LsnOffset:
        """Where ``startup`` starts with the slot at ``confirmed`` (its confirmed position,
        or where a slot still to be made will start)."""
        if startup == "earliest":
            return LsnOffset(confirmed)
        if startup == "latest":
            return LsnOffset(max(catalog.log_end().lsn, confirmed))
        if startup.startswith("lsn:"):
            lsn = parse_lsn(startup[4:])
            if lsn < confirmed:
                slot, at = self.settings.names()[0], format_lsn(confirmed)
                held = (
                    f"what replication slot {slot} on {catalog.address} still holds (from {at})"
                    if slot_exists
                    else f"the WAL's end on {catalog.address} now ({at}), where replication "
                    f"slot {slot}, still to be made, will start"
                )
                raise LogPositionGone(
                    f"startup lsn:{format_lsn(lsn)} lies before {held}; start at or after it, "
                    "or with earliest."
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
        open_stream: OpenStream = open_wire_stream,
    ) -> PgLogReader:
        """The port's log reader; ``open_stream``: what it streams the slot through (the
        benchmarks compare another client's)."""
        slot, publication = self.settings.names()
        with self.catalog() as catalog:
            schemas, state = self._prepare_server(catalog)
            baselines = {name: first_baseline(catalog, s) for name, s in schemas.items()}
        confirmed = state.confirmed_flush_lsn or 0
        if confirmed > LsnOffset.of(start).lsn:
            raise LogPositionGone(
                f"replication slot {slot} on {self.config.host}:{self.config.port} holds the WAL "
                f"from {format_lsn(confirmed)} only, past {start}, where this pipeline goes on "
                "(the slot was made anew, or another client consumed it: pipelines must not "
                "share a slot, see source.slot), so the changes in between cannot be read; "
                "start with a new checkpoint and startup: initial.",
                slot=slot,
            )
        return PgLogReader(
            self.config, LsnOffset.of(start), store, schemas, slot=slot, publication=publication,
            item_rows=item_rows, typed=typed, change_filter=change_filter,
            schema_history=schema_history, baselines=baselines, open_stream=open_stream,
        )  # fmt: skip

    def pin_snapshot(self, schema_history: str = "") -> PinnedView:
        """The pipeline's slot and publication first (the slot then holds the log from the
        pin's point on), then a temporary slot's exported snapshot, in which the captured
        tables' schemas are read and recorded in ``schema_history`` at its point
        (:mod:`.chunks.pin_view`)."""
        with self.catalog() as catalog:
            self._prepare_server(catalog)
        held = ExportedSnapshot(self.config, self.settings.names()[0])
        try:
            return pin_view(self.config, held, schema_history)
        except BaseException:
            held.close()
            raise

    def pin_snapshot_for_readers(self, readers: int) -> SnapshotPin:
        """An exported snapshot held by a process of its own (:mod:`.chunks.holder`); no
        pipeline slot is made: a batch read does not follow the log."""
        return hold_for_readers(self.config, self.settings.names()[0], readers)

    def release_pin(self, pin: SnapshotPin, reader: int) -> None:
        with self.catalog() as catalog:
            release(catalog.session, pin, reader)

    def release_log(self) -> None:
        """Drop the pipeline's slot once its last reader has let go of it (within 30 s)."""
        slot = self.settings.names()[0]
        deadline = time.monotonic() + 30
        with self.catalog() as catalog:
            while True:
                state = slot_state(catalog.session, slot)
                if state is None or not state.active or time.monotonic() > deadline:
                    break
                time.sleep(0.2)
            drop_slot(catalog.session, slot)

    def back_fill(
        self, db: str, table: str, low: Offset, high: Offset, worker: int
    ) -> list[Change]:
        raise SourceError(
            f"a chunk of {TableName(db, table)} was read between the watermarks {low} and "
            f"{high}, but "
            "PostgreSQL chunks are read in a pinned snapshot and the log between watermarks "
            "cannot be read back from the slot."
        )

    def chunks(self, pin: SnapshotPin | None = None) -> PostgresChunks:
        return PostgresChunks(self.config, pin)

    def view_chunks(self, view: TableView) -> StreamedChunks:
        """Chunks of ``view``'s table in the log reader's schema of it, whatever DDL the log
        has not shown yet (:mod:`.chunks.stream_view`)."""
        return StreamedChunks(self.config, view)
