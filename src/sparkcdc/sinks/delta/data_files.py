"""The Parquet data files the sink writes itself (not through delta-rs): which columns are
dictionary-encoded, and the statistics their add actions carry.

Dictionary encoding is used only for strings and for a change log's per-chunk constants: for
the other columns it made the files larger and cost twice the CPU (bench/RESULTS.md). The
statistics are the row count, null counts, and the min and max of integer columns: Delta readers
use them to skip files, and the sink to find the files a batch's keys may be in.
"""

from __future__ import annotations

import io
import json
import time
import uuid

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from deltalake.transaction import AddAction

from sparkcdc.core.json_value import JSONObject
from sparkcdc.sinks.changes.run_files import dictionary_leaves
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
    stats = json.dumps(file_stats(rows), separators=(",", ":"))
    return AddAction(name, len(data), {}, int(time.time() * 1000), True, stats)


def file_stats(table: pa.Table) -> JSONObject:
    """Delta file statistics: row count, null counts, min and max of integer columns (of
    top-level columns only: a struct column gets none, which readers take as unknown)."""
    nulls: JSONObject = {}
    stats: JSONObject = {"numRecords": table.num_rows, "nullCount": nulls}
    lows: JSONObject = {}
    highs: JSONObject = {}
    for f, column in zip(table.schema, table.columns, strict=True):
        if pa.types.is_struct(f.type):
            continue
        nulls[f.name] = column.null_count
        if pa.types.is_integer(f.type) and column.null_count < len(column):
            bounds = pc.min_max(column)
            lows[f.name], highs[f.name] = bounds["min"].as_py(), bounds["max"].as_py()
    if lows:
        stats["minValues"], stats["maxValues"] = lows, highs
    return stats
