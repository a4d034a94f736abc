"""sparkcdc benchmarks: ``python -m bench.run`` (or ``./scripts/bench.sh``).

Every figure is measured in this run, next to its baseline on the same binlog, and written to
``bench/RESULTS.md`` (and ``bench/results.json``):

1. 1M row changes (single-row insert transactions + batched updates) decoded from the binlog:
   MariaDB's C decoder, python-mysql-replication, sparkcdc's log reader alone, and the whole
   ``sparkcdc run --available-now`` into the Delta change log and replica, with where its time
   goes (:mod:`bench.stream`); the same on 500k single-row transactions only (``singles``).
2. Commit → visible-in-replica latency, p50/p99, at a steady 2k and 20k rows/s.
3. Peak memory of the source process while a single 1M-row transaction streams through a
   store limited to ``max_bytes``.
4. The snapshot (``startup: snapshot``) of a 2M-row table into Delta at parallelism 1 and 2, next
   to Spark's JDBC source and connectorx reading the same table (:mod:`bench.snapshot`).
5. An incremental snapshot of that 2M-row table while the pipeline streams 2k rows/s into other
   tables: its rows/s with one and two chunks read per window, and the stream's latency
   meanwhile next to an idle run's (:mod:`bench.incremental`).
6. ``mysql``: the log reader alone on 1M changes from the tests' MySQL 8 primary next to the
   same on MariaDB, in the same run (:mod:`bench.mysql`).
7. ``pg-stream``: the log reader alone on 1M changes streamed from PostgreSQL, next to
   ``pg_recvlogical`` and a plain-Python psycopg2 reader on the same changes
   (:mod:`bench.postgres`).
8. ``pg-snapshot``: section 4's snapshot of a 2M-row table, from PostgreSQL, next to Spark's JDBC
   source and connectorx reading the same table (:mod:`bench.pg_snapshot`).
9. ``tables``: the snapshot of 30,000 rows and the catch-up of 30,000 single-row transactions
   on one table, then spread over 300 and 1,000 tables (:mod:`bench.tables`).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench import (
    baselines,
    formats,
    incremental,
    latency,
    mysql,
    pg_snapshot,
    postgres,
    profile,
    retype,
    snapshot,
    stream,
    tables,
    workload,
)
from sparkcdc.config.model import SourceConfig
from sparkcdc.sources.mysql.throwaway import ThrowawayMariaDB

HERE = Path(__file__).resolve().parent


def pipeline_yaml(work: Path, server: ThrowawayMariaDB, tables: str, **pipeline: str) -> Path:
    opts = {"trigger": "1s", "max_bytes": "64MB", "startup": "earliest"} | pipeline
    cfg = work / "pipeline.yaml"
    cfg.write_text(
        f"source: {{type: mysql, host: 127.0.0.1, port: {server.port}, user: root, "
        f"password: '', tables: ['{tables}'], startup: {opts['startup']}}}\n"
        f"sink: {{type: delta, path: {work / 'lake'}}}\n"
        f"pipeline: {{checkpoint: {work / 'checkpoint'}, trigger: {opts['trigger']}, "
        f"store: {{max_bytes: {opts['max_bytes']}}}}}\n"
    )
    return cfg


def sparkcdc(*args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "sparkcdc.cli.main", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def run_available_now(cfg: Path) -> float:
    started = time.perf_counter()
    proc = sparkcdc("run", str(cfg), "--available-now", "--quiet")
    out, _ = proc.communicate()
    if proc.returncode != 0:
        raise RuntimeError(f"sparkcdc run failed:\n{out.decode()[-3000:]}")
    return time.perf_counter() - started


def reader_only(
    server: ThrowawayMariaDB | SourceConfig, rows: int, work: Path
) -> baselines.Measurement:
    """sparkcdc's log reader alone (opened through the source port, with typed images as
    ``sparkcdc run`` opens it): replication protocol + row decoding into Arrow, drained.
    ``server``: a throwaway MariaDB (``bench.events`` captured) or a source's configuration."""
    from sparkcdc.sources.registry import open_source
    from sparkcdc.store.ring import EventStore

    config = server if isinstance(server, SourceConfig) else server.source_config(r"bench\.events")
    source = open_source(config)
    start = source.startup_offset("earliest")
    store = EventStore(max_bytes=64 * 1024 * 1024, max_items=16384, batch_mode="MEMSIZE")
    reader = source.open_reader(start, store, str(work / "history.jsonl"), 2048, typed=True)
    name = "sparkcdc log reader (protocol + decode to Arrow)"
    return baselines.drain_reader(name, reader, store, rows)


