"""What a micro-batch of the log carries to Spark's executors: its change events themselves.

Executors never depend on the driver: each :class:`EnvelopePartition` holds its events as Arrow
IPC stream bytes, and the stream reader's ``read`` turns them back into record batches.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
from pyspark.sql.datasource import InputPartition

PARTITION_BYTES = 32 * 1024 * 1024
ARROW_BATCH_ROWS = 65536


class EnvelopePartition(InputPartition):
    """The change events of one Spark task: Arrow IPC stream bytes of envelope batches."""

    def __init__(self, payload: bytes, rows: int) -> None:
        super().__init__(rows)
        self.payload = payload
        self.rows = rows

    def __repr__(self) -> str:
        return f"EnvelopePartition(rows={self.rows}, bytes={len(self.payload)})"


def to_partitions(batches: Sequence[pa.RecordBatch]) -> list[EnvelopePartition]:
    """Pack record batches, in order, into partitions of at most ~PARTITION_BYTES each.

    Items of small transactions are tiny record batches; each partition is rewritten as a few
    large ones, since Spark pays per Arrow batch it receives from ``read``.
    """
    if not batches:
        return []
    table = pa.Table.from_batches(batches).combine_chunks()
    rows_per_part = max(1, int(table.num_rows * PARTITION_BYTES / max(table.nbytes, 1)))
    parts: list[EnvelopePartition] = []
    for lo in range(0, table.num_rows, rows_per_part):
        part = table.slice(lo, rows_per_part)
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, table.schema) as writer:
            writer.write_table(part, max_chunksize=ARROW_BATCH_ROWS)
        parts.append(EnvelopePartition(sink.getvalue().to_pybytes(), part.num_rows))
    return parts
