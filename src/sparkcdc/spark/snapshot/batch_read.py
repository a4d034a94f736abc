"""``spark.read.format("mysql-cdc").option("table", "db.t")``: one consistent, lock-free,
parallel snapshot of a table as a typed DataFrame, for every source type.

The driver takes the log position ``at`` first (where the source pins a snapshot for readers,
PostgreSQL's exported snapshot held by a process of its own, the pin's point), then cuts the
table into chunks (:class:`ChunkSplitter`) and deals them into ``parallelism`` tasks. Each task
reads its chunks without locks and rewinds each with the log from ``at`` to the chunk's high
watermark (:func:`scan_split_at`; read in the pin, a chunk has nothing to rewind), so every row
is as it was at ``at``: the DataFrame is the table at one
point of its log, while writers go on. Rows reach Spark as Arrow record batches of the table's
columns (Spark types as in :mod:`sparkcdc.core.schema`), read typed from the database (no row
images).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, InputPartition

from sparkcdc.core.chunk import Split
from sparkcdc.core.schema import TableSchema
from sparkcdc.snapshot.captured import captured_rows
from sparkcdc.snapshot.scan import scan_split_at
from sparkcdc.snapshot.splitter import ChunkSplitter, SplitterSettings
from sparkcdc.sources.port import SnapshotPin
from sparkcdc.spark.offsets import TableMeta
from sparkcdc.spark.snapshot.planner import ARROW_BATCH_ROWS, load_table, table_meta
from sparkcdc.spark.stream.options import SourceOptions

__all__ = ["SnapshotBatchReader", "table_schema"]


def table_schema(options: SourceOptions) -> TableSchema:
    """The schema of the batch read's table (the DataFrame's columns), as captured."""
    assert options.table is not None
    return options.source.capture.schema(load_table(options, options.table))


class SnapshotTask(InputPartition):
    """The splits one task reads (as worker ``index``), rewound to the offset ``at``."""

    def __init__(
        self,
        index: int,
        splits: list[Split],
        meta: TableMeta,
        at: dict[str, Any],
        pin: SnapshotPin | None,
    ):
        super().__init__(index)
        self.splits, self.meta, self.at, self.pin = splits, meta, at, pin


class SnapshotBatchReader(DataSourceReader):
    """The batch reader; see the module docstring."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options

    def partitions(self) -> Sequence[InputPartition]:
        o = self.options
        snap = o.source.snapshot
        assert o.table is not None
        settings = SplitterSettings.of(snap)
        source = o.open_source()
        with source.chunks() as dialect:
            at = dialect.low_watermark()
            meta = table_meta(o, dialect, o.table)
            splitter = ChunkSplitter(dialect, o.table, meta.keys, settings)
            splits: list[Split] = []
            while not splitter.done:
                splits.append(splitter.next())
        groups: list[list[Split]] = [[] for _ in range(min(snap.parallelism, len(splits)))]
        for i, split in enumerate(splits):
            groups[i % len(groups)].append(split)
        pin = source.pin_snapshot_for_readers(len(groups)) if groups else None
        if pin is not None:
            at = pin.point
        return [SnapshotTask(i, g, meta, at.to_json(), pin) for i, g in enumerate(groups)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, SnapshotTask)
        source = self.options.open_source()
        schema, keys = partition.meta.schema, list(partition.meta.keys)
        at = self.options.offset(partition.at)
        worker = partition.value
        with source.chunks(partition.pin) as dialect:
            for split in partition.splits:
                result = scan_split_at(
                    split,
                    schema,
                    keys,
                    dialect,
                    lambda db, t, lo, hi: source.back_fill(db, t, lo, hi, worker),
                    at,
                    typed=True,
                )
                rows = captured_rows(self.options.source.capture, schema, result.rows)
                yield from rows.drop_columns(["key"]).to_batches(ARROW_BATCH_ROWS)
        if partition.pin is not None:
            source.release_pin(partition.pin, worker)
