"""The source port: everything that differs from one database to another, and nothing else.

The snapshot algorithms, incremental snapshots, the event store, the Spark source and the sinks
are written once against these interfaces; ``sources/<db>/`` implements them, and the registry
(:mod:`sparkcdc.sources.registry`) picks the implementation by ``source.type``. The shape follows
flink-cdc-base's ``DataSourceDialect`` (discover tables and schemas, the current offset, the chunk
splitter's queries, the fetch task of a split, ``notifyCheckpointComplete`` to commit an offset
to the database) and Debezium's connector SPI (a snapshot source and a streaming source per
connector, ``commitOffset`` for databases whose log retention follows the consumer):

=====================  =====================================================================
catalog                one ordinary connection: readiness and privileges (with the GRANTs to
                       run; on PostgreSQL the publication too), the tables a pipeline
                       captures, their schemas, the log's end, signal-table writes
                       (:class:`Catalog`)
offsets                the source's :class:`~sparkcdc.core.offset.Offset` subclass: total
                       order, boundaries, JSON, its own ``source`` fields
startup resolution     ``earliest``, ``latest`` and the source's own startup forms to an offset
log reader             one replication connection in a thread, putting log items into the
                       event store; ``ack`` after the Spark batch holding an offset commits
                       (:class:`LogReader`)
back-fill read         a table's changes between two watermarks (a snapshot chunk's window)
chunk dialect          the chunk queries of the snapshot
                       (:class:`~sparkcdc.snapshot.dialect.SnapshotDialect`), and a view of
                       the database pinned at one log position where the source has one
                       (:meth:`Source.pin_snapshot`)
type mapping           each column's logical type, set by the catalog and the schema tracking
                       of the source (:attr:`~sparkcdc.core.schema.Column.logical`)
=====================  =====================================================================
"""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, ClassVar, Protocol, Self

from sparkcdc.core.event import Change
from sparkcdc.core.offset import Offset
from sparkcdc.core.schema import TableSchema
from sparkcdc.core.table_name import TableName

if TYPE_CHECKING:
    from sparkcdc.config.model import SourceConfig, SourceSettings
    from sparkcdc.snapshot.dialect import SnapshotDialect
    from sparkcdc.store.ring import EventStore


class ChangeFilter(Protocol):
    """The snapshot's hand-off filter: (db, table, position of the log record, its changes with
    JSON images) -> the changes to keep. It keeps every change at or after ``until`` (None: it
    keeps every change), where a log reader stops calling it."""

    until: Offset | None

    def __call__(self, db: str, table: str, at: Offset, changes: list[Change]) -> list[Change]: ...


class Catalog(Protocol):
    """What the source server says about itself, over one ordinary client connection. Every
    refusal is a :mod:`sparkcdc.core.errors` sentence naming the server and what to change."""

    @property
    def address(self) -> str:
        """``host:port``, for messages."""

    def check_ready(self, namespaces: Iterable[str] = ()) -> None:
        """Raise unless the server's log is set up for change data capture and the user may
        read it and the tables of ``namespaces`` (MissingPrivilege names the GRANTs to run)."""

    def match_tables(
        self, patterns: Sequence[str], each: bool = False, exclude: Sequence[str] = ()
    ) -> list[TableName]:
        """The tables whose ``a.b`` name fully matches one of the regular expressions and none
        of ``exclude`` (``source.tables_exclude``); NoTablesMatched if none does, or with
        ``each`` if one of them matches none (a sentence naming the pattern and where the
        catalog looked,
        :func:`~sparkcdc.sources.table_filter.no_table_matches`)."""

    def load_schema(self, db: str, table: str, key_columns: Sequence[str] = ()) -> TableSchema:
        """The table's columns (logical types mapped) and key (TableWithoutKey without one)."""

    def log_end(self) -> Offset:
        """The end of the log now: where the next transaction will be written."""

    def oldest_position(self) -> str:
        """The oldest place the server can still stream this pipeline's log from, as text for
        a message (the first binlog file; a PostgreSQL slot's confirmed position)."""

    def check_signal_table(self, table: str) -> None:
        """Raise ConfigError, with the table's CREATE TABLE in the database's own quoting,
        unless the signal table ``a.b`` exists."""

    def write_signal(self, table: str, signal_id: str, kind: str, data: str) -> None:
        """Insert a signal row into the signal table ``a.b`` (ConfigError if it is missing,
        MissingPrivilege naming the GRANT if the user may not insert)."""

    def close(self) -> None: ...

    def __enter__(self) -> Self: ...

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None: ...


