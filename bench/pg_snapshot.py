"""Section ``pg-snapshot`` (8): section 4's snapshot, of a PostgreSQL table.

A throwaway PostgreSQL (autovacuum off, as in section 7) gets database ``bench`` and table
``bench.snap`` (schema ``bench``) of section 4's columns in PostgreSQL types, ``rows`` dense keys
loaded with one ``INSERT … SELECT … FROM generate_series``, then ``VACUUM ANALYZE`` (the row
estimate the chunks are cut by, hint bits and the visibility map set before any reader). Then,
at each parallelism, on the same server in the same run:

- ``sparkcdc run`` with a PostgreSQL source and ``startup: snapshot`` into the Delta replica:
  every chunk read with ``COPY (SELECT …) TO STDOUT`` inside one exported snapshot (no watermark
  windows). Timed as section 4 times it (:func:`bench.snapshot.timed`): rows/s from Spark's first
  offset written to the last snapshot batch written, start-up and shut-down beside; the replica's
  rows counted after each run;
- Spark's JDBC source with Debian's PostgreSQL JDBC driver (``partitionColumn=id``,
  ``fetchsize=10000``) written to Parquet, timed in its own process around read + write only
  (session start and a small warm-up read excluded);
- connectorx reading the table into Arrow (partitioned on ``id``): no Spark, no sink, the ceiling.

Where sparkcdc's time goes comes from its split files and the sink's per-batch log lines.
"""

from __future__ import annotations

import argparse
import re
import time
import zipfile
from pathlib import Path
from typing import Any

from bench.postgres import server_base
from bench.report import ratio, replica_only
from bench.snapshot import (
    TABLE,
    OtherCpu,
    connectorx_runs,
    jdbc_runs,
    snapshot_run,
)
from sparkcdc.sources.postgres.throwaway import ThrowawayPostgres

JAR = "/usr/share/java/postgresql.jar"  # Debian's libpostgresql-jdbc-java
DATABASE = "bench"
DDL = (
    f"CREATE TABLE {TABLE} (id bigint PRIMARY KEY, account int NOT NULL, note varchar(40), "
    "amount numeric(12,2), created timestamp(6))"
)
FETCHSIZE = 10000
MASTER = "local[2]"


def load(server: ThrowawayPostgres, rows: int) -> float:
    """``rows`` dense keys in one INSERT … SELECT, then VACUUM ANALYZE (every page read)."""
    started = time.perf_counter()
    server.create_database(DATABASE)
    server.execute(
        "CREATE SCHEMA bench",
        DDL,
        f"INSERT INTO {TABLE} SELECT i, i % 100000, 'customer-' || i || '-' || i % 97, i * 0.01, "
        "timestamp '2024-01-01' + i * 1234567 * interval '1 microsecond' "
        f"FROM generate_series(1::bigint, {rows}) AS i",
        f"VACUUM ANALYZE {TABLE}",
        database=DATABASE,
    )
    return time.perf_counter() - started


def sparkcdc_snapshot(
    server: ThrowawayPostgres,
    work: Path,
    rows: int,
    parallelism: int,
    chunk_size: int,
    changelog: bool = True,
) -> dict[str, Any]:
    """One ``sparkcdc run`` with ``startup: snapshot`` (which drops its slot when done);
    ``changelog`` false: ``sink.snapshot_in_changelog: false``."""
    slot = f"bench_snap_p{parallelism}" + ("" if changelog else "_replica_only")
    source = (
        f"type: postgres, host: {server.host}, port: {server.port}, user: {server.user}, "
        f"password: '{server.password}', database: {DATABASE}, slot: {slot}, "
        f"publication: {slot}, snapshot: {{parallelism: {parallelism}, chunk_size: {chunk_size}}}"
    )
    found = snapshot_run(work / slot, source, rows, parallelism, changelog)
    left = server.query("SELECT slot_name FROM pg_replication_slots", database=DATABASE)
    if left:
        raise RuntimeError(f"sparkcdc run left replication slots behind: {left}")
    return found


def jdbc(server: ThrowawayPostgres, work: Path, rows: int, parallelism: list[int]) -> list[dict]:
    """Spark JDBC (Debian's PostgreSQL driver) → Parquet (:func:`bench.snapshot.jdbc_runs`)."""
    spec = {
        "url": f"jdbc:postgresql://{server.host}:{server.port}/{DATABASE}",
        "driver": "org.postgresql.Driver",
        "user": server.user,
        "password": server.password,
        "jar": JAR,
        "table": TABLE,
    }
    return jdbc_runs(spec, work, rows, parallelism)


