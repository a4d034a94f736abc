"""The Delta sink: ``foreachBatch`` writer of every captured table's change log and replica.

For micro-batch N (rows of :data:`~sparkcdc.core.event.envelope_schema` in log order, collected
once with ``df.toArrow()``; a stream with the option ``log_dir`` carries one ``f`` event instead,
whose file holds them, :mod:`sparkcdc.store.batch_files`):

1. Schema rows (``op = 's'``), in order: each announced schema is written to
   ``<sink>/_sparkcdc/schemas/<db>.<table>.<schema_id>.json`` and the table's Delta tables are
   created or evolved (:mod:`.lake`). DDL as it reaches the sink:

   ===================  ===============================================================
   CREATE TABLE         creates ``<db>/<t>`` and ``<db>/<t>__changelog``
   ADD COLUMN           adds the column to the replica and to the change log's structs;
                        existing rows get the source's ``fill`` (a constant or implicit
                        default), else null
   RENAME COLUMN        the new column gets the old one's values (``copy``); the old
                        column stays, as a dropped one
   DROP COLUMN          keeps the column; rows written afterwards hold null in it
   MODIFY/CHANGE type   keeps the Delta type; values are cast to it (a failing cast stops
                        the batch with SinkError, as a change between an array and any
                        other type always does); NULLs made NOT NULL get ``nulls``
   TRUNCATE TABLE       deletes every replica row (in the batch's replica commit) and
                        becomes a ``t`` row of the change log (``changes/truncates``)
   DROP TABLE           deletes every replica row; the change log stays
   RENAME TABLE         the new name starts new Delta tables; the old ones stay as they were
   ===================  ===============================================================

   What a schema change did to the rows the table held (``fill``, ``copy``, ``nulls`` of the
   ``s`` row's ``existing``) is applied to the replica's rows before the batch's changes, in a
   commit of its own transaction id, and to the batch's rows changed before the DDL
   (:mod:`~sparkcdc.sinks.changes.effects`); where the source could not compute it
   (``resnapshot``) the stream reads the table again by itself (an incremental snapshot;
   docs/schema-changes.md).

   A table keyed by an array column (``array<E>``) stops the batch with SinkError: a MERGE
   cannot match rows on arrays.

2. Changes (c/u/d/r, and t for a TRUNCATE) per table (:mod:`.table_writer`): row images become
   typed structs (:mod:`~sparkcdc.core.convert`), with the schema version each row names
   (``schema_id``), widened to the table's current columns. A snapshot chunk kept in the split store
   (``op = 'k'``) becomes its ``r`` rows, read from there already typed (:mod:`.chunk_rows`).
   A value an update left out of the log (PostgreSQL's unchanged TOAST) is filled from the
   key's change before or the replica (:mod:`~sparkcdc.sinks.changes.unchanged`).
3. Change log ``<db>/<t>__changelog``: one append of op, before, after, source, transaction
   (a ``t`` row: before and after null).
4. Replica ``<db>/<t>``: one MERGE on the key with the latest change per key in the batch by log
   order; deletes delete, inserts and updates upsert (an update that changes the key deletes the
   old key). Done as a copy-on-write of the data files the batch's keys reach (:mod:`.rewrite`),
   else by delta-rs's MERGE. A batch of nothing but chunks of the initial snapshot is appended
   instead, while the table has had nothing else (:class:`~.chunk_rows.AppendBook`): the Parquet
   files its tasks wrote for both tables are linked in and committed (:mod:`.chunk_files`).
   Chunks of an incremental snapshot, and batches of nothing but inserts (an append-only table),
   are appended where the replica's file statistics prove it holds none of their keys
   (:func:`~.chunk_rows.disjoint`).

   Tables are written a few at a time (each table's commits are its own), the tables holding
   nothing but chunks of an incremental snapshot after all others: before them the sink touches
   its mark (the pipeline's batch mark, :mod:`sparkcdc.spark.incremental.batch_mark`), which
   lets the next window's reads start.
   With ``sink.history``, a table's versions go to ``<db>/<t>__history`` after its change log
   and replica, in a commit of the same transaction identifier (:mod:`.history`).
5. With ``pipeline.transactions``, each source transaction's ``BEGIN`` and ``END`` rows are
   appended to ``<sink>/_sparkcdc/transactions`` (:mod:`.transactions`).
6. Notifications of the incremental snapshots (``op = 'n'``) are no changes: they are logged and
   appended to ``<sink>/_sparkcdc/notifications`` (:mod:`.notifications`).

All commits carry the Delta transaction identifier (pipeline id, batch id), so a replay of batch
N after a crash writes nothing twice (:mod:`.commits`); on a folder lake the sink writes the
change log's appends and the copy-on-write's commits itself (:mod:`.log_commit`).

With an upkeep schedule (``sink.maintenance``), a micro-batch that comes when the upkeep is due
first compacts and vacuums the tables (:mod:`.upkeep`): between two batches in this thread, so
no commit runs beside it, and never before the first batch of a run (a replay of the batch the
last run stopped in may read the replica as it was before it).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc
from deltalake.exceptions import DeltaError

from sparkcdc.core.errors import StoreUnavailable
from sparkcdc.core.event import OP_CHUNK, OP_NOTICE, OP_SCHEMA
from sparkcdc.core.history_spec import HistorySpec
from sparkcdc.core.images import TypedImages
from sparkcdc.core.schema_policy import SchemaPolicy
from sparkcdc.core.table_name import TableName
from sparkcdc.sinks import store_retry
from sparkcdc.sinks.batch_events import per_table, read_micro_batch
from sparkcdc.sinks.changes import chunks, history_plan
from sparkcdc.sinks.changes.effects import Effect
from sparkcdc.sinks.changes.schema_rows import read_schema_rows
from sparkcdc.sinks.delta import chunk_rows, commits, notifications, opened, transactions
from sparkcdc.sinks.delta.lake import Lake
from sparkcdc.sinks.delta.table_writer import TableWriter
from sparkcdc.sinks.port import (
    BatchFrame,
    Mark,
    Sink,
    SinkFigures,
    batch_failed,
)
from sparkcdc.sinks.storage import LakeStorage, as_storage
from sparkcdc.sinks.upkeep import Schedule

log = logging.getLogger("sparkcdc.sink")

TABLE_WRITERS = 4  # tables of one micro-batch written at the same time (bench section 9)


@dataclass
class BatchReport:
    """What one micro-batch wrote."""

    batch_id: int
    changes: int
    tables: list[str]
    skipped: list[str]  # tables whose commits this batch had already made (a replay)
    last_event_ts_ms: int | None
    notifications: int = 0  # op 'n' rows: kept and logged, not changes
    transactions: int = 0  # BEGIN/END records (pipeline.transactions)
    ops: dict[tuple[str, str], int] = field(default_factory=dict)  # (table, op) -> changes


class DeltaSink(Sink):
    """``writeStream.foreachBatch(DeltaSink(path, app_id))``; see the module docstring.
    ``path``: the lake's folder, or its :class:`~.storage.LakeStorage` (object storage).
    ``snapshot_in_changelog`` false: the snapshots' ``r`` rows go to the replica only;
    ``change_data_feed`` false: the replicas it creates have no change data feed;
    ``transactions``: keep each source transaction's ``BEGIN``/``END`` records; ``history``:
    the tables whose versions go to a history table (``sink.history``)."""

    def __init__(
        self,
        path: str | LakeStorage,
        app_id: str | Callable[[], str],
        mark: Mark | None = None,
        upkeep: Schedule | None = None,
        snapshot_in_changelog: bool = True,
        schema_changes: SchemaPolicy | None = None,
        change_data_feed: bool = True,
        transactions: bool = False,
        history: HistorySpec | None = None,
    ) -> None:
        self.storage = as_storage(path)
        self.history = history or HistorySpec()  # sink.history: the tables' SCD type 2 tables
        self.transactions = transactions
        self.path = self.storage.uri
        self.upkeep = upkeep  # compaction and vacuum between batches (module docstring)
        self.mark = mark  # rewritten once the stream's changes of a batch are committed
        self._marked = False
        self._app_id = app_id
        self.lake = Lake(self.storage, schema_changes, change_data_feed)
        self.batches = 0
        self.changes = 0
        self.last_event_ts_ms: int | None = None
        # change-log rows per (table, op), replaced (never changed in place) after each batch,
        # so another thread may read it at any moment
        self.events: dict[tuple[str, str], int] = {}
        self.last_commit_s: float | None = None  # wall time the last batch was written
        self.last_report: BatchReport | None = None
        self.error: BaseException | None = None
        self._appends = chunk_rows.AppendBook(self.storage)
        self.snapshot_in_changelog = snapshot_in_changelog

    @property
    def app_id(self) -> str:
        if callable(self._app_id):
            self._app_id = self._app_id()
        return self._app_id

    def write_batch(self, batch: BatchFrame, batch_id: int) -> None:
        try:
            if self.upkeep is not None and self.batches and self.upkeep.due():
                self.upkeep.run()  # Spark committed the batch before this one
            started = time.perf_counter()
            read = read_micro_batch(batch)
            read_s = time.perf_counter() - started
            self.write(read.envelope, int(batch_id), read_s=read_s, images=read.images,
                       open_end=read.open_end)  # fmt: skip
        except BaseException as exc:
            failed = self._store_failed(exc)
            self.error = failed or batch_failed(exc, batch_id, "Delta", (DeltaError,))
            if self.error is not exc:
                raise self.error from exc
            raise

    def _store_failed(self, exc: BaseException) -> StoreUnavailable | None:
        """The sentence of the lake's object storage failing past the retries, if ``exc``
        comes from that (delta-rs's error, perhaps inside another; :mod:`..store_retry`)."""
        return store_retry.as_unavailable(exc, self.storage.store) if self.storage.remote else None

    def figures(self) -> SinkFigures:
        upkeep = None if self.upkeep is None else self.upkeep.figures()
        return SinkFigures(self.batches, self.changes, self.events, self.last_event_ts_ms,
                           self.last_commit_s, self.error, upkeep)  # fmt: skip

    def upkeep_at_end(self) -> None:
        """Compaction and vacuum if due: no batch is written again (:mod:`.upkeep`)."""
        if self.upkeep is not None and self.upkeep.due():
            try:
                self.upkeep.run()
            except Exception as exc:
                failed = self._store_failed(exc)
                if failed is None or failed is exc:
                    raise
                raise failed from exc

    # -------------------------------------------------------------- one batch
    def write(
        self,
        envelope: pa.Table,
        batch_id: int,
        read_s: float | None = None,
        images: Sequence[TypedImages] = (),
        open_end: bool = False,
    ) -> BatchReport:
        """Write one micro-batch (see the module docstring); idempotent per ``batch_id``.
        ``images``: the typed images of changes whose JSON images are null; ``open_end``: the
        batch ends inside a transaction (its ``END`` record comes with a later batch)."""
        started = time.perf_counter()
        self.lake.source = envelope.schema.field("source").type
        ops = envelope.column("op").to_pylist() if envelope.num_rows else []
        self._open_tables(envelope)
        schema_rows = read_schema_rows(envelope, ops, self.lake)
        envelope, resets, effects = schema_rows.envelope, schema_rows.resets, schema_rows.effects
        writer = TableWriter(self.storage, self.lake, self._appends, self.app_id, batch_id,
                             self.snapshot_in_changelog, images, self.history,
                             history_plan.resets_of(envelope, resets))  # fmt: skip
        for name, found_effects in effects.items():  # the rows held before this batch
            writer.existing_rows(name, found_effects)
        for i in (i for i, op in enumerate(ops) if op == OP_CHUNK):
            self.lake.read_with(envelope.slice(i, 1).to_pylist()[0])
        kept = pa.array([OP_SCHEMA, OP_NOTICE])
        changes = pc.invert(pc.is_in(envelope.column("op"), kept)) if envelope.num_rows else None
        tables: list[str] = []
        skipped: list[str] = []
        written: dict[tuple[str, str], int] = {}
        last_ts: int | None = None
        self._marked = False
        if changes is not None and pc.any(changes).as_py():
            positions = pc.indices_nonzero(changes)
            rows = envelope.take(positions).append_column("_pos", positions.cast(pa.int64()))
            named = per_table(rows)
            # the stream's changes first, then the mark, then snapshot chunks (module docstring)
            later = [chunks.only_incremental_chunks(part) for _, part in named]
            for chunk in (False, True):
                group = [p for p, c in zip(named, later, strict=True) if c == chunk]
                if chunk and group:
                    self._touch_mark()
                for table, (wrote, counts) in _write_tables(writer, group, resets, chunk, effects):
                    (tables if wrote else skipped).append(str(table))
                    written.update({(str(table), op): n for op, n in counts.items()})
            ts = pc.max(rows.column("source").combine_chunks().field("ts_ms")).as_py()
            last_ts = None if ts is None else int(ts)
        for name in resets:
            if name not in {TableName.parse(t) for t in tables + skipped}:
                writer.reset_only(name)
        self.lake.drop_pending()
        self._touch_mark()
        records = 0
        if self.transactions:
            records = transactions.write_transactions(
                self.storage, envelope, open_end, self.app_id, batch_id
            )
        noticed = notifications.record(self.storage, envelope, self.app_id, batch_id)
        count = sum(written.values())
        report = BatchReport(batch_id, count, tables, skipped, last_ts, noticed, records, written)
        took = f"read {read_s:.2f}s, " if read_s is not None else ""
        self._account(report, f" ({took}written in {time.perf_counter() - started:.2f}s)")
        return report

    def _open_tables(self, envelope: pa.Table) -> None:
        """Open the Delta tables of every table the batch names, :data:`TABLE_WRITERS` at a
        time (each open replays the table's log; kept open, :mod:`.opened`): a run's first
        batch announces every captured table."""
        opened.stop_ahead()  # the tables opened while Spark started: the rest are opened here
        if envelope.num_rows == 0:
            return
        tables = pa.table({"db": envelope.column("db"), "table": envelope.column("table")})
        found = tables.group_by(["db", "table"]).aggregate([]).to_pylist()
        paths = [
            path(TableName(t["db"], t["table"]))
            for t in found
            if t["db"] and t["table"]  # a notice of the whole snapshot names no table
            for path in (self.lake.replica, self.lake.changelog)
        ]
        if len(paths) > 2:
            with ThreadPoolExecutor(TABLE_WRITERS) as pool:
                list(pool.map(commits.open_table, paths))

    def _touch_mark(self) -> None:
        """Once per batch: the stream's changes of this batch are committed (the mark)."""
        if self.mark is not None and not self._marked:
            self._marked = True
            self.mark.touch()

    def _account(self, report: BatchReport, timing: str) -> None:
        events = dict(self.events)
        for key, n in report.ops.items():
            events[key] = events.get(key, 0) + n
        self.events = events
        self.last_commit_s = time.time()
        self.batches += 1
        self.changes += report.changes
        if report.last_event_ts_ms is not None:
            self.last_event_ts_ms = max(self.last_event_ts_ms or 0, report.last_event_ts_ms)
        self.last_report = report
        if report.changes:
            done = _listed(report.tables) or "nothing new"
            skipped = _listed(report.skipped)
            extra = f" (already written before: {skipped})" if skipped else ""
            log.info(
                "batch %d: %d changes to %s; replica and change log written%s%s",
                report.batch_id,
                report.changes,
                done,
                extra,
                timing,
                extra={"batch": report.batch_id, "table": ", ".join(report.tables) or None},
            )


def _write_tables(
    writer: TableWriter,
    group: list[tuple[TableName, pa.Table]],
    resets: dict[TableName, int],
    incremental_only: bool,
    effects: dict[TableName, list[Effect]],
) -> list[tuple[TableName, tuple[bool, dict[str, int]]]]:
    """:meth:`.TableWriter.changes` of each table of ``group``, :data:`TABLE_WRITERS` at a time
    (each table's commits are its own; delta-rs works outside the GIL); the results in
    ``group``'s order. A table that fails stops the batch once the others are written."""

    def one(item: tuple[TableName, pa.Table]) -> tuple[bool, dict[str, int]]:
        name, part = item
        return writer.changes(name, part, resets.get(name), incremental_only, effects.get(name, []))

    if len(group) < 2:
        return [(name, one((name, part))) for name, part in group]
    with ThreadPoolExecutor(min(TABLE_WRITERS, len(group))) as pool:
        futures = [pool.submit(one, item) for item in group]
        wait(futures)
    return [(name, f.result()) for (name, _), f in zip(group, futures, strict=True)]


def _listed(tables: list[str], shown: int = 10) -> str:
    """``tables`` for a log line: a long list as its count and its first ``shown`` names."""
    if len(tables) <= shown:
        return ", ".join(tables)
    return f"{len(tables)} tables ({', '.join(tables[:shown])}, …)"
