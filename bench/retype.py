"""Section 11: a column retyped in the replica (``pipeline.schema_changes``), each table format.

A replica of ``--retype-rows`` rows (id INT, v INT, price DECIMAL(10,2), day DATE, note text,
written in 8 appends as the sink's batches would leave it) is made fresh for each measurement,
then one column is retyped through the sink's own table formats (``TableFormat.retype``):
INT→BIGINT (Delta: a rewrite of the table as one version; Iceberg: schema evolution) and
DATE→TIMESTAMP (a rewrite in both). The baseline, measured in the same run on the same rows, is
a plain copy: the Delta table's Parquet files read and written again by pyarrow's dataset
writer with the column cast, no table format involved. Each figure is the median of
``--repeats`` runs, the measurements taken in turn.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.dataset as ds

from sparkcdc.config.model import SinkConfig
from sparkcdc.core.table_name import TableName
from sparkcdc.sinks.changes.lake import TableFormat
from sparkcdc.sinks.delta.lake import DeltaTables
from sparkcdc.sinks.storage import LakeStorage

NAME = TableName("bench", "wide")
COLUMNS = [pa.field("id", pa.int32()), pa.field("v", pa.int32()),
           pa.field("price", pa.decimal128(10, 2)), pa.field("day", pa.date32()),
           pa.field("note", pa.string())]  # fmt: skip
SOURCE = pa.struct([pa.field("db", pa.string())])
PARTS = 8
CASES = [("INT→BIGINT", pa.field("v", pa.int64())),
         ("DATE→TIMESTAMP", pa.field("day", pa.timestamp("us")))]  # fmt: skip


def _rows(start: int, count: int) -> pa.Table:
    ids = np.arange(start, start + count, dtype=np.int32)
    cents = pa.array((ids % 10_000_000).astype(np.int32)).cast(pa.decimal128(10, 0))
    return pa.table(
        {
            "id": ids,
            "v": ids * 7,
            "price": cents.cast(pa.decimal128(10, 2)),
            "day": pa.array((ids % 20000).astype(np.int32)).cast(pa.date32()),
            "note": pa.array(np.char.add("note-", (ids % 1000).astype(str))),
        },
        schema=pa.schema(COLUMNS),
    )


def _tables(kind: str, folder: Path) -> TableFormat:
    if kind == "delta":
        return DeltaTables(LakeStorage(str(folder)))
    from sparkcdc.sinks.iceberg.catalog import open_catalog
    from sparkcdc.sinks.iceberg.tables import IcebergTables

    return IcebergTables(open_catalog(SinkConfig(path=str(folder), type="iceberg")))


def _made(kind: str, folder: Path, rows: int) -> TableFormat:
    """A fresh replica of ``rows`` rows in ``kind`` under ``folder``."""
    tables = _tables(kind, folder)
    tables.evolve(NAME, COLUMNS, SOURCE)
    part = -(-rows // PARTS)
    for start in range(0, rows, part):
        batch = _rows(start, min(part, rows - start))
        if kind == "delta":
            from deltalake import write_deltalake

            write_deltalake(tables.replica(NAME), batch, mode="append")
        else:
            from sparkcdc.sinks.iceberg.tables import IcebergTables, replica_id

            assert isinstance(tables, IcebergTables)
            found = tables.table(replica_id(NAME))
            assert found is not None
            found.append(batch)
    return tables


def _retype(kind: str, field: pa.Field, work: Path, rows: int) -> Callable[[], float]:
    def run() -> float:
        folder = work / f"{kind}-{field.name}-{time.monotonic_ns()}"
        tables = _made(kind, folder, rows)
        started = time.perf_counter()
        tables.retype(NAME, [field])
        return time.perf_counter() - started

    return run


def _copy(field: pa.Field, work: Path, rows: int) -> Callable[[], float]:
    def run() -> float:
        folder = work / f"copy-{field.name}-{time.monotonic_ns()}"
        tables = _made("delta", folder, rows)
        files = ds.dataset(tables.replica(NAME), format="parquet")
        target = pa.schema([field if f.name == field.name else f for f in COLUMNS])
        started = time.perf_counter()
        batches = (b.cast(target) for b in files.to_batches())
        ds.write_dataset(pa.RecordBatchReader.from_batches(target, batches), folder / "copy",
                         format="parquet")  # fmt: skip
        return time.perf_counter() - started

    return run


def retype_section(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    rows = args.retype_rows
    out = []
    for label, field in CASES:
        runs: dict[str, list[float]] = {"delta": [], "iceberg": [], "copy": []}
        measures = {"delta": _retype("delta", field, work, rows),
                    "iceberg": _retype("iceberg", field, work, rows),
                    "copy": _copy(field, work, rows)}  # fmt: skip
        for _ in range(args.repeats):
            for name, measure in measures.items():
                runs[name].append(measure())
        medians = {name: statistics.median(found) for name, found in runs.items()}
        print(f"  {label}: " + ", ".join(f"{n} {s:.2f}s" for n, s in medians.items()), flush=True)
        out.append({"change": label, "runs": runs, **{f"{n}_s": s for n, s in medians.items()}})
    return {"rows": rows, "repeats": args.repeats, "cases": out}


def with_section(markdown: str, results: dict[str, Any]) -> str:
    """``markdown`` with section 11, if measured, before ``## Where the time goes``."""
    s = results.get("retype")
    head, mark, tail = markdown.partition("## Where the time goes\n")
    return head + "\n".join(section(s)) + "\n" + mark + tail if s and mark else markdown


def section(s: dict[str, Any]) -> list[str]:
    out = [
        "## 11. A column retyped in the replica",
        "",
        f"A replica of {s['rows']:,} rows (five columns, eight appends) retyped by the sink's "
        "table formats as `pipeline.schema_changes` asks (`TableFormat.retype`, the change log "
        "empty), next to a plain copy of the same Parquet files with the column cast by pyarrow "
        f"in the same run; medians of {s['repeats']}, seconds.",
        "",
        "| change | Delta | Iceberg | plain copy | Delta vs copy | Iceberg vs copy |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for c in s["cases"]:
        out.append(
            f"| {c['change']} | {c['delta_s']:.2f} | {c['iceberg_s']:.3f} | {c['copy_s']:.2f} | "
            f"{c['delta_s'] / c['copy_s']:.2f}× | {c['iceberg_s'] / c['copy_s']:.2f}× |"
        )
    return out + [
        "",
        "INT→BIGINT is Iceberg schema evolution (no data written); Delta has no type widening "
        "in delta-rs, so it rewrites; DATE→TIMESTAMP rewrites in both.",
        "",
    ]
