"""Section 10: the two table formats in one run, Delta and Iceberg, on section 1's stream and
section 4's snapshot.

On one throwaway MariaDB: the mixed workload of section 1 (single-row inserts, then batched
updates of every row) read by MariaDB's C decoder, then by ``sparkcdc run --available-now`` into
Delta and into Iceberg (the embedded SQL catalog), each with an empty run's start-up and stop
taken off; then section 4's table read by ``startup: snapshot`` into each format at each
parallelism, next to Spark JDBC → Parquet. The runs' lines split each into start-up, the sink
reading the batches, the sink writing the format, and the rest (Spark's planning and commits).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench import baselines, snapshot, startup, stream, workload
from sparkcdc.sources.mysql.throwaway import ThrowawayMariaDB

FORMATS = ("delta", "iceberg")
YamlFor = Callable[..., Path]  # section 1's pipeline file: (folder, server, tables, **settings)


def in_format(yaml_for: YamlFor, kind: str) -> YamlFor:
    """``yaml_for`` writing a pipeline file whose sink is of ``kind``."""

    def write(folder: Path, *args: Any, **settings: str) -> Path:
        cfg = yaml_for(folder, *args, **settings)
        cfg.write_text(cfg.read_text().replace("sink: {type: delta,", f"sink: {{type: {kind},"))
        return cfg

    return write


def formats_section(args: argparse.Namespace, work: Path, yaml_for: YamlFor) -> dict[str, Any]:
    server = ThrowawayMariaDB.start(base_dir=str(work))
    try:
        workload.create_schema(server)
        load = workload.write_changes(server, args.inserts, args.update_rounds)
        print(f"wrote {load.changes:,} changes in {load.seconds:.1f}s", flush=True)
        decode = lambda: baselines.mariadb_binlog(server, load.changes)  # noqa: E731
        c = baselines.alternating(args.repeats, decode)[0]
        print(f"  {c.name}: {c.rows_per_s:,.0f} rows/s", flush=True)
        server.execute("CREATE TABLE IF NOT EXISTS bench.empty (id INT PRIMARY KEY)")
        streams = {
            kind: _stream(server, work / kind, load.changes, in_format(yaml_for, kind))
            for kind in FORMATS
        }
        loaded = snapshot.load(server, args.snapshot_rows)
        print(f"loaded {args.snapshot_rows:,} rows in {loaded:.1f}s", flush=True)
        jdbc = snapshot.jdbc(server, work, args.snapshot_rows, args.snapshot_parallelism)
        snapshots = []
        for kind in FORMATS:
            (work / f"snap-{kind}").mkdir()
        for n in args.snapshot_parallelism:
            for kind in FORMATS:
                found = snapshot.sparkcdc_snapshot(
                    server,
                    work / f"snap-{kind}",
                    args.snapshot_rows,
                    n,
                    args.snapshot_chunk_size,
                    sink=kind,
                )
                print(f"  {kind} p{n}: {found['rows_per_s']:,.0f} rows/s", flush=True)
                snapshots.append({"format": kind, **found})
        return {
            "changes": load.changes,
            "c_decoder": _figures(c),
            "stream": streams,
            "snapshot_rows": args.snapshot_rows,
            "jdbc": jdbc,
            "snapshots": snapshots,
        }
    finally:
        server.stop()


def _stream(
    server: ThrowawayMariaDB, folder: Path, changes: int, yaml_for: YamlFor
) -> dict[str, Any]:
    """One format's empty run (its start-up) and whole run over the workload."""
    idle = folder / "idle"
    idle.mkdir(parents=True)
    empty = yaml_for(idle, server, r"bench\.empty", startup="latest")
    fixed = startup.measure_startup(empty, idle / "checkpoint")["total_s"]
    whole = folder / "e2e"
    whole.mkdir()
    total, lines = stream.timed_run(yaml_for(whole, server, r"bench\.events"))
    steady = max(total - fixed, 1e-9)
    print(
        f"  {folder.name}: {changes / steady:,.0f} changes/s without start-up "
        f"({total:.1f}s, empty run {fixed:.1f}s)",
        flush=True,
    )
    return {
        "total_s": total,
        "startup_s": fixed,
        "steady_s": steady,
        "rows_per_s": changes / steady,
        "timeline": stream.where_time_goes(total, lines),
    }


def _figures(m: baselines.Measurement) -> dict[str, Any]:
    return {
        "name": m.name,
        "rows": m.rows,
        "seconds": m.seconds,
        "rows_per_s": m.rows_per_s,
        "runs": list(m.runs),
    }


def with_section(markdown: str, results: dict[str, Any]) -> str:
    """``markdown`` with section 10, if measured, before ``## Where the time goes``."""
    s = results.get("formats")
    head, mark, tail = markdown.partition("## Where the time goes\n")
    return head + "\n".join(section(s)) + "\n" + mark + tail if s and mark else markdown


def section(s: dict[str, Any]) -> list[str]:
    c = s["c_decoder"]
    out = [
        "## 10. Delta and Iceberg in one run",
        "",
        f"Section 1's mixed workload ({s['changes']:,} changes) caught up by `sparkcdc run "
        "--available-now` into each table format (`sink.type`), an empty run's start-up and stop "
        "taken off, next to MariaDB's C decoder on the same binlog "
        f"({c['rows_per_s']:,.0f} rows/s, median of {len(c['runs'])}).",
        "",
        "| sink | seconds | changes/s | vs C decoder | sink reading | sink writing | the rest |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for kind in FORMATS:
        r = s["stream"][kind]
        t = r["timeline"]
        rest = t["batches_s"] - t["sink_read_s"] - t["sink_write_s"]
        out.append(
            f"| {kind} | {r['steady_s']:.2f} | {r['rows_per_s']:,.0f} | "
            f"{r['rows_per_s'] / c['rows_per_s']:.2f}× | {t['sink_read_s']:.2f} | "
            f"{t['sink_write_s']:.2f} | {rest:.2f} |"
        )
    jdbc = {r["parallelism"]: r for r in s["jdbc"]}
    out += [
        "",
        f"Section 4's table ({s['snapshot_rows']:,} rows) read by `startup: snapshot` into each "
        "format (the snapshot's rows in the replica and the change log, the default), rows/s "
        "over the snapshot's time (start-up and shut-down excluded, as in section 4), next to "
        "Spark JDBC → Parquet in the same run.",
        "",
        "| sink | parallelism | seconds | rows/s | vs Spark JDBC | sink writing s |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for r in s["snapshots"]:
        base = jdbc[r["parallelism"]]
        ratio = r["rows_per_s"] / (base["rows"] / base["seconds"])
        out.append(
            f"| {r['format']} | {r['parallelism']} | {r['seconds']:.2f} | "
            f"{r['rows_per_s']:,.0f} | {ratio:.2f}× | {r['sink_write_s']:.2f} |"
        )
    return out + [""]
