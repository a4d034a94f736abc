"""The Iceberg sink: ``foreachBatch`` writer of every captured table's change log and replica as
Iceberg tables, through pyiceberg and a catalog (:mod:`.catalog`; the tables: :mod:`.tables`).

A micro-batch is read as for every table format (:mod:`sparkcdc.sinks.changes`): schema rows
create or evolve the tables (a new column by schema evolution; a dropped one stays, a retyped
one keeps its type and values are cast to it, as in Delta), a TRUNCATE or DROP TABLE empties the
replica and becomes a ``t`` row of the change log, snapshot chunks become their ``r`` rows. Then,
per table, one after the other:

1. what the batch's schema changes did to the rows the replica held (``fill``, ``copy``,
   ``nulls``): the replica rewritten in one commit of the transaction id
   ``<pipeline>/existing`` (a DDL is rare; the rows are read once);
2. the change log: one append of op, before, after, source, transaction;
3. the replica: the latest change per key in the batch, as one transaction deleting every key
   the batch changed (every row after a TRUNCATE) and appending the rows upserted: Iceberg's
   copy-on-write of the data files those keys reach (pyiceberg writes no delete files).

4. with ``sink.history``, the table's versions to ``<db>.<t>__history`` (:mod:`.history`).

Each commit's snapshot summary carries the pipeline id and batch id, so a batch replayed after a
crash writes nothing twice (:mod:`.tables`). With ``pipeline.transactions`` each source
transaction's ``BEGIN`` and ``END`` rows go to the Iceberg table ``_sparkcdc.transactions``
(:mod:`sparkcdc.sinks.changes.transactions`). Notifications of the incremental snapshots go to
the Iceberg table ``_sparkcdc.notifications``. With an upkeep schedule (``sink.maintenance``), a
micro-batch that comes when the upkeep is due first compacts the tables and expires their old
snapshots (:mod:`.upkeep`), on the sink's own tables, once Spark committed the batch before.
"""

from __future__ import annotations

import logging
import os
import time
import uuid
from collections.abc import Callable, Sequence
from urllib.parse import urlsplit

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyiceberg.exceptions import CommitFailedException, ValidationException
from pyiceberg.table import Table

from sparkcdc.config.model import SinkConfig
from sparkcdc.core.convert import cast_struct
from sparkcdc.core.errors import SinkError
from sparkcdc.core.event import OP_CHUNK, OP_NOTICE, OP_READ, OP_SCHEMA
from sparkcdc.core.images import TypedImages
from sparkcdc.core.schema_policy import SchemaPolicy
from sparkcdc.core.table_name import TableName
from sparkcdc.sinks.batch_events import per_table, read_micro_batch
from sparkcdc.sinks.changes import (
    chunks,
    history_plan,
    notices,
    run_files,
    transactions,
    unchanged,
)
from sparkcdc.sinks.changes.effects import (
    TXN_SUFFIX,
    Effect,
    apply_to_images,
)
from sparkcdc.sinks.changes.history import Reset
from sparkcdc.sinks.changes.history_plan import HistoryBatch
from sparkcdc.sinks.changes.lake import Lake, changelog_schema
from sparkcdc.sinks.changes.latest import OP_COLUMN, ORDER_COLUMN, check_key, latest_changes
from sparkcdc.sinks.changes.schema_rows import read_schema_rows
from sparkcdc.sinks.iceberg import history, tables
from sparkcdc.sinks.iceberg.catalog import open_catalog
from sparkcdc.sinks.iceberg.tables import IcebergTables, Identifier
from sparkcdc.sinks.port import (
    BatchFrame,
    ChunkRef,
    Mark,
    Sink,
    SinkFigures,
    TableKind,
    batch_failed,
)
from sparkcdc.sinks.storage import LakeStorage
from sparkcdc.sinks.upkeep import Schedule

ICEBERG_ERRORS = (CommitFailedException, ValidationException)  # pyiceberg's, named as is

log = logging.getLogger("sparkcdc.sink")

NOTIFICATIONS = ("_sparkcdc", "notifications")
TRANSACTIONS = ("_sparkcdc", "transactions")
COMMIT_ATTEMPTS = 5  # a commit that lost a race with another writer, tried again