@dataclass(frozen=True)
class SnapshotPin:
    """A view of the database as of the log position ``point`` that chunk reads on other
    connections can share (PostgreSQL's exported snapshot), named by ``token``."""

    token: str
    point: Offset


class PinHolder(Protocol):
    """Holds a :class:`SnapshotPin` valid until :meth:`close` (or the holder's connection ends)."""

    pin: SnapshotPin

    def schema(self, name: str) -> TableSchema | None:
        """The schema the snapshot reads table ``name`` (``db.table``) with: the table as the
        pinned view sees it, which the source's log reader starting at the pin's point starts
        from (None: the catalog's now)."""

    def close(self) -> None: ...


@dataclass(frozen=True)
class TableView:
    """A captured table as a log reader describes it where it has read to: the schema its
    changes are decoded with (``schema``), and ``token``, what the source's chunk reads need to
    read the table's rows in that schema whatever DDL of it the log has not shown yet
    (:meth:`Source.view_chunks`; PostgreSQL: each column's ``attnum`` and type)."""

    schema: TableSchema
    token: str


@dataclass(frozen=True)
class ReaderStats:
    """What a log reader reports for the status file and the progress line."""

    events: int
    rows: int
    position: Offset | None
    last_event_ts_ms: int | None
    connected: bool
    reconnects: int = 0
    heartbeats: int = 0  # source.heartbeat's beats


class LogReader(Protocol):
    """One replication connection in a daemon thread putting log items into the event store:
    a schema announcement first (``op = 's'`` per captured table, ``after`` = the start), then
    change items cut at transaction boundaries (with Canal's resume counter inside a transaction
    larger than an item), DDL items alone, progress markers for traffic of other tables. Errors
    close the store with the error (and are kept in :attr:`error`)."""

    def start(self) -> None: ...

    def stop(self, timeout: float = 10.0) -> None: ...

    @property
    def error(self) -> BaseException | None: ...

    def stats(self) -> ReaderStats: ...

    def passed(self, offset: Offset) -> bool:
        """Whether every transaction ending at or before ``offset`` was put into the store."""

    def ack(self, offset: Offset) -> None:
        """The Spark batch ending at ``offset`` committed: the source may forget the log before
        it (a PostgreSQL slot advances; a binlog keeps no consumer position)."""

    def table_view(self, name: str) -> TableView | None:
        """Table ``name`` (``db.table``) as the reader describes it now, for an incremental
        snapshot's chunks to be read in (:meth:`Source.view_chunks`), where a DDL may reach
        the log only after them (a PostgreSQL Relation message comes with the table's next
        change); None: the catalog's schema now serves (MySQL: DDL is in the log in order, and
        a window holding a DDL of its table is read again)."""


