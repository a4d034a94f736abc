"""The Parquet data files the sink writes itself (not through delta-rs): which columns are
dictionary-encoded, and the statistics their add actions carry (:mod:`.file_stats`).

Dictionary encoding is used only for strings and for a change log's per-chunk constants: for
the other columns it made the files larger and cost twice the CPU (bench/RESULTS.md). Delta
readers skip files by their statistics, and the sink finds the files a batch's keys may be in.
"""

from __future__ import annotations

import io
import time
import uuid

import pyarrow as pa
import pyarrow.parquet as pq
from deltalake.transaction import AddAction

from sparkcdc.sinks.changes.run_files import dictionary_leaves
from sparkcdc.sinks.delta.file_stats import file_stats, stats_text
from sparkcdc.sinks.storage import LakeStorage


def write_data_file(lake: LakeStorage, path: str, rows: pa.Table) -> AddAction:
    """``rows`` as a new data file (dictionary-encoded as :func:`dictionary_leaves` says) of the
    table at ``path``; its add action, with :func:`file_stats`."""
    name = f"part-00000-{uuid.uuid4()}-c000.snappy.parquet"
    buffer = io.BytesIO()
    pq.write_table(rows, buffer, compression="snappy",
                   use_dictionary=dictionary_leaves(rows, None))  # fmt: skip
    data = buffer.getvalue()
    lake.write_new_file(f"{path.rstrip('/')}/{name}", data)
    stats = stats_text(file_stats(rows))
    return AddAction(name, len(data), {}, int(time.time() * 1000), True, stats)
