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
from sparkcdc.sinks.storage import LakeStorage


def dictionary_leaves(table: pa.Table, counter: str | None) -> list[str]:
    """The leaves to dictionary-encode: strings, and in the change log ``op`` and the
    ``source`` leaves a chunk's rows share (all but the event ``counter``)."""
    leaves = _leaves(table.schema)
    out = {name for name, t in leaves if pa.types.is_string(t) or pa.types.is_binary(t)}
    if "op" in table.column_names:
        out |= {"op", *(name for name, _ in leaves if name.startswith("source."))}
        out.discard(f"source.{counter}")
    return sorted(out)


def _leaves(schema: pa.Schema) -> list[tuple[str, pa.DataType]]:
    """Dotted names and types of the leaf columns (as Parquet names them)."""
    out: list[tuple[str, pa.DataType]] = []

    def walk(prefix: str, t: pa.DataType) -> None:
        if pa.types.is_struct(t):
            for i in range(t.num_fields):
                walk(f"{prefix}.{t.field(i).name}", t.field(i).type)
        else:
            out.append((prefix, t))

    for f in schema:
        walk(f.name, f.type)
    return out


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