class Source(ABC):
    """One database type behind the port, for one pipeline's ``source`` settings."""

    offsets: ClassVar[type[Offset]]

    def __init__(self, config: SourceConfig) -> None:
        self.config = config

    def offset(self, value: Mapping[str, object]) -> Offset:
        """The offset of this source that ``value`` (its JSON) names."""
        return self.offsets.from_json(value)

    @abstractmethod
    def catalog(self) -> Catalog:
        """A new catalog connection (a context manager)."""

    @abstractmethod
    def startup_offset(self, startup: str) -> Offset:
        """Where ``earliest``, ``latest`` or one of the source's own startup forms starts
        (``initial`` and ``snapshot`` are the snapshot's business); ConfigError for any other,
        LogPositionGone for a position the server no longer holds."""

    def check_startup(self, startup: str) -> None:
        """Raise as :meth:`startup_offset` would for ``startup``, changing nothing on the
        server (``sparkcdc check`` and the start of ``sparkcdc run``); where resolving a
        startup changes nothing, that is resolving it."""
        self.startup_offset(startup)

    @abstractmethod
    def open_reader(
        self,
        start: Offset,
        store: EventStore,
        schema_history: str,
        item_rows: int,
        change_filter: ChangeFilter | None = None,
        typed: bool = False,
    ) -> LogReader:
        """A log reader from ``start`` (not started); ``schema_history`` is a file the source may
        keep table schemas along its log in. With ``typed`` the row images of its changes are
        typed (:mod:`sparkcdc.core.images`), except where JSON images are read: the signal
        table's rows and the changes a ``change_filter`` still sees."""

    @abstractmethod
    def back_fill(
        self, db: str, table: str, low: Offset, high: Offset, worker: int
    ) -> list[Change]:
        """The changes of ``db.table`` committed in ``[low, high)`` in log order (a snapshot
        chunk's window); ``worker`` numbers the concurrent readers of a snapshot (from 0)."""

    def pin_snapshot(self, schema_history: str = "") -> PinHolder | None:
        """A view of the database at one log position for every chunk read of a snapshot, so
        that no chunk needs a watermark window, once the log from the point on reaches the
        source's reader (PostgreSQL: a temporary slot's exported snapshot); None where the
        source has none, and chunks are read between watermarks (MySQL). ``schema_history``
        is the file :meth:`open_reader` is given: the source may record there the tables as
        the view sees them, for its reader that starts at the view's point, and the holder
        gives the schemas the chunks are read with (:meth:`PinHolder.schema`)."""
        return None

    def pin_snapshot_for_readers(self, readers: int) -> SnapshotPin | None:
        """A pin like :meth:`pin_snapshot`'s whose holder outlives this process and lets go once
        each of the ``readers`` has :meth:`released <release_pin>` it (a batch read plans its
        tasks in a process that ends before they run); None where the source has none."""
        return None

    def release_pin(self, pin: SnapshotPin, reader: int) -> None:
        """The reader numbered ``reader`` (from 0) is done with ``pin``."""
        return None

    records_snapshot_schemas: ClassVar[bool] = False
    """Whether :meth:`record_snapshot_schema` keeps anything (a source without a pin)."""

    def record_snapshot_schema(
        self, schema_history: str, at: Offset, read_at: Offset, schema: TableSchema
    ) -> None:
        """The snapshot read ``schema`` from the catalog between the log positions ``at`` and
        ``read_at``: keep it in ``schema_history`` so the log reader, which starts at or after
        ``at``, decodes the table as the snapshot read it and follows the DDL after that,
        rather than the catalog's schema when the reader opens, which a DDL made meanwhile
        would have changed already."""
        return None

    def release_log(self) -> None:
        """The pipeline copied its tables (``startup: snapshot``) and reads no more of the log:
        let go of what the source keeps for it (a PostgreSQL slot would hold WAL for ever)."""
        return None

    @abstractmethod
    def chunks(self, pin: SnapshotPin | None = None) -> SnapshotDialect:
        """A new snapshot chunk dialect (a context manager); with ``pin`` (from
        :meth:`pin_snapshot`) its reads see the pinned view and both watermarks are its point."""

    def view_chunks(self, view: TableView) -> SnapshotDialect:
        """A new chunk dialect (as :meth:`chunks`, unpinned) that reads the table of ``view``
        (from :meth:`LogReader.table_view`) in the view's schema: its columns named as the
        view names them, whatever the catalog calls them now."""
        return self.chunks()


@dataclass(frozen=True)
class SourceType:
    """What the registry knows of a source type without importing its drivers: its settings and
    offsets (light modules), and where its :class:`Source` is (imported on first use)."""

    name: str
    aliases: tuple[str, ...]
    default_port: int
    """0 for a source not reached over the network (its options then carry no port)."""
    settings: type[SourceSettings]
    offsets: type[Offset]
    source: str
    """``module:Class`` of the :class:`Source`."""
    preload: tuple[str, ...] = ()
    """Modules a snapshot's Spark task workers import before their first task."""

    @property
    def format(self) -> str:
        """The name of its Spark data source (``mysql-cdc``)."""
        return f"{self.name}-cdc"

    def open(self, config: SourceConfig) -> Source:
        """The source of ``config`` (this type's)."""
        module, _, name = self.source.partition(":")
        found = getattr(importlib.import_module(module), name)
        assert isinstance(found, type) and issubclass(found, Source)
        return found(config)