class IcebergSink(Sink):
    """``writeStream.foreachBatch(IcebergSink(config, app_id))``; see the module docstring."""

    def __init__(
        self,
        config: SinkConfig,
        app_id: Callable[[], str],
        mark: Mark | None = None,
        upkeep: Schedule | None = None,
        tables: IcebergTables | None = None,
        schema_changes: SchemaPolicy | None = None,
        transactions: bool = False,
    ) -> None:
        self.tables = tables or IcebergTables.of(open_catalog(config), anew=True)
        self.history = config.history  # sink.history: the tables' SCD type 2 tables
        self._resets: dict[TableName, Reset] = {}  # the batch's TRUNCATEs and DROPs
        self.transactions = transactions  # BEGIN/END records (module docstring)
        self.upkeep = upkeep  # compaction and snapshot expiry between batches (module docstring)
        lake = LakeStorage(config.path, config.storage_options)
        self.lake = Lake(lake, self.tables, schema_changes)
        self.snapshot_in_changelog = config.snapshot_in_changelog
        self.mark = mark
        self._app_id_of = app_id
        self._app_id: str | None = None
        self.batches = 0
        self.changes = 0
        self.events: dict[tuple[str, str], int] = {}  # replaced after each batch, never changed
        self.last_event_ts_ms: int | None = None
        self.last_commit_s: float | None = None
        self.error: BaseException | None = None
        self._images: Sequence[TypedImages] = ()  # the batch's typed row images

    @property
    def app_id(self) -> str:
        if self._app_id is None:
            self._app_id = self._app_id_of()
        return self._app_id

    def write_batch(self, batch: BatchFrame, batch_id: int) -> None:
        try:
            if self.upkeep is not None and self.batches and self.upkeep.due():
                self.upkeep.run()  # Spark committed the batch before this one
            started = time.perf_counter()
            read = read_micro_batch(batch)
            self.write(read.envelope, batch_id, read.images, time.perf_counter() - started,
                       open_end=read.open_end)  # fmt: skip
        except BaseException as exc:
            self.error = batch_failed(exc, batch_id, "Iceberg", ICEBERG_ERRORS)
            if self.error is not exc:
                raise self.error from exc
            raise

    def figures(self) -> SinkFigures:
        upkeep = None if self.upkeep is None else self.upkeep.figures()
        return SinkFigures(self.batches, self.changes, self.events, self.last_event_ts_ms,
                           self.last_commit_s, self.error, upkeep)  # fmt: skip

    def upkeep_at_end(self) -> None:
        """Compaction and snapshot expiry if due: no batch is written again (:mod:`.upkeep`)."""
        if self.upkeep is not None and self.upkeep.due():
            self.upkeep.run()

    # -------------------------------------------------------------- one batch
    def write(
        self,
        envelope: pa.Table,
        batch_id: int,
        images: Sequence[TypedImages] = (),
        read_s: float = 0.0,
        open_end: bool = False,
    ) -> None:
        """Write one micro-batch (module docstring); idempotent per ``batch_id``; ``read_s``:
        how long reading it took; ``open_end``: the batch ends inside a transaction."""
        started = time.perf_counter()
        self._images = images
        self.lake.source = envelope.schema.field("source").type
        ops = envelope.column("op").to_pylist() if envelope.num_rows else []
        schema_rows = read_schema_rows(envelope, ops, self.lake)
        envelope, resets, effects = schema_rows.envelope, schema_rows.resets, schema_rows.effects
        self._resets = history_plan.resets_of(envelope, resets)
        for name, found_effects in effects.items():
            self._existing_rows(name, found_effects, batch_id)
        for i in (i for i, op in enumerate(ops) if op == OP_CHUNK):
            self.lake.read_with(envelope.slice(i, 1).to_pylist()[0])
        written: dict[tuple[str, str], int] = {}
        touched: list[str] = []
        kept = pa.array([OP_SCHEMA, OP_NOTICE])
        if envelope.num_rows:
            changes = pc.invert(pc.is_in(envelope.column("op"), kept))
            positions = pc.indices_nonzero(changes)
            rows = envelope.take(positions).append_column("_pos", positions.cast(pa.int64()))
            for name, part in per_table(rows) if rows.num_rows else []:
                counts = self._table(name, part, resets.get(name), effects.get(name, []), batch_id)
                written.update({(str(name), op): n for op, n in counts.items()})
                touched.append(str(name))
            ts = pc.max(rows.column("source").combine_chunks().field("ts_ms")).as_py()
            if ts is not None:
                self.last_event_ts_ms = max(self.last_event_ts_ms or 0, int(ts))
        for name in resets:
            if str(name) not in touched:
                self._reset_only(name, batch_id)
        self.lake.drop_pending()
        if self.mark is not None:
            self.mark.touch()
        if self.transactions:
            records = transactions.transaction_records(envelope, open_end)
            self._append_own(TRANSACTIONS, transactions.with_batch_id(records, batch_id), batch_id)
        notices.record(envelope, lambda found: self._notifications(found, batch_id))
        self._account(batch_id, written, touched, (read_s, time.perf_counter() - started))

    def _table(
        self,
        name: TableName,
        rows: pa.Table,
        reset_at: int | None,
        effects: list[Effect],
        batch_id: int,
    ) -> dict[str, int]:
        """Write one table's changes of the batch: its change log, then its replica."""
        latest = self.lake.schema(name, rows.column("schema_id")[-1].as_py())
        columns = self.lake.columns(name, latest)
        check_key(latest, columns)
        if chunks.only_initial_chunks(rows):
            refs = chunks.chunk_refs(rows)
            if run_files.adoptable(refs, columns, self.snapshot_in_changelog):  # tasks wrote them
                self._adopt(name, refs, columns, latest.key, batch_id)
                if self.history.of(name) is not None:  # the chunks' rows read back for it
                    typed, before, after = self._typed(name, rows, columns, batch_id)
                    found = HistoryBatch(name, latest.key, columns, typed, before, after,
                                         self._resets.get(name))  # fmt: skip
                    self._history(found, batch_id)
                return {OP_READ: sum(int(r["rows"]) for r in refs)}
        left = unchanged.marked(rows)  # values an update left out of the log (TOAST)
        rows, before, after = self._typed(name, rows, columns, batch_id)
        if left:
            replica = _ReplicaBefore(self.tables, name, self.app_id, batch_id)
            images = (before, after)
            after = unchanged.fill(left, rows, images, latest.key, replica, reset_at, str(name))
        merged_after = after  # the replica's; the change log and the history keep the images
        if effects:
            positions = rows.column("_pos").combine_chunks()
            merged_after = apply_to_images(effects, positions, after)
        source = rows.column("source")
        changelog = pa.Table.from_arrays(
            [rows.column("op"), before, after, source, rows.column("transaction")],
            schema=changelog_schema(columns, source.type),
        )
        if not self.snapshot_in_changelog:
            changelog = changelog.filter(pc.not_equal(changelog.column("op"), OP_READ))
        props = tables.marks(self.app_id, batch_id, _last_position(source))
        actions = latest_changes(rows, before, merged_after, columns, latest.key, reset_at)
        key = [f.name for f in columns if f.name.lower() in {k.lower() for k in latest.key}]
        upserts = actions.filter(pc.equal(actions.column(OP_COLUMN), "u"))
        upserts = upserts.drop_columns([OP_COLUMN, ORDER_COLUMN])
        label = str(name)
        try:
            self._commit(tables.changelog_id(name),
                         lambda t: tables.append_once(t, changelog, props))  # fmt: skip
            self._commit(tables.replica_id(name), lambda t: tables.upsert_once(
                t, upserts, actions.select(key), key, reset_at is not None, props))  # fmt: skip
            self._history(HistoryBatch(name, latest.key, columns, rows, before, after,
                                       self._resets.get(name)), batch_id)  # fmt: skip
        except SinkError:
            raise
        except Exception as exc:
            raise SinkError(
                f"writing batch {batch_id} of {label} to Iceberg failed: {exc}", table=label
            ) from exc
        counts = pc.value_counts(rows.column("op")).to_pylist() if rows.num_rows else []
        return {str(c["values"]): int(c["counts"]) for c in counts}

    def _typed(
        self, name: TableName, rows: pa.Table, columns: list[pa.Field], batch_id: int
    ) -> tuple[pa.Table, pa.StructArray, pa.StructArray]:
        """``rows`` with each ``k`` event replaced by its ``r`` rows, and their typed images."""

        def decoded(inline: pa.Table) -> tuple[pa.StructArray, pa.StructArray]:
            ids = inline.column("schema_id").to_pylist()
            return self.lake.images(name, inline, ids, columns, self._images)

        if not chunks.has_chunks(rows):
            before, after = decoded(rows)
            return rows, before, after
        try:
            rows, before, after = chunks.with_chunk_rows(rows, columns, decoded)
        except (OSError, ValueError) as exc:
            raise SinkError(f"batch {batch_id} of {name}: {exc}.", table=str(name)) from exc
        whole = after.combine_chunks() if isinstance(after, pa.ChunkedArray) else after
        assert isinstance(whole, pa.StructArray)
        return rows, before, whole

    def _adopt(
        self,
        name: TableName,
        refs: list[ChunkRef],
        columns: list[pa.Field],
        key: Sequence[str],
        batch_id: int,
    ) -> None:
        """Add the data files the snapshot's tasks wrote for a batch of initial chunks to the
        change log and the replica as they are (the replica's keys they hold replaced)."""
        props = tables.marks(self.app_id, batch_id, None)
        tag = f"{self.app_id}/{name}/{batch_id}"
        names = [f.name for f in columns if f.name.lower() in {k.lower() for k in key}]

        def paths(kind: TableKind) -> list[str]:
            return list(dict.fromkeys(r["files"][kind]["path"] for r in refs))

        def place(path: str, folder: str) -> str:
            file = f"{uuid.uuid5(uuid.NAMESPACE_URL, tag + '/' + path)}.parquet"
            storage = self.lake.storage
            local = folder if storage.remote else urlsplit(folder).path
            if not storage.remote:
                os.makedirs(local, exist_ok=True)
            run_files.place_file(storage, path, local, file)
            return f"{folder}/{file}"

        try:
            if self.snapshot_in_changelog:
                logged = paths("changelog")
                self._commit(tables.changelog_id(name), lambda t: tables.add_files_once(
                    t, logged, None, (), props, place))  # fmt: skip
            held = paths("replica")
            keys = pa.concat_tables([pq.read_table(p, columns=names) for p in held])
            self._commit(tables.replica_id(name), lambda t: tables.add_files_once(
                t, held, keys, names, props, place))  # fmt: skip
        except Exception as exc:
            raise SinkError(
                f"adding the snapshot's files of batch {batch_id} of {name} to Iceberg failed: "
                f"{exc}",
                table=str(name),
            ) from exc

    def _existing_rows(self, name: TableName, effects: list[Effect], batch_id: int) -> None:
        """The replica's rows as the batch's schema changes left them at the source."""
        table = self.tables.table(tables.replica_id(name))
        if table is None:
            return
        props = tables.marks(self.app_id + TXN_SUFFIX, batch_id, None)
        try:
            held = table.scan().to_arrow()
            if held.num_rows == 0:
                return
            struct = pa.StructArray.from_arrays(
                [c.combine_chunks() for c in held.columns], names=held.column_names
            )
            behind = pa.repeat(pa.scalar(-1, pa.int64()), held.num_rows)
            changed = pa.Table.from_struct_array(apply_to_images(effects, behind, struct))
            if self._commit(tables.replica_id(name),
                            lambda t: tables.overwrite_once(t, changed, props)):  # fmt: skip
                log.info("batch %d: the rows %s held were changed as its schema change "
                         "changed them at the source", batch_id, name)  # fmt: skip
        except Exception as exc:
            raise SinkError(
                f"changing the rows of {name} as its schema change did failed: {exc}",
                table=str(name),
            ) from exc

    def _reset_only(self, name: TableName, batch_id: int) -> None:
        """A DROP TABLE or TRUNCATE with no change of the table in this batch."""
        if self.tables.table(tables.replica_id(name)) is None:
            return
        props = tables.marks(self.app_id, batch_id, None)
        empty = pa.table({})
        self._commit(tables.replica_id(name),
                     lambda t: tables.upsert_once(t, empty, empty, (), True, props))  # fmt: skip
        columns = self.lake.stored_columns(name) or []
        if self.history.of(name) is not None and columns:
            nothing = pa.nulls(0, pa.struct(columns))
            assert isinstance(nothing, pa.StructArray)
            source = pa.struct([("ts_ms", pa.int64()), ("position", pa.string())])
            rows = pa.table({"op": pa.array([], pa.string()), "source": pa.nulls(0, source),
                             "_pos": pa.array([], pa.int64())})  # fmt: skip
            self._history(HistoryBatch(name, self.lake.key_of(name), columns, rows, nothing,
                                       nothing, self._resets.get(name)), batch_id)  # fmt: skip

    def _history(self, batch: HistoryBatch, batch_id: int) -> None:
        """The table's versions of the batch to its history table, after its replica."""
        if self.history.of(batch.name) is None:
            return
        props = tables.marks(self.app_id, batch_id, None)
        label = str(batch.name)
        try:
            history.write_history(self.tables, self.history, batch, props, self._commit)
        except SinkError:
            raise
        except Exception as exc:
            raise SinkError(
                f"writing batch {batch_id} of the history of {label} to Iceberg failed: {exc}",
                table=label,
            ) from exc

    def _notifications(self, rows: pa.Table, batch_id: int) -> bool:
        if rows.num_rows == 0:
            return False
        return self._append_own(NOTIFICATIONS, notices.with_batch_id(rows, batch_id), batch_id)

    def _append_own(self, ident: Identifier, found: pa.Table, batch_id: int) -> bool:
        """Append ``found`` to one of the sink's own tables once per batch (made if missing);
        False if there are none or this batch was appended before."""
        if found.num_rows == 0:
            return False
        if self.tables.table(ident) is None:
            self.tables.catalog.create_namespace_if_not_exists(ident[0])
            self.tables.keep(
                ident, self.tables.catalog.create_table_if_not_exists(ident, found.schema)
            )
        props = tables.marks(self.app_id, batch_id, None)
        return self._commit(ident, lambda t: tables.append_once(t, found, props))

    def _commit(self, ident: Identifier, write: Callable[[Table], bool]) -> bool:
        """``write`` to the table ``ident``; when another writer committed first, the table is
        loaded again (and ``write`` asks again whether it holds the batch) a few times."""
        for attempt in range(COMMIT_ATTEMPTS):
            table = self.tables.table(ident)
            if table is None:
                raise SinkError(f"the Iceberg table {'.'.join(ident)} is gone", table=ident[1])
            try:
                return write(table)
            except CommitFailedException:
                if attempt == COMMIT_ATTEMPTS - 1:
                    raise
                self.tables.keep(ident, self.tables.catalog.load_table(ident))
        return False

    def _account(
        self,
        batch_id: int,
        written: dict[tuple[str, str], int],
        touched: list[str],
        took: tuple[float, float],
    ) -> None:
        events = dict(self.events)
        for key, n in written.items():
            events[key] = events.get(key, 0) + n
        self.events = events
        count = sum(written.values())
        self.changes += count
        self.batches += 1
        self.last_commit_s = time.time()
        if count:
            log.info("batch %d: %d changes to %s; replica and change log written (read %.2fs, "
                     "written in %.2fs)", batch_id, count, ", ".join(touched), *took,
                     extra={"batch": batch_id, "table": ", ".join(touched) or None})  # fmt: skip