def throughput(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    """Section 1 on the mixed workload: single-row inserts, then updates of every row."""
    server = ThrowawayMariaDB.start(base_dir=str(work))
    try:
        workload.create_schema(server)
        load = workload.write_changes(server, args.inserts, args.update_rounds)
        print(f"wrote {load.changes:,} changes in {load.seconds:.1f}s", flush=True)
        return stream.measure(
            server, work, load, pipeline_yaml, reader_only, args.pmr_rows, args.repeats
        )
    finally:
        server.stop()


def singles(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    """Section 1 on single-row insert transactions only (every change its own commit)."""
    server = ThrowawayMariaDB.start(base_dir=str(work))
    try:
        workload.create_schema(server)
        load = workload.write_changes(server, args.singles, 0)
        print(f"wrote {load.changes:,} single-row transactions in {load.seconds:.1f}s", flush=True)
        return stream.measure(server, work, load, pipeline_yaml, reader_only, 0, args.repeats)
    finally:
        server.stop()


def commit_latency(args: argparse.Namespace, work: Path) -> list[dict[str, Any]]:
    """Section 2 at each rate asked for."""
    runs = []
    for rate in args.rate:
        folder = work / f"rate-{rate}"
        folder.mkdir()
        runs.append(latency_at(args, folder, rate))
        print(f"  {rate:,} rows/s: p99 {runs[-1]['p99_s']:.2f} s", flush=True)
    return runs


def latency_at(args: argparse.Namespace, work: Path, rate: int) -> dict[str, Any]:
    server = ThrowawayMariaDB.start(base_dir=str(work))
    try:
        server.execute("CREATE DATABASE bench", latency.LATENCY_DDL)
        cfg = pipeline_yaml(work, server, r"bench\.ticks", trigger=args.latency_trigger)
        proc = sparkcdc("run", str(cfg), "--quiet")
        server.execute("INSERT INTO bench.ticks VALUES (-1, 'warm-up', 0)")
        replica = work / "lake" / "bench" / "ticks"
        deadline = time.time() + 120
        while not (replica / "_delta_log").exists() and time.time() < deadline:
            time.sleep(0.2)
        per_txn = max(20, rate // 100)  # at most 100 commits/s from the one client
        load = latency.SteadyLoad(server, rate, args.latency_seconds, per_txn=per_txn)
        load.start()
        load.join()
        time.sleep(5)
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=120)
        visible = latency.visibility_times(replica)
        lat = [visible[i] - t for i, t in load.committed.items() if i in visible]
        missing = len(load.committed) - len(lat)
        return {
            "rate_rows_per_s": rate,
            "rows_per_transaction": per_txn,
            "achieved_rows_per_s": len(load.committed) / args.latency_seconds,
            "seconds": args.latency_seconds,
            "trigger": args.latency_trigger,
            "rows": len(load.committed),
            "not_visible": missing,
            "p50_s": latency.percentile(lat, 0.5),
            "p99_s": latency.percentile(lat, 0.99),
            "max_s": max(lat) if lat else float("nan"),
        }
    finally:
        server.stop()


def big_transaction(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    server = ThrowawayMariaDB.start(base_dir=str(work))
    try:
        server.execute("CREATE DATABASE bench")
        workload.write_big_transaction(server, args.big_rows)
        cfg = pipeline_yaml(work, server, r"bench\.big", max_bytes=args.big_max_bytes)
        peak = {"rss": 0}
        stop = threading.Event()

        def watch() -> None:
            metrics = work / "checkpoint" / "sparkcdc" / "metrics.json"
            while not stop.is_set():
                try:
                    data = json.loads(metrics.read_text())
                    peak["rss"] = max(peak["rss"], int(data.get("peak_rss_bytes", 0)))
                    peak["store"] = max(peak.get("store", 0), int(data.get("store_peak_bytes", 0)))
                except (OSError, ValueError):
                    pass
                time.sleep(0.2)

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        seconds = run_available_now(cfg)
        stop.set()
        watcher.join()
        return {
            "rows": args.big_rows,
            "max_bytes": args.big_max_bytes,
            "seconds": seconds,
            "source_peak_rss_mb": peak["rss"] / 2**20,
            "store_peak_mb": peak.get("store", 0) / 2**20,
        }
    finally:
        server.stop()


def snapshot_section(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    server = ThrowawayMariaDB.start(base_dir=str(work))
    try:
        return snapshot.run(
            server, work, args.snapshot_rows, args.snapshot_parallelism, args.snapshot_chunk_size
        )
    finally:
        server.stop()


def incremental_section(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    server = ThrowawayMariaDB.start(base_dir=str(work))
    try:
        return incremental.run(
            server,
            work,
            args.incremental_rows,
            args.incremental_chunks,
            rate=args.incremental_rate,
            trigger=args.latency_trigger,
            chunk_size=args.snapshot_chunk_size,
            idle_seconds=args.incremental_idle_seconds,
            lead_seconds=args.incremental_lead_seconds,
            window=args.incremental_window,
            baseline=not args.no_incremental_baseline,
        )
    finally:
        server.stop()


def profile_section(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    server = ThrowawayMariaDB.start(base_dir=str(work))
    try:
        return profile.run(server, work, args.inserts, args.update_rounds, pipeline_yaml)
    finally:
        server.stop()


def mysql_section(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    return mysql.mysql_section(args, work, reader_only)


def pg_stream_section(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    return postgres.pg_stream_section(args, work, reader_only)


def tables_section(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    return tables.run(work, pipeline_yaml, args.table_counts, args.table_rows, args.table_updates)


def formats_section(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    return formats.formats_section(args, work, pipeline_yaml)


def write_report(results: dict[str, Any]) -> None:
    (HERE / "results.json").write_text(json.dumps(results, indent=2))
    from bench.report import render

    markdown = pg_snapshot.with_section(render(results), results)
    markdown = tables.with_section(markdown, results)
    markdown = formats.with_section(markdown, results)
    (HERE / "RESULTS.md").write_text(retype.with_section(markdown, results))


SECTIONS = {
    "throughput": throughput,
    "singles": singles,
    "latency": commit_latency,
    "big": big_transaction,
    "snapshot": snapshot_section,
    "incremental": incremental_section,
    "profile": profile_section,
    "mysql": mysql_section,
    "pg-stream": pg_stream_section,
    "pg-snapshot": pg_snapshot.pg_snapshot_section,
    "tables": tables_section,
    "formats": formats_section,
    "retype": retype.retype_section,
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inserts", type=int, default=200_000)
    parser.add_argument("--update-rounds", type=int, default=4)
    parser.add_argument("--pmr-rows", type=int, default=50_000)
    parser.add_argument("--singles", type=int, default=500_000)
    parser.add_argument(
        "--repeats",
        type=int,
        default=3,
        help="runs of the C decoder and the "
        "log reader alone in section 1, taking turns; the median is reported",
    )
    parser.add_argument("--rate", type=int, nargs="+", default=[2000, 20000])
    parser.add_argument("--incremental-rate", type=int, default=2000)
    parser.add_argument("--latency-seconds", type=float, default=30.0)
    parser.add_argument("--latency-trigger", default="0s")
    parser.add_argument("--big-rows", type=int, default=1_000_000)
    parser.add_argument("--big-max-bytes", default="64MB")
    parser.add_argument("--snapshot-rows", type=int, default=2_000_000)
    parser.add_argument("--snapshot-chunk-size", type=int, default=8096)
    parser.add_argument("--snapshot-parallelism", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--table-counts", type=int, nargs="+", default=[1, 300, 1000])
    parser.add_argument("--table-rows", type=int, default=30_000)
    parser.add_argument("--table-updates", type=int, default=30_000)
    parser.add_argument("--incremental-rows", type=int, default=2_000_000)
    parser.add_argument("--retype-rows", type=int, default=2_000_000)
    parser.add_argument("--incremental-chunks", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--incremental-idle-seconds", type=float, default=30.0)
    parser.add_argument("--incremental-lead-seconds", type=float, default=10.0)
    parser.add_argument(
        "--incremental-window", type=float, default=None, help="seconds; default: the config's"
    )
    parser.add_argument(
        "--no-incremental-baseline",
        action="store_true",
        help="skip the one-chunk-per-window run (about 5 minutes)",
    )
    parser.add_argument(
        "--mysql-changes",
        type=int,
        default=1_000_000,
        help="changes of the mysql section (inserts, then --update-rounds updates of each row)",
    )
    parser.add_argument(
        "--pg-changes",
        type=int,
        default=1_000_000,
        help="changes of the pg-stream section (inserts, then --update-rounds updates of each row)",
    )
    parser.add_argument(
        "--pg-no-profile",
        action="store_true",
        help="skip the pg-stream section's py-spy run of the reader",
    )
    parser.add_argument("--only", choices=list(SECTIONS), action="append")
    args = parser.parse_args()
    sections = args.only or list(SECTIONS)
    results: dict[str, Any] = {
        "machine": (
            f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
        ),
        "date": time.strftime("%Y-%m-%d"),
    }
    previous = HERE / "results.json"
    if args.only and previous.exists():
        results = json.loads(previous.read_text()) | results
    for name in sections:
        with tempfile.TemporaryDirectory(prefix=f"sparkcdc-bench-{name}-") as tmp:
            fn = SECTIONS[name]
            print(f"== {name}", flush=True)
            results[name] = fn(args, Path(tmp))
            print(json.dumps(results[name], indent=2), flush=True)
    write_report(results)
    print(f"wrote {HERE / 'RESULTS.md'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
