"""The writing of one micro-batch's changes to one table's change log and replica (steps 2
to 4 of :mod:`.sink`), with what the batch's schema changes did to the rows before them, a
DROP TABLE's reset, and the adoption of the data files the snapshot tasks wrote."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial

import pyarrow as pa
import pyarrow.compute as pc

from sparkcdc.core.errors import SinkError
from sparkcdc.core.event import OP_CREATE, OP_READ
from sparkcdc.core.history_spec import HistorySpec
from sparkcdc.core.images import TypedImages
from sparkcdc.core.table_name import TableName
from sparkcdc.sinks.changes import chunks, run_files, unchanged
from sparkcdc.sinks.changes.effects import Effect, apply_to_images
from sparkcdc.sinks.changes.history import Reset
from sparkcdc.sinks.changes.history_plan import HistoryBatch
from sparkcdc.sinks.changes.lake import changelog_schema
from sparkcdc.sinks.changes.latest import check_key, latest_changes
from sparkcdc.sinks.delta import chunk_files, chunk_rows, commits, existing, history
from sparkcdc.sinks.delta.lake import Lake
from sparkcdc.sinks.delta.replica_rows import Replica
from sparkcdc.sinks.port import ChunkRef, TableKind
from sparkcdc.sinks.storage import LakeStorage

log = logging.getLogger("sparkcdc.sink")


@dataclass(frozen=True)
class TableWriter:
    """Writes the tables of micro-batch ``batch_id``, each table's commits carrying the
    transaction identifier (``app_id``, ``batch_id``): a replay writes nothing twice.
    ``snapshot_in_changelog`` false: the snapshots' ``r`` rows go to the replica only;
    ``images``: the typed images of the batch's changes whose JSON images are null;
    ``history``: the tables whose versions go to a history table (after the replica's commit:
    :mod:`.history`), ``resets``: each table's TRUNCATE or DROP of the batch."""

    storage: LakeStorage
    lake: Lake
    appends: chunk_rows.AppendBook
    app_id: str
    batch_id: int
    snapshot_in_changelog: bool = True
    images: Sequence[TypedImages] = ()
    history: HistorySpec = field(default_factory=HistorySpec)
    resets: dict[TableName, Reset] = field(default_factory=dict)

    def changes(
        self,
        name: TableName,
        rows: pa.Table,
        reset_at: int | None,
        incremental_only: bool,
        effects: list[Effect],
    ) -> tuple[bool, dict[str, int]]:
        """Write one table's changes (``incremental_only``: nothing but chunks of an incremental
        snapshot; ``effects``: of its schema changes on the rows before them); (whether anything
        was written, how many changes of each op)."""
        latest = self.lake.schema(name, rows.column("schema_id")[-1].as_py())
        columns = self.lake.columns(name, latest)
        check_key(latest, columns)
        chunks_only = chunks.only_initial_chunks(rows)
        if not chunks_only:
            self.appends.streamed(*name, self.app_id)
        elif self.appends.may_append(*name, self.app_id, self.lake.replica(name)):
            refs = chunks.chunk_refs(rows)
            if run_files.adoptable(refs, columns, self.snapshot_in_changelog):  # tasks wrote them
                read = sum(int(r["rows"]) for r in refs)
                adopted = self._adopt(name, refs)
                if self.history.of(name) is not None:  # the chunks' rows read back for it
                    typed, before, after = self._typed(name, rows, columns)
                    self._history(name, latest.key, columns, typed, before, _whole(after))
                return adopted, {OP_READ: read}
        left = unchanged.marked(rows)  # values an update left out of the log (TOAST)
        rows, before, after = self._typed(name, rows, columns)
        label = str(name)
        if left:  # filled before the change log and the replica are written
            replica = Replica(self.lake.replica(name), self.app_id, self.batch_id)
            images = (before, _whole(after))
            after = unchanged.fill(left, rows, images, latest.key, replica, reset_at, label)
        # the replica's rows changed before a schema change get what it gave the rest; the change
        # log and the history keep the images as logged
        merged_after = after
        if effects:
            merged_after = apply_to_images(effects, rows.column("_pos").combine_chunks(),
                                                    _whole(after))  # fmt: skip
        try:
            changelog = pa.Table.from_arrays(
                [rows.column("op"), before, after, rows.column("source"),
                 rows.column("transaction")],
                schema=changelog_schema(columns, rows.column("source").type),
            )  # fmt: skip
            if not self.snapshot_in_changelog:
                changelog = changelog.filter(pc.not_equal(changelog.column("op"), OP_READ))
            log_path, replica_path = self.lake.changelog(name), self.lake.replica(name)
            # new rows only (a chunk of an incremental snapshot, or inserts) whose keys the
            # replica's file statistics prove absent: appended, not merged
            appendable = incremental_only or (reset_at is None and _inserts_only(rows))
            if (chunks_only and self.appends.may_append(*name, self.app_id, replica_path)) or (
                appendable and chunk_rows.disjoint(replica_path, latest.key, merged_after)
            ):
                wrote = chunk_rows.append_chunks(
                    log_path, changelog, replica_path, merged_after, self.app_id, self.batch_id
                )
                self._history(name, latest.key, columns, rows, before, _whole(after))
                return wrote, _op_counts(rows)
            merged = partial(latest_changes, rows, before, _whole(merged_after), columns,
                             latest.key, reset_at)  # fmt: skip
            wrote = self._log_and_merge(name, changelog, merged, latest.key, reset_at)
            self._history(name, latest.key, columns, rows, before, _whole(after))
        except SinkError:
            raise
        except Exception as exc:
            raise SinkError(
                f"writing batch {self.batch_id} of {label} to Delta failed: {exc}", table=label
            ) from exc
        return wrote, _op_counts(rows)

    def _history(
        self,
        name: TableName,
        key: tuple[str, ...],
        columns: list[pa.Field],
        rows: pa.Table,
        before: pa.StructArray,
        after: pa.StructArray,
    ) -> bool:
        """The table's versions of the batch to its history table, if it keeps one."""
        if self.history.of(name) is None:
            return False
        found = HistoryBatch(name, key, columns, rows, before, after, self.resets.get(name))
        return history.write_history(self.storage, self.history, found, self.app_id,
                                     self.batch_id)  # fmt: skip

    def _typed(
        self, name: TableName, rows: pa.Table, columns: list[pa.Field]
    ) -> tuple[pa.Table, pa.StructArray, pa.StructArray | pa.ChunkedArray]:
        """``rows`` (with each ``k`` event replaced by its ``r`` rows) and their typed before
        and after images."""
        if not chunks.has_chunks(rows):
            before, after = self.lake.images(
                name, rows, rows.column("schema_id").to_pylist(), columns, self.images
            )
            return rows, before, after
        try:
            return chunks.with_chunk_rows(
                rows,
                columns,
                lambda inline: self.lake.images(
                    name, inline, inline.column("schema_id").to_pylist(), columns, self.images
                ),
            )
        except (OSError, ValueError) as exc:
            label = str(name)
            raise SinkError(f"batch {self.batch_id} of {label}: {exc}.", table=label) from exc

    def _log_and_merge(
        self,
        name: TableName,
        changelog: pa.Table,
        latest: Callable[[], pa.Table],
        key: tuple[str, ...],
        reset_at: int | None,
    ) -> bool:
        """The change log's append beside the replica's MERGE of the ``latest`` changes per key,
        each idempotent per batch id on its own; whether either wrote. On object storage the
        append runs while the MERGE is made (delta-rs commits outside the GIL); on a folder the
        sink's own commits are Python, and one after the other costs less."""
        log_path, replica_path = self.lake.changelog(name), self.lake.replica(name)
        if not self.storage.remote:
            logged = commits.append_changelog(log_path, changelog, self.app_id, self.batch_id)
            return commits.merge_replica(
                replica_path, latest(), key, self.app_id, self.batch_id, reset_at is not None
            ) or bool(logged)
        with ThreadPoolExecutor(1) as pool:
            appended = pool.submit(
                commits.append_changelog, log_path, changelog, self.app_id, self.batch_id
            )
            wrote_replica = commits.merge_replica(
                replica_path, latest(), key, self.app_id, self.batch_id, reset_at is not None
            )
            return bool(appended.result()) or wrote_replica

    def existing_rows(self, name: TableName, effects: list[Effect]) -> None:
        """The replica's rows as the batch's schema changes of ``name`` left them at the
        source (:mod:`.existing`), committed before the batch's changes of the table."""
        self.appends.streamed(*name, self.app_id)
        label = str(name)
        path = self.lake.replica(name)
        opened = commits.open_table(path)
        fields = commits.arrow_fields(opened) if opened is not None else []
        try:
            if existing.apply_to_replica(path, effects, fields, self.app_id, self.batch_id):
                log.info("batch %d: the rows %s held were changed as its schema change "
                         "changed them at the source", self.batch_id, label)  # fmt: skip
        except Exception as exc:
            raise SinkError(
                f"changing the rows of {label} as its schema change did failed: {exc}", table=label
            ) from exc

    def _adopt(self, name: TableName, refs: list[ChunkRef]) -> bool:
        """Commit the data files the snapshot tasks wrote for a batch of initial chunks
        (:mod:`.chunk_files`); False if its tables hold this batch already."""
        label = str(name)
        tag = f"{self.app_id}/{label}/{self.batch_id}"  # each commit's files named apart
        tables: tuple[tuple[TableKind, str], ...] = (
            (("changelog", self.lake.changelog(name)),) if self.snapshot_in_changelog else ()
        ) + (("replica", self.lake.replica(name)),)
        try:
            wrote = [
                chunk_files.commit(path, kind, refs, self.app_id, self.batch_id, tag)
                for kind, path in tables
            ]
        except (OSError, ValueError, KeyError) as exc:
            raise SinkError(f"batch {self.batch_id} of {label}: {exc}.", table=label) from exc
        except Exception as exc:
            raise SinkError(
                f"writing batch {self.batch_id} of {label} to Delta failed: {exc}", table=label
            ) from exc
        return any(wrote)

    def reset_only(self, name: TableName) -> None:
        """A DROP TABLE (or a TRUNCATE of a table never announced) with no change of the table
        in this batch."""
        path = self.lake.replica(name)
        if commits.open_table(path) is None:
            return
        empty = pa.table({})
        commits.merge_replica(path, empty, (), self.app_id, self.batch_id, reset=True)
        columns = self.lake.stored_columns(name) or []
        if self.history.of(name) is not None and columns:
            nothing = pa.nulls(0, pa.struct(columns))
            assert isinstance(nothing, pa.StructArray)
            rows = pa.table({"op": pa.array([], pa.string()),
                             "source": pa.nulls(0, pa.struct([("ts_ms", pa.int64()),
                                                              ("position", pa.string())])),
                             "_pos": pa.array([], pa.int64())})  # fmt: skip
            self._history(name, self.lake.key_of(name), columns, rows, nothing, nothing)


def _op_counts(rows: pa.Table) -> dict[str, int]:
    """How many of ``rows`` (changes, chunks already turned into their ``r`` rows) each op has."""
    counts = pc.value_counts(rows.column("op")).to_pylist() if rows.num_rows else []
    return {str(c["values"]): int(c["counts"]) for c in counts}


def _inserts_only(rows: pa.Table) -> bool:
    ops = rows.column("op")
    return bool(len(ops)) and bool(pc.all(pc.equal(ops, OP_CREATE)).as_py())


def _whole(values: pa.StructArray | pa.ChunkedArray) -> pa.StructArray:
    combined = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
    assert isinstance(combined, pa.StructArray)
    return combined