class _ReplicaBefore:
    """The replica of ``name`` as it was before batch ``batch_id`` (values TOAST left out)."""

    def __init__(self, found: IcebergTables, name: TableName, app: str, batch_id: int) -> None:
        self.table = found.table(tables.replica_id(name))
        self.app, self.batch_id = app, batch_id

    def rows(
        self, names: list[str], keys: list[unchanged.Key], fields: list[pa.Field]
    ) -> tuple[pa.StructArray, dict[unchanged.Key, int]]:
        empty = pa.StructArray.from_arrays([pa.nulls(0, f.type) for f in fields], fields=fields)
        if self.table is None or not keys:
            return empty, {}
        types = {f.name: f.type for f in fields}
        wanted = pa.table(
            {n: pa.array([k[i] for k in keys], types[n]) for i, n in enumerate(names)}
        )
        found = tables.rows_before(self.table, self.app, self.batch_id, names, wanted)
        if found is None or found.num_rows == 0:
            return empty, {}
        struct = pa.StructArray.from_arrays([c.combine_chunks() for c in found.columns],
                                            names=found.column_names)  # fmt: skip
        stored = cast_struct(struct, fields)
        index = pa.array(range(len(stored)), pa.int64())
        return stored, {k: i for i, k in enumerate(unchanged.keys_of(stored, names, index))}


def _last_position(source: pa.ChunkedArray) -> str | None:
    """The ``position`` of the last change's ``source`` (the batch's end in the log), if any."""
    if len(source) == 0 or source.type.get_field_index("position") < 0:
        return None
    last = source[len(source) - 1].as_py()
    value = last.get("position") if isinstance(last, dict) else None
    return None if value is None else str(value)