def connectorx(server: ThrowawayPostgres, parallelism: list[int]) -> list[dict[str, Any]]:
    login = f"{server.user}:{server.password}@{server.host}:{server.port}"
    return connectorx_runs(f"postgresql://{login}/{DATABASE}", TABLE, parallelism)


def jar_version() -> str:
    """The JDBC driver's version, from its jar's manifest."""
    with zipfile.ZipFile(JAR) as jar:
        found = re.search(
            r"Implementation-Version: *(\S+)", jar.read("META-INF/MANIFEST.MF").decode()
        )
    return found.group(1) if found else "?"


def pg_snapshot_section(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    """The section on a throwaway server of its own (section 4's rows, chunks, parallelisms)."""
    rows, parallelism = args.snapshot_rows, args.snapshot_parallelism
    other = OtherCpu()
    other.start()
    server = ThrowawayPostgres.start(base_dir=server_base(work), settings={"autovacuum": "off"})
    try:
        [(version,)] = server.query("SHOW server_version")
        load_s = load(server, rows)
        print(f"PostgreSQL {version}: loaded {rows:,} rows in {load_s:.1f}s", flush=True)
        busy = {"load": other.take()}
        cx_runs = connectorx(server, parallelism)
        busy["connectorx"] = other.take()
        jdbc_runs = jdbc(server, work, rows, parallelism)
        busy["Spark JDBC"] = other.take()
        cdc_runs, replica_only = [], []
        for n in parallelism:
            cdc_runs.append(sparkcdc_snapshot(server, work, rows, n, args.snapshot_chunk_size))
            busy[f"sparkcdc p{n}"] = other.take()
        for n in parallelism:  # the snapshot's rows left out of the change log
            replica_only.append(
                sparkcdc_snapshot(server, work, rows, n, args.snapshot_chunk_size, changelog=False)
            )
            busy[f"sparkcdc p{n}, replica only"] = other.take()
    finally:
        other.done.set()
        server.stop()
    for r in cx_runs + jdbc_runs:
        r["rows_per_s"] = r["rows"] / r["seconds"]
    jdbc_by = {r["parallelism"]: r["rows_per_s"] for r in jdbc_runs}
    for name, group in (("connectorx", cx_runs), ("Spark JDBC", jdbc_runs), ("sparkcdc", cdc_runs),
                        ("sparkcdc, replica only", replica_only)):  # fmt: skip
        for r in group:
            print(f"  {name} p{r['parallelism']}: {r['rows_per_s']:,.0f} rows/s", flush=True)
    if max(busy.values()) > 2.0:
        print(f"  warning: other processes used the CPU meanwhile (s): {busy}", flush=True)
    return {
        "rows": rows,
        "server_version": str(version),
        "jdbc_driver": jar_version(),
        "load_s": load_s,
        "other_cpu_s": busy,
        "chunk_size": args.snapshot_chunk_size,
        "spark_master": MASTER,
        "sparkcdc": cdc_runs,
        "sparkcdc_replica_only": replica_only,
        "jdbc": jdbc_runs,
        "connectorx": cx_runs,
        "ratio_vs_jdbc": {
            str(r["parallelism"]): r["rows_per_s"] / jdbc_by[r["parallelism"]]
            for r in cdc_runs
            if r["parallelism"] in jdbc_by
        },
    }


# -- RESULTS.md --------------------------------------------------------------------------------


def with_section(markdown: str, results: dict[str, Any]) -> str:
    """``markdown`` (:func:`bench.report.render`'s) with this section, if measured, before
    ``## Where the time goes``."""
    s = results.get("pg-snapshot")
    head, mark, tail = markdown.partition("## Where the time goes\n")
    return head + "\n".join(section(s)) + "\n" + mark + tail if s and mark else markdown


def section(s: dict[str, Any]) -> list[str]:
    """Section 8 in RESULTS.md: the figures, the goal, and where sparkcdc's time goes."""
    jdbc = {m["parallelism"]: m["rows_per_s"] for m in s["jdbc"]}
    cdc = s["sparkcdc"]
    parallel = ", ".join(str(m["parallelism"]) for m in cdc)
    out = [
        f"## 8. Snapshot of a {s['rows']:,}-row PostgreSQL table into Delta",
        "",
        f"Section 4's table in a throwaway PostgreSQL {s['server_version'].split()[0]} "
        "(autovacuum off): `bench.snap` (`id bigint` primary key, `int`, `varchar(40)`, "
        "`numeric(12,2)`, `timestamp(6)`), loaded with `INSERT … SELECT … FROM generate_series`"
        f" and `VACUUM ANALYZE` ({s['load_s']:.1f} s), read whole at each parallelism, Spark "
        f"`{s['spark_master']}` for both Spark readers. sparkcdc: `sparkcdc run` with `type: "
        f"postgres`, `startup: snapshot`, chunks of {s['chunk_size']:,} rows read with `COPY "
        "(SELECT …) TO STDOUT` (CSV into Arrow) in one exported snapshot, into the Delta "
        "replica; seconds as in section 4 (Spark's first offset written → last snapshot batch "
        f"written). Spark JDBC: PostgreSQL JDBC driver {s['jdbc_driver']}, "
        f"`partitionColumn=id`, `fetchsize={FETCHSIZE}`, to Parquet; read + write only. "
        "connectorx: `postgresql://`, partitioned on `id`, into Arrow: the ceiling.",
        "",
        *_readers_table(s, jdbc),
        *["", *replica_only(s)][: len(replica_only(s))],  # the blank line before, if any
    ]
    verdicts = [
        f"{'met' if m['rows_per_s'] >= jdbc[m['parallelism']] else '**not met**'} at "
        f"{m['parallelism']} ({m['rows_per_s']:,.0f} against {jdbc[m['parallelism']]:,.0f} rows/s)"
        for m in cdc
        if m["parallelism"] in jdbc
    ]
    exact = all(m["replica_rows"] == m["rows"] for m in cdc)
    each = {k: ", ".join(f"{m[k]:,}" for m in cdc) for k in ("replica_rows", "pins")}
    replayed = sum(m["window_changes"] for m in cdc)
    busy = ", ".join(f"{k} {v:.1f} s" for k, v in s["other_cpu_s"].items())
    a, b, ja, jb = cdc[0], cdc[-1], s["jdbc"][0], s["jdbc"][-1]
    out += [
        "",
        f"Scaling from parallelism {a['parallelism']} to {b['parallelism']}: sparkcdc "
        f"{ratio(b['rows_per_s'], a['rows_per_s'])}, Spark JDBC "
        f"{ratio(jb['rows_per_s'], ja['rows_per_s'])}.",
        "",
        f"Goal, at least 1.0× Spark JDBC at the same parallelism: {', '.join(verdicts)}.",
        "",
        f"Replica rows counted after each run (parallelism {parallel}): {each['replica_rows']}"
        + (", as in the table." if exact else " — **not the table's row count**.")
        + f" Exported snapshots per run: {each['pins']}; changes replayed into chunks: "
        f"{replayed}. CPU used by processes outside the benchmark meanwhile: {busy}.",
        "",
        *_time_table(cdc),
    ]
    return out


def _readers_table(s: dict[str, Any], jdbc: dict[int, float]) -> list[str]:
    """rows/s of each reader at each parallelism, next to Spark JDBC's at the same one."""
    out = [
        "| reader | parallelism | rows | seconds | rows/s | vs Spark JDBC | wall with start-up |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    replica_only = s.get("sparkcdc_replica_only", [])
    for name, runs in (("sparkcdc snapshot → Delta", s["sparkcdc"]),
                       ("sparkcdc snapshot → Delta, replica only", replica_only),
                       ("Spark JDBC → Parquet", s["jdbc"]),
                       ("connectorx → Arrow", s["connectorx"])):  # fmt: skip
        for m in runs:
            base = jdbc.get(m["parallelism"])
            wall = f"{m['wall_s']:.1f} s" if "wall_s" in m else ""
            out.append(
                f"| {name} | {m['parallelism']} | {m['rows']:,} | {m['seconds']:.2f} | "
                f"{m['rows_per_s']:,.0f} | {ratio(m['rows_per_s'], base) if base else 'n/a'} "
                f"| {wall} |"
            )
    return out


def _time_table(cdc: list[dict[str, Any]]) -> list[str]:
    """Where sparkcdc's time goes, in section 4's columns."""
    out = [
        "Where sparkcdc's time goes (seconds; chunk reads from the split files' start/end "
        "times, Spark jobs and Delta writes from the sink's per-batch log lines):",
        "",
        "| parallelism | wall | start-up | shut-down | chunk reads (queries: wall / task-s) | "
        "Spark jobs | … of which not reading chunks | Delta writes | the rest | batches |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for m in cdc:
        rest = m["seconds"] - m["spark_job_s"] - m["sink_write_s"]
        out.append(
            f"| {m['parallelism']} | {m['wall_s']:.1f} | {m['startup_s']:.1f} | "
            f"{m['shutdown_s']:.1f} | {m['chunk_reads']}: {m['chunk_read_wall_s']:.1f} / "
            f"{m['chunk_read_task_s']:.1f} | {m['spark_job_s']:.1f} | "
            f"{m['spark_job_s'] - m['chunk_read_wall_s']:.1f} | {m['sink_write_s']:.1f} | "
            f"{rest:.1f} | {m['batches']} |"
        )
    return [*out, ""]
