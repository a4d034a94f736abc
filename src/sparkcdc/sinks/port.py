"""The sink port: what the pipeline asks of a sink, whatever the tables are kept in.

One sink type is one package under ``sinks/`` whose ``SINK_TYPE`` is a :class:`SinkType`
(:mod:`.registry` finds it by ``sink.type``). It gives these things, each used in one place:

=================  ===========================================  ============================
part               what it does                                 called by
=================  ===========================================  ============================
``check``          the sink's storage reachable and writable,   ``sparkcdc check`` / ``run``,
                   before Spark starts                          before the session starts
``open``           a :class:`Sink`: Spark's ``foreachBatch``    ``spark/pipeline/run.py``
                   writer of envelope micro-batches
``chunk_writer``   the executor side of the initial snapshot:   ``spark/snapshot/split_task``
                   a run of chunks written ahead of the sink
                   as files the driver commits (None: none)
``reader``         a table's rows as they are now (a replica,   ``sparkcdc verify``
                   or a change log's rows after a position)
``keeper``         the tables' upkeep: small files compacted,   ``sinks/upkeep.py`` (between
                   old versions and their files deleted         batches), ``sparkcdc compact``
``gone_keys``      after a re-snapshot, the replica's keys the  ``spark/pipeline/resnapshot``
                   source deleted while its log was lost
``batch_holders``  the tables that hold a micro-batch's id      ``spark/pipeline/torn``
=================  ===========================================  ============================

A :class:`Sink` writes micro-batch N exactly once per batch id: Spark replays the batch after a
crash, and the replay must change nothing already written (Delta keeps the batch id as the
commit's transaction identifier; a table format with snapshot properties keeps it there). For
every source table it keeps a replica (upsert by key, delete, emptied by a TRUNCATE) and a
change log (appended, a ``t`` row per TRUNCATE), and evolves both on a schema change. The
envelope's side channels are read with :mod:`.batch_events`. The progress line and the
metrics read only :meth:`Sink.figures`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, NotRequired, Protocol, TypedDict

import pyarrow as pa

from sparkcdc.core.errors import SinkError, SparkCDCError
from sparkcdc.core.json_value import JSONObject
from sparkcdc.core.schema_policy import SchemaPolicy
from sparkcdc.core.table_name import TableName

if TYPE_CHECKING:
    from sparkcdc.config.model import SinkConfig
    from sparkcdc.core.offset import Offset
    from sparkcdc.core.schema import TableSchema
    from sparkcdc.snapshot.split_store import SplitResult, SplitStore

TableKind = Literal["replica", "changelog"]
"""The two tables a sink keeps of every source table."""


class DataFile(TypedDict):
    """One data file a chunk writer wrote: its path, its bytes and the table format's statistics
    of it (what the sink's commit records beside the file)."""

    path: str
    size: int
    stats: JSONObject


class ChunkFiles(TypedDict):
    """What a chunk writer wrote for a run of chunks, as JSON inside each chunk's ``k`` event:
    the columns the files hold (names and Arrow types: the sink commits them only into tables
    of the same columns) and the file of each table it keeps."""

    columns: list[list[str]]
    replica: DataFile
    changelog: NotRequired[DataFile]  # absent: the snapshot's rows stay out of the change log


class ChunkRef(TypedDict):
    """A ``k`` event's ``after``: a chunk whose typed rows are kept in an Arrow IPC file (the
    split store's, or an incremental snapshot's window) instead of in the event."""

    path: str
    rows: int
    files: NotRequired[ChunkFiles]  # the sink's files of the chunk's run (initial snapshot)
    incremental: NotRequired[bool]  # a chunk of an incremental snapshot
    schema: NotRequired[JSONObject]  # the schema the chunk was read in (incremental)
    counter: NotRequired[str]  # the source field that numbers the rows, if the source has one


class BatchFrame(Protocol):
    """What ``foreachBatch`` hands a sink: a DataFrame, of which it needs its Arrow table."""

    def toArrow(self) -> pa.Table: ...


class Mark(Protocol):
    """Told once per micro-batch that the batch's log changes are committed (the pipeline's
    batch mark, which lets an incremental snapshot's next window start)."""

    def touch(self) -> None: ...


@dataclass(frozen=True)
class UpkeepFigures:
    """The upkeep of the sink's tables in this run (compaction and vacuum)."""

    runs: int = 0
    compacted: int = 0  # data files rewritten
    vacuumed: int = 0  # files deleted
    vacuumed_bytes: int = 0
    last_s: float | None = None  # wall time of the last run (an earlier run's, from the sink)


@dataclass(frozen=True)
class TableUpkeep:
    """What one run of the upkeep did to one table of the sink."""

    name: str  # ``db.table``, or ``db.table__changelog``
    compacted: int  # data files rewritten
    written: int  # the files they became
    vacuumed: int  # files deleted
    vacuumed_bytes: int
    files: int  # data files of the table's version afterwards
    bytes: int
    expired: int = 0  # snapshots expired (a table format whose versions are snapshots)


class TableKeeper(Protocol):
    """A table format's upkeep of the sink's tables (:mod:`.upkeep` runs it): the names of
    the replicas and change logs whose ``db.table`` fully matches one of ``patterns`` (none:
    all), and one table kept: compacted once ``small_files`` of its data files are small, the
    versions older than ``retain`` seconds dropped with the files only they read."""

    def tables(self, patterns: Sequence[str] = ()) -> list[str]: ...

    def keep(self, name: str, retain: float, small_files: int) -> TableUpkeep: ...


class GoneKeys(Protocol):
    """After a re-snapshot (``source.on_log_gone: resnapshot``) handed off to the log at
    ``at``: delete from the replica of ``name`` the keys that no change-log row at or after
    ``since`` holds (keys deleted at the source while its log was lost), each logged as a ``d``
    row, written once per ``app_id``; how many (:mod:`.changes.gone_keys`)."""

    def __call__(
        self, name: TableName, key: Sequence[str], since: str, at: Offset, app_id: str
    ) -> int: ...


@dataclass(frozen=True)
class SinkFigures:
    """A sink's counters at one moment, read by the progress line and the metrics."""

    batches: int = 0
    changes: int = 0  # change-log rows written (a snapshot's r rows also when in the replica only)
    events: Mapping[tuple[str, str], int] = field(default_factory=dict)  # (table, op) -> rows
    last_event_ts_ms: int | None = None  # source commit time of the newest change written
    last_commit_s: float | None = None  # wall time the last batch was written
    error: BaseException | None = None  # what stopped the last batch, if one failed
    upkeep: UpkeepFigures | None = None  # None: the sink keeps no upkeep schedule


@dataclass(frozen=True)
class SinkContext:
    """What the pipeline gives the sink it opens: the pipeline's id (asked for once the first
    batch comes: it lives in Spark's checkpoint), the batch mark, what to do with schema
    changes (``pipeline.schema_changes``) and whether to keep transaction records
    (``pipeline.transactions``: :mod:`.changes.transactions`)."""

    app_id: Callable[[], str]
    mark: Mark | None = None
    schema_changes: SchemaPolicy = field(default_factory=SchemaPolicy)
    transactions: bool = False


class Sink(ABC):
    """Spark's ``foreachBatch`` writer of envelope micro-batches; idempotent per batch id."""

    def __call__(self, batch: BatchFrame, batch_id: int) -> None:
        self.write_batch(batch, int(batch_id))

    @abstractmethod
    def write_batch(self, batch: BatchFrame, batch_id: int) -> None:
        """Write micro-batch ``batch_id`` (envelope rows in log order); a batch id written
        before changes nothing. Raises :class:`~sparkcdc.core.errors.SinkError`."""

    @abstractmethod
    def figures(self) -> SinkFigures:
        """The counters now (read from another thread: never a half-updated value)."""

    @abstractmethod
    def upkeep_at_end(self) -> None:
        """The query ended by itself and Spark committed every batch: the tables' upkeep if
        it is due (nothing for a sink that keeps none)."""


def batch_failed(
    exc: BaseException, batch_id: int, label: str, own: tuple[type[Exception], ...] = ()
) -> BaseException:
    """``exc`` as the sink's one sentence if no step of the batch named it: an OSError (a full
    disk, a file beside the tables) or an error of the table format's own package (``own``), the
    batch and the table format (``label``) named; anything else (Spark's own errors, which name
    a lost process) as it is."""
    if isinstance(exc, SparkCDCError) or not isinstance(exc, (OSError, *own)):
        return exc
    said = str(exc) if isinstance(exc, OSError) else f"{type(exc).__name__}: {exc}"
    return SinkError(
        f"writing batch {batch_id} to {label} failed: {' '.join(said.split())}; once that is "
        "fixed, run the pipeline again: it goes on from its last committed batch, writing "
        "nothing twice."
    )


class TableRead(Protocol):
    """A sink's tables read back (``sparkcdc verify``): the rows of the replica or change log
    of ``name`` (only ``columns`` if given; of a change log only the rows whose
    ``source.position`` sorts after ``since``), None while the table does not exist."""

    def __call__(
        self,
        name: TableName,
        kind: TableKind,
        columns: Sequence[str] | None = None,
        since: str | None = None,
    ) -> pa.Table | None: ...


class ChunkWriter(Protocol):
    """Executor side of the initial snapshot: the files a run of chunks (one table's
    consecutive splits, all kept in ``store``) becomes in the sink, written by the task that
    read them, so the driver's sink only commits them. ``fresh``: a split was read now
    (rewrite); else an earlier attempt's files are kept. ``database``: the rows' ``source.db``
    where the table's first name part is a schema. ``changelog``: the change log's file too
    (``sink.snapshot_in_changelog``)."""

    def __call__(
        self,
        results: Sequence[SplitResult],
        schema: TableSchema,
        store: SplitStore,
        fresh: bool,
        database: str | None,
        changelog: bool = True,
    ) -> ChunkFiles: ...


@dataclass(frozen=True)
class SinkType:
    """A sink type: its name (``sink.type``), its own keys of the ``sink`` section (beside
    ``type``, ``path``, ``maintenance`` and ``storage_options``; read as text into
    ``SinkConfig.settings``, e.g. a table catalog's name) and its parts (module docstring)."""

    name: str
    check: Callable[[SinkConfig], None]
    open: Callable[[SinkConfig, SinkContext], Sink]
    chunk_writer: ChunkWriter | None = None
    keys: tuple[str, ...] = ()
    # called before Spark starts with the captured tables: the sink may open them meanwhile;
    # gives what stops that (the run calls it before it ends)
    open_ahead: Callable[[SinkConfig, Sequence[TableName]], Callable[[], None]] | None = None
    reader: Callable[[SinkConfig], TableRead] | None = None  # None: its tables cannot be read
    keeper: Callable[[SinkConfig], TableKeeper] | None = None  # None: no upkeep (compact refuses)
    gone_keys: Callable[[SinkConfig], GoneKeys] | None = None  # None: no on_log_gone: resnapshot
    # the names of the tables that hold micro-batch ``batch_id`` of pipeline ``app`` (or a later
    # one): what a torn offset file's repair asks; None: the sink cannot tell (it is refused)
    batch_holders: Callable[[SinkConfig, str, int], list[str]] | None = None
