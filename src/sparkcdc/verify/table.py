"""One captured table verified: chunk by chunk against its replica, differing chunks read again
once a running pipeline has caught up with them.

1. The table is cut by the snapshot's chunk splitter (:class:`~sparkcdc.snapshot.splitter.
   ChunkSplitter`) and the replica's rows are placed in the same chunks (:mod:`.replica`).
2. Each chunk is read from the source (typed, as the snapshot reads it), with the log's end
   taken right after the read, and compared with the replica's rows (:mod:`.compare`).
3. While a pipeline runs, a chunk may differ by changes in flight: the source read and the
   replica read see the table at different log positions. Verify waits until the pipeline has
   committed past the source reads (``high``), then reads the change log: a key that differs
   and has a change logged after the earlier of the two positions (``since``) may differ for
   that reason alone, so its chunk is compared again (up to ``rounds`` passes); a key that
   differs with no such change differs for good and is reported. A key still changing in the
   last pass is counted as unsettled, not reported as different.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import pyarrow as pa

from sparkcdc.config.model import SourceConfig
from sparkcdc.core.chunk import KeyColumn, Split
from sparkcdc.core.offset import Offset
from sparkcdc.core.schema import TableSchema
from sparkcdc.sinks.port import TableRead
from sparkcdc.snapshot.captured import captured_rows
from sparkcdc.snapshot.dialect import SnapshotDialect
from sparkcdc.snapshot.splitter import ChunkSplitter, SplitterSettings
from sparkcdc.verify.changed import changed_keys
from sparkcdc.verify.committed import CommittedPosition
from sparkcdc.verify.compare import ChunkDiff, compare_chunk
from sparkcdc.verify.replica import (
    chunk_indexes,
    group_rows,
    in_types,
    read_replica,
    without_key_text,
)

Progress = Callable[[str, int, int], None]
"""(table, chunks done, chunks in all)"""


@dataclass
class TableReport:
    """What verifying one table found."""

    name: str
    chunks: int = 0
    source_rows: int = 0
    replica_rows: int = 0
    differing_chunks: list[int] = field(default_factory=list)
    diff: ChunkDiff = field(default_factory=ChunkDiff)
    rechecked: int = 0  # chunks read again after the pipeline caught up with them
    unsettled: int = 0  # keys that changed while they were compared, every time

    @property
    def equal(self) -> bool:
        return self.diff.equal


@dataclass(frozen=True)
class TableVerifier:
    """Verifies tables of one source against the replicas under one sink path."""

    config: SourceConfig
    dialect: SnapshotDialect
    read: TableRead  # the sink's tables
    committed: CommittedPosition
    chunk_size: int
    rounds: int = 3

    def verify(self, schema: TableSchema, keys: list[KeyColumn], progress: Progress) -> TableReport:
        report = TableReport(schema.name)
        splits = self._splits(schema, keys)
        report.chunks = len(splits)
        found = self._pass(schema, keys, splits, range(len(splits)), progress)
        report.source_rows, report.replica_rows = found.source_rows, found.replica_rows
        for round_ in range(1, self.rounds + 1):
            if not found.diffs or found.high is None or not self.committed.wait_past(found.high):
                break  # nothing differs, or no pipeline will catch up: what differs is final
            logged = self.read(schema.table_name, "changelog", ("before", "after"), found.since)
            changed = changed_keys(logged, schema.key)
            again = []
            for i, diff in found.diffs.items():
                _add(report, i, diff.without(changed))
                if diff.within(changed).count:
                    again.append(i)
            if round_ == self.rounds:  # still changing as they were compared: not judged
                report.unsettled = sum(d.within(changed).count for d in found.diffs.values())
                found = Pass()
                break
            report.rechecked += len(again)
            found = self._pass(schema, keys, splits, again, None)
        for i, diff in found.diffs.items():
            _add(report, i, diff)
        return report

    def _pass(
        self,
        schema: TableSchema,
        keys: list[KeyColumn],
        splits: list[Split],
        indexes: Iterable[int],
        progress: Progress | None,
    ) -> Pass:
        """The chunks ``indexes`` compared with the replica as it is now."""
        before = self.committed.current()
        replica = self._replica_chunks(schema, keys, splits)
        found = Pass(replica_rows=sum(t.num_rows for t in replica))
        for i in indexes:
            low = self.dialect.watermark()
            read = self.dialect.read_chunk(schema, keys, splits[i].lo, splits[i].hi, typed=True)
            read = captured_rows(self.config.capture, schema, read)  # masked as in the lake
            rows = in_types(without_key_text(read), replica[i].schema)
            found.high = max(found.high or low, self.dialect.watermark())
            found.since = min(found.since, low.position())
            found.source_rows += rows.num_rows
            diff = compare_chunk(rows, replica[i], schema.key)
            if not diff.equal:
                found.diffs[i] = diff
            if progress is not None:
                progress(schema.name, i + 1, len(splits))
        if before is not None:
            found.since = min(found.since, before.position())
        return found

    def _splits(self, schema: TableSchema, keys: list[KeyColumn]) -> list[Split]:
        snap = self.config.snapshot
        settings = SplitterSettings(
            self.chunk_size, snap.distribution_factor_lower, snap.distribution_factor_upper
        )
        splitter = ChunkSplitter(self.dialect, schema.name, keys, settings)
        splits = []
        while not splitter.done:
            splits.append(splitter.next())
        return splits

    def _replica_chunks(
        self, schema: TableSchema, keys: list[KeyColumn], splits: list[Split]
    ) -> list[pa.Table]:
        held = self.read(schema.table_name, "replica")
        captured = self.config.capture.schema(schema)  # the replica's columns
        replica = read_replica(held, captured, f"{schema.table_name}'s replica")
        bounds = [s.hi for s in splits if s.hi is not None]
        indexes = chunk_indexes(replica, keys, bounds, self.dialect)
        return group_rows(replica, indexes, len(splits))


@dataclass
class Pass:
    """One comparison of some chunks: what differed, the earliest log position the rows
    compared may reflect (``since``: the committed position before the replica was read, or
    the log end before the first source read) and the log end after the last read (``high``)."""

    diffs: dict[int, ChunkDiff] = field(default_factory=dict)
    since: str = "~"  # sorts after every position text
    high: Offset | None = None
    source_rows: int = 0
    replica_rows: int = 0


def _add(report: TableReport, chunk: int, diff: ChunkDiff) -> None:
    if diff.equal:
        return
    if chunk not in report.differing_chunks:
        report.differing_chunks.append(chunk)
    report.diff.merge(diff)
