"""Renders ``bench/results.json`` as ``bench/RESULTS.md``, followed by ``bench/history.md``
(before/after figures of past changes, kept by hand)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

HISTORY = Path(__file__).with_name("history.md")

NOTES = """\
How a change travels in `sparkcdc run` (section 1):

- **Log reader** (the source process): the replication protocol in Python, the dump's packets
  split into lists of events by `_packets.c`, and one dispatch loop per list; rows events
  decoded by `_rowdecode.c` straight into Arrow buffers of the table's typed columns (before and
  after images, no Python object per value; a layout with a TIME column is decoded by generated
  Python code); per transaction the GTID, TABLE_MAP and XID events, the cutter and the envelope
  builder in Python, the open transaction's rows appended to the store item they join.
- **Micro-batch hand-over**: the stream reader writes each micro-batch's events and, beside
  them, its typed images (one Arrow file per table and schema version) to the pipeline's
  `log_dir`; the stream carries one `f` event naming them, and the sink on the driver reads the
  files. No row crosses the JVM and no JSON is built or parsed on this path.
- **Sink**: per table one change-log append beside one replica MERGE (a copy-on-write of the
  touched files), both with the batch's transaction id; on a folder lake both commits are the
  log's JSON files written by the sink itself, on object storage delta-rs's.

The profile above splits the run's CPU by process; the table in section 1 splits its wall time.
Per-event Python work (dispatch, transaction boundaries, the builder's bookkeeping) still costs
more than decoding rows; moving the event loop and transaction cutting into compiled code is
what is left to gain in the reader.
"""


SNAPSHOT_NOTES = """\
How the rows travel (`snapshot_delivery: store`, what `sparkcdc run` uses): each Spark task takes
its chunks in runs (up to 131,072 rows of consecutive chunks of one table, its last run halved
down to one chunk). A run is read in one connectorx query between one pair of watermarks when
the chunk key is a single integer column (here: 16 chunks of 8,096 rows per query), cut into its
chunks by key in Arrow, and each chunk is corrected with the window's changes in its own range
and kept in the split store; other keys are read a chunk per query. In a thread of its own, while
it reads the next run, the task writes the run's two Delta data files there (replica rows,
change-log `r` rows), then hands Spark one `k` event per chunk naming them. The sink links those
files into the tables and commits them with the batch's transaction id. No JSON is built or
parsed, no row crosses the JVM, the driver encodes nothing.

What the columns above hold, and what the pieces showed when timed alone (same table, same
machine, 2 cores, the same day; these timings come from separate probes, which this command
does not rerun):

- **Start-up** (outside rows/s): the JVM and session, the Python Data Source steps (lookup,
  creation, the streaming source's planner), the first splits cut, and a small batch read run
  before the query starts. The driver JVM runs with the quick compiler only and the serial
  collector (`-XX:TieredStopAtLevel=1 -XX:+UseSerialGC`): its optimizing compiler threads used
  1.56 CPU-s of a 6.4 s snapshot at parallelism 2 and 0.47 s with the quick one alone; A/B
  runs of the same code: 4.85–5.35 s against 6.06–6.58 s at parallelism 2, 5.70–6.48 s
  against 7.05–7.16 s at 1, and start-up ~4 s shorter. Section 1's binlog stream took 26.9 s
  after start-up against 25.7 s with the JVM's defaults, and 51.7 s against 54.4 s in all.
- **Chunk reads**: a connectorx query of 8,096 rows cost 11.5–12.5 ms of client CPU, one of
  32,384 or 131,072 rows ~7 ms per 8,096 (per call, connectorx opens a connection and runs the
  query once with `LIMIT 1` for the result's shape); the server's share was 7–8 ms per 8,096
  rows either way. Reading a run in one query took the snapshot at parallelism 2 from 6.1–6.6 s
  to 3.8–6.0 s in probes on this machine, whose timings spread widely. DATE and DATETIME columns
  are read as they are until a chunk holds a zero date (the guard that makes the server return
  NULL for those cost it ~20% more CPU).
- **Spark jobs, … not reading chunks**: the time from the job's start to its first chunk read
  and from the tasks' last reads to their end (the last run's files). Traced: 0.3 s from the
  first offset written to the source planning the batch, 0.65 s more until the Python workers
  received their tasks (five code generations of 49–103 ms logged by Spark among them), then
  40–100 ms to the first read; 0.7–0.8 s in all with the driver's JVM options, 1.0–1.2 s
  without.
- **Delta writes**: the sink's commit of the files the tasks wrote.
- **Shut-down** (outside rows/s): the hand-off batch (the log from the smallest high watermark),
  the query's end and the session stopping.

Where the two cores go (CPU by process over the snapshot's seconds, two runs at each
parallelism in a separate probe): at parallelism 1 the Python task worker used 4.8–5.6 s (its
reads, connectorx's threads and the thread writing the files), the server 1.6–1.9 s and the JVM
1.3–1.4 s (0.4 s of it compiling) over 5.0–5.9 s, so ~1.7 of the 2 cores are busy with one
task; at parallelism 2, 5.4 s, 1.6–1.7 s and 1.4 s over 4.9–5.1 s. A second task finds little
CPU left on this machine, where the server shares the two cores, and the scaling above swings
with the run (1.50×, 0.86× and 1.21× in three bench runs). Spark JDBC's task at parallelism 1
leaves a core to spare. Here every row is encoded twice (replica and change log): the Parquet
files of a 131,072-row run cost ~25 ms of CPU per table.
"""


def ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}×" if b else "n/a"


def render(r: dict[str, Any]) -> str:
    out = [
        "# sparkcdc benchmark results",
        "",
        f"Written by `./scripts/bench.sh` (`python -m bench.run`) on {r.get('date', '?')}, "
        f"{r.get('machine', '?')}. Every baseline ran in the same run, on the same binlog.",
        "",
    ]
    t = r.get("throughput")
    if t:
        out += [
            f"## 1. Binlog → change log: {t['changes']:,} row changes",
            "",
            f"{t.get('inserts', 200_000):,} single-row insert transactions plus batched updates "
            "of every row.",
            "",
            *_stream_table(t),
            "",
            *_startup(t),
            "",
            *_timeline(t),
        ]
    one = r.get("singles")
    if one:
        out += [
            f"### Single-row transactions only: {one['changes']:,} inserts, each its own commit",
            "",
            *_stream_table(one),
            "",
            *_timeline(one),
        ]
    lat = r.get("latency")
    if lat:
        out += _latency(lat if isinstance(lat, list) else [lat])
    big = r.get("big")
    if big:
        out += [
            f"## 3. One {big['rows']:,}-row transaction, store limited to {big['max_bytes']}",
            "",
            "| seconds | store peak | source process peak RSS |",
            "|---:|---:|---:|",
            f"| {big['seconds']:.1f} | {big['store_peak_mb']:.1f} MiB | "
            f"{big['source_peak_rss_mb']:.0f} MiB |",
            "",
        ]
    snap = r.get("snapshot")
    if snap:
        out += _snapshot(snap)
    inc = r.get("incremental")
    if inc:
        out += _incremental(inc)
    my = r.get("mysql")
    if my:
        out += _mysql(my)
    pg = r.get("pg-stream")
    if pg:
        out += _pg_stream(pg)
    out += ["## Where the time goes", "", *_profile(r.get("profile")), NOTES, ""]
    if HISTORY.exists():
        out += [HISTORY.read_text()]
    return "\n".join(out)


def _stream_table(t: dict[str, Any]) -> list[str]:
    """Section 1's figures, each next to the C decoder (and python-mysql-replication)."""
    ms = t["measurements"]
    c = ms[0]
    p = next((m for m in ms if m["name"] == "python-mysql-replication"), None)
    head = "| reader | rows | seconds | rows/s | vs C decoder |"
    out = [head + (" vs python-mysql-replication |" if p else ""),
           "|---|---:|---:|---:|---:|" + ("---:|" if p else "")]  # fmt: skip
    for m in ms:
        runs = m.get("runs") or []
        seconds = f"{m['seconds']:.2f}" + (
            f" (median of {', '.join(f'{s:.2f}' for s in runs)})" if len(runs) > 1 else ""
        )
        line = (
            f"| {m['name']} | {m['rows']:,} | {seconds} | {m['rows_per_s']:,.0f} | "
            f"{ratio(m['rows_per_s'], c['rows_per_s'])} |"
        )
        out.append(line + (f" {ratio(m['rows_per_s'], p['rows_per_s'])} |" if p else ""))
    return out


def _timeline(t: dict[str, Any]) -> list[str]:
    """Where the whole run's time goes, from the lines it printed."""
    w = t.get("timeline")
    if not w:
        return []
    total = next(m["seconds"] for m in t["measurements"] if m["name"].startswith("sparkcdc run"))
    reader = next(m["seconds"] for m in t["measurements"] if "log reader" in m["name"])
    between = w["batches_s"] - w["sink_read_s"] - w["sink_write_s"]
    rows = [
        ("launch → stream query started (Python, JVM, session, data source)",
         w["query_started_s"]),
        (f"{w['batches']} micro-batches, query start → last batch written", w["batches_s"]),
        ("… the sink reading the batches (`f` event → Arrow file)", w["sink_read_s"]),
        ("… the sink writing Delta (change log append beside the replica's MERGE or append)",
         w["sink_write_s"]),
        ("… the rest: Spark planning and committing each batch, the source process "
         "waiting for the log reader", between),
        ("stop: the query and the session", w["stop_s"]),
        ("**the whole run**", total),
        ("the log reader alone on the same binlog (runs beside the micro-batches)", reader),
    ]  # fmt: skip
    return [
        "Where the time goes in the whole run (its lines stamped as they arrived; the sink "
        "logs what it read and wrote per micro-batch):",
        "",
        "| part | seconds |",
        "|---|---:|",
        *[f"| {name} | {sec:.2f} |" for name, sec in rows],
        "",
    ]


def _profile(p: dict[str, Any] | None) -> list[str]:
    """The py-spy summary of one whole run (bench/profile.py)."""
    if not p:
        return []
    out = [
        f"A py-spy profile of `sparkcdc run --available-now` over section 1's "
        f"{p['changes']:,} changes (`python -m bench.run --only profile`, every Python process "
        f"of the run sampled at {p['rate']} Hz, running threads only): CPU seconds per process "
        "and, in each, by the innermost sparkcdc function on the stack (else the library "
        "function running).",
        "",
        "| process | CPU s | where (CPU s) |",
        "|---|---:|---|",
    ]
    for role in p["roles"]:
        top = "; ".join(f"`{f['function']}` {f['cpu_s']:.1f}" for f in role["top"][:6])
        out.append(f"| {role['role']} | {role['cpu_s']:.1f} | {top} |")
    return [*out, ""]


def _latency(runs: list[dict[str, Any]]) -> list[str]:
    out = [
        "## 2. Commit → visible in the replica",
        "",
        "A steady insert load while `sparkcdc run` streams it (trigger "
        f"`{runs[0]['trigger']}`); goal p99 ≤ 1 s at 2k rows/s, ≤ 2 s at 20k rows/s.",
        "",
        "| rate asked | rows/transaction | rate reached | rows | not visible | p50 | p99 | max |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for lat in runs:
        reached = lat.get("achieved_rows_per_s", lat["rows"] / lat["seconds"])
        out.append(
            f"| {lat['rate_rows_per_s']:,} | {lat.get('rows_per_transaction', 20)} | "
            f"{reached:,.0f} | {lat['rows']:,} | {lat['not_visible']} | {lat['p50_s']:.2f} s | "
            f"{lat['p99_s']:.2f} s | {lat['max_s']:.2f} s |"
        )
    return [*out, ""]


def _startup(t: dict[str, Any]) -> list[str]:
    """Section 1's start-up lines: the empty run's phases (older results: its total only)."""
    start = t.get("startup")
    if start is None:
        return [f"Pipeline start-up (JVM, session, empty first batch): {t['startup_s']:.1f} s."]
    rows = [f"| {p['phase']} | {p['seconds']:.2f} |" for p in start["phases"]]
    return [
        f"Pipeline start-up, from `sparkcdc run` launched to its first micro-batch committed "
        f"(an empty stream, `--available-now`): **{start['first_commit_s']:.1f} s** "
        "(goal: at most 10 s). Its phases, from the lines the run prints and Spark's "
        "checkpoint:",
        "",
        "| phase | seconds |",
        "|---|---:|",
        *rows,
        "",
        f"The empty run ends {start['total_s'] - start['first_commit_s']:.1f} s after that "
        f"commit (its last batch, the query's and the session's stop): {start['total_s']:.1f} s "
        "in all, the fixed cost taken off the row above.",
        *_bare(start),
    ]


def _bare(start: dict[str, Any]) -> list[str]:
    bare = start.get("bare_spark_s")
    if bare is None:
        return []
    return [
        "",
        f"A bare Spark session (`local[*]`, a new Python process) that runs one trivial job "
        f"and stops, measured right after: {bare:.1f} s; the empty run is "
        f"**{start['total_s'] / bare:.2f}×** that (goal: ≤ 1.1×).",
    ]


def replica_only(s: dict[str, Any]) -> list[str]:
    """The runs with ``sink.snapshot_in_changelog: false`` next to the default's, if measured."""
    runs = s.get("sparkcdc_replica_only") or []
    default = {m["parallelism"]: m["rows_per_s"] for m in s["sparkcdc"]}
    each = [
        f"{ratio(m['rows_per_s'], default[m['parallelism']])} at {m['parallelism']}"
        for m in runs
        if m["parallelism"] in default
    ]
    if not each:
        return []
    return [
        "*Replica only*: `sink.snapshot_in_changelog: false`, the snapshot's rows written to "
        "the replica alone (the tasks encode them once, not also as the change log's `r` rows; "
        "the default keeps them, as Debezium and Flink CDC emit them): "
        + ", ".join(each)
        + " the default's rows/s.",
        "",
    ]


def _snapshot(s: dict[str, Any]) -> list[str]:
    jdbc = {m["parallelism"]: m for m in s["jdbc"]}
    out = [
        f"## 4. Snapshot of a {s['rows']:,}-row table into Delta",
        "",
        "`bench.snap` (BIGINT key, INT, VARCHAR(40), DECIMAL(12,2), DATETIME(6)), read whole "
        f"at each parallelism, Spark `{s['spark_master']}` for both Spark readers. sparkcdc: "
        f"`sparkcdc run` with `startup: snapshot`, chunks of {s['chunk_size']:,} rows, into the "
        "Delta replica; seconds run from Spark's first offset written to the last snapshot batch "
        "written (start-up before, the hand-off batch and shut-down after: both below). Spark "
        "JDBC: MariaDB Connector/J, `partitionColumn=id`, `fetchsize=10000`, to Parquet; seconds "
        "are the read + write only (session start and a warm-up read excluded). connectorx: the "
        "table into Arrow in one process, no Spark, no sink: the ceiling.",
        "",
        "| reader | parallelism | rows | seconds | rows/s | vs Spark JDBC | wall with start-up |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, runs in (
        ("sparkcdc snapshot → Delta", s["sparkcdc"]),
        ("sparkcdc snapshot → Delta, replica only", s.get("sparkcdc_replica_only", [])),
        ("Spark JDBC → Parquet", s["jdbc"]),
        ("connectorx → Arrow", s["connectorx"]),
    ):
        for m in runs:
            base = jdbc.get(m["parallelism"])
            wall = f"{m['wall_s']:.1f} s" if "wall_s" in m else ""
            out.append(
                f"| {name} | {m['parallelism']} | {m['rows']:,} | {m['seconds']:.2f} | "
                f"{m['rows_per_s']:,.0f} | "
                f"{ratio(m['rows_per_s'], base['rows_per_s']) if base else 'n/a'} | {wall} |"
            )
    cdc = s["sparkcdc"]
    out.append("")
    out += replica_only(s)
    out += [
        "sparkcdc in steady state (the batches after the first, over the time from the first "
        "batch's commit to the last one's): "
        + ", ".join(
            f"{m['steady_rows_per_s']:,.0f} rows/s at {m['parallelism']}"
            if m["steady_rows_per_s"] == m["steady_rows_per_s"]  # not NaN
            else f"n/a at {m['parallelism']} (one batch)"
            for m in cdc
        )
        + ".",
        "",
    ]
    small = s.get("sparkcdc_small_batches")
    one = next((m for m in cdc if m["parallelism"] == 1), None)
    if small and one and small["batches"] > one["batches"]:
        each = (small["seconds"] - one["seconds"]) / (small["batches"] - one["batches"])
        out += [
            f"The cost of a micro-batch: parallelism 1 again with `batch_rows: "
            f"{small['batch_rows_option']:,}`, {small['batches']} snapshot batches instead of "
            f"{one['batches']}: {small['rows_per_s']:,.0f} rows/s ({small['seconds']:.2f} s), "
            f"{each:.2f} s more per batch (Spark planning the batch, starting its tasks, "
            "each task's last files and the commit).",
            "",
        ]
    if len(cdc) > 1 and len(s["jdbc"]) > 1:
        a, b, ja, jb = cdc[0], cdc[-1], s["jdbc"][0], s["jdbc"][-1]
        out += [
            f"Scaling from parallelism {a['parallelism']} to {b['parallelism']}: sparkcdc "
            f"{ratio(b['rows_per_s'], a['rows_per_s'])}, Spark JDBC "
            f"{ratio(jb['rows_per_s'], ja['rows_per_s'])}.",
            "",
        ]
    jdbc = {m["parallelism"]: m["rows_per_s"] for m in s["jdbc"]}
    met = all(m["rows_per_s"] >= jdbc.get(m["parallelism"], float("inf")) for m in cdc)
    out += [
        "Goal, at least 1.0× Spark JDBC at the same parallelism: "
        + ("met." if met else "**not met** (see where the time goes below)."),
        "",
    ]
    bad = [m for m in cdc if m["replica_rows"] != m["rows"]]
    out += [
        "Replica rows counted after each run: "
        + ", ".join(f"{m['replica_rows']:,} (parallelism {m['parallelism']})" for m in cdc)
        + (" — **not the table's row count**." if bad else ", as in the table."),
        f"Table load (INSERT … SELECT from the sequence engine): {s['load_s']:.1f} s. "
        "CPU used by processes outside the benchmark meanwhile: "
        + ", ".join(f"{k} {v:.1f} s" for k, v in s.get("other_cpu_s", {}).items())
        + ".",
        "",
        "Where sparkcdc's time goes (seconds; chunk reads from the split files' start/end "
        "times, Spark jobs and Delta writes from the sink's per-batch log lines):",
        "",
        "| parallelism | wall | start-up | shut-down | chunk reads (queries: wall / task-s) | "
        "Spark jobs | "
        "… of which not reading chunks | Delta writes | the rest | batches |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for m in cdc:
        shutdown = m.get("shutdown_s", 0.0)
        rest = m["seconds"] - m["spark_job_s"] - m["sink_write_s"]
        out.append(
            f"| {m['parallelism']} | {m['wall_s']:.1f} | {m['startup_s']:.1f} | {shutdown:.1f} | "
            f"{m.get('chunk_reads', m['splits'])}: {m['chunk_read_wall_s']:.1f} / "
            f"{m['chunk_read_task_s']:.1f} | "
            f"{m['spark_job_s']:.1f} | {m['spark_job_s'] - m['chunk_read_wall_s']:.1f} | "
            f"{m['sink_write_s']:.1f} | {rest:.1f} | {m['batches']} |"
        )
    out += ["", "Per batch, Spark job / Delta write (s):", ""]
    for m in cdc:
        pairs = zip(m["batch_rows"], m["batch_job_s"], m["batch_write_s"], strict=True)
        out.append(
            f"- parallelism {m['parallelism']}: "
            + ", ".join(f"{job:.1f} / {write:.1f} ({n // 1000}k rows)" for n, job, write in pairs)
        )
    return [*out, "", s.get("notes") or SNAPSHOT_NOTES, ""]


def _mode(m: dict[str, Any]) -> str:
    return str(m.get("mode") or f"chunks {m['incremental_chunks']}")


def _incremental(s: dict[str, Any]) -> list[str]:
    idle, runs = s["idle"]["streaming"], s["runs"]
    out = [
        f"## 5. Incremental snapshot of a {s['rows']:,}-row table while streaming "
        f"{s['rate_rows_per_s']:,} rows/s",
        "",
        "The snapshot section's table (`bench.snap`, kept out of the binlog) and the latency "
        "section's insert load on `bench.ticks`, on one server. Each run is a new `sparkcdc run` "
        "(Spark `" + s["spark_master"] + f"`, trigger `{s['trigger']}`) capturing both tables from "
        "the end of the log, so `bench.snap` reaches the replica only through the incremental "
        f"snapshot. The idle run streams the load alone for {s['idle_seconds']:.0f} s. Each "
        f"snapshot run streams it for {s['lead_seconds']:.0f} s, then `sparkcdc signal "
        "execute-snapshot --tables bench.snap` (file channel) starts the snapshot while the load "
        "goes on. *One chunk per window* reads as Debezium does, one chunk per window "
        "(`incremental_chunks: 1`, `incremental_window: 0`: one chunk per micro-batch); the other "
        "runs read for `incremental_window` "
        f"({s['window_s'] * 1000:.0f} ms) per window, `incremental_chunks` chunks at a time in "
        f"parallel, the next window's chunks while Spark writes the current one (chunks of "
        f"{s['chunk_size']:,} rows).",
        "",
        "Snapshot seconds run from the signal sent (the CLI returned) to the Delta commit of the "
        "`bench.snap` replica holding the last snapshot rows (the micro-batch with the "
        "`table-done` notification); rows/s is the table's rows over them. The pick-up (signal "
        "to the `started` notification's batch) is inside them; the `started` → `table-done` "
        "notification timestamps are shown beside. Latency is section 2's (commit at the source "
        "→ the first `bench.ticks` replica version holding the row); *during* takes the rows "
        "committed between the signal and the last snapshot commit, *before* those committed "
        "before the signal in the same run.",
        "",
        "| run | rows | seconds | rows/s | pick-up | started → table-done | "
        "windows | micro-batches | replica rows |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for m in runs:
        out.append(
            f"| {_mode(m)} | {m['rows']:,} | {m['seconds']:.1f} | "
            f"{m['rows_per_s']:,.0f} | {m['pickup_s']:.1f} s | {m['notice_seconds']:.1f} s | "
            f"{m['windows']} | {m['batches']} | {m['replica_rows']:,} |"
        )
    out.append("")
    if len(runs) > 1:
        a = runs[0]
        out += [
            "Against "
            + _mode(a)
            + ": "
            + ", ".join(f"{_mode(b)} {ratio(b['rows_per_s'], a['rows_per_s'])}" for b in runs[1:])
            + " the rows/s.",
            "",
        ]
    out += [
        "Streaming latency of `bench.ticks` (commit → visible in the replica):",
        "",
        "| run | rows | p50 | p99 | max | p50 vs idle | p99 vs idle | p50, p99 vs before |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]

    def row(name: str, m: dict[str, Any], before: dict[str, Any] | None = None) -> str:
        versus = (
            f"{ratio(m['p50_s'], before['p50_s'])}, {ratio(m['p99_s'], before['p99_s'])}"
            if before
            else ""
        )
        return (
            f"| {name} | {m['rows']:,} | {m['p50_s']:.2f} s | {m['p99_s']:.2f} s | "
            f"{m['max_s']:.2f} s | {ratio(m['p50_s'], idle['p50_s'])} | "
            f"{ratio(m['p99_s'], idle['p99_s'])} | {versus} |"
        )

    out.append(row(f"idle ({s['idle_seconds']:.0f} s of load)", idle))
    for m in runs:
        out.append(row(f"{_mode(m)}, before the signal", m["before"]))
        out.append(row(f"{_mode(m)}, during the snapshot", m["during"], m["before"]))
    out.append("")

    def worst(m: dict[str, Any], base: dict[str, Any]) -> float:  # as the ratios are shown
        d = m["during"]
        return round(max(d["p50_s"] / base["p50_s"], d["p99_s"] / base["p99_s"]), 2)

    verdict = ", ".join(
        f"{'met' if worst(m, idle) <= 2 else '**not met**'} with {_mode(m)} against the idle "
        f"run ({'met' if worst(m, m['before']) <= 2 else '**not met**'} against the same run "
        "before the signal)"
        for m in runs
    )
    lost = sum(m["not_visible"] for m in [s["idle"], *runs])
    out += [
        f"Goal, p50 and p99 during the snapshot within 2× of idle: {verdict}.",
        "",
        "Replica rows of `bench.snap` counted after each snapshot run: "
        + ", ".join(f"{m['replica_rows']:,}" for m in runs)
        + (
            ", as in the table."
            if all(m["replica_rows"] == m["rows"] for m in runs)
            else " — **not the table's row count**."
        )
        + f" `bench.ticks` rows not visible by the end: {lost}. Pipeline start-up to the first "
        "replica commit: "
        + ", ".join(f"{m['startup_s']:.0f} s ({m['name']})" for m in [s["idle"], *runs])
        + f". Table load: {s['load_s']:.1f} s. CPU used by processes outside the benchmark "
        "meanwhile: "
        + ", ".join(f"{k} {v:.1f} s" for k, v in s.get("other_cpu_s", {}).items())
        + ".",
        "",
    ]
    return out


def _mysql(s: dict[str, Any]) -> list[str]:
    """Section 6: the log reader alone on MySQL 8's binlog next to MariaDB's."""
    maria, mysql, alone = s["mariadb"], s["mysql"], s["primary_alone"]

    def row(name: str, m: dict[str, Any], unit: str, primary: bool = True) -> str:
        runs = ", ".join(f"{x:.2f}" for x in m.get("runs", []))
        served = f"{m['primary_cpu_s']:.2f} s" if primary else "—"
        return (
            f"| {name} | {m['rows']:,} {unit} | {m['seconds']:.2f} s ({runs}) | "
            f"{m['rows_per_s']:,.0f} {unit}/s | {m['bench_cpu_s']:.2f} s | {served} |"
        )

    return [
        f"## 6. MySQL 8 binlog: {s['changes']:,} changes, next to MariaDB's",
        "",
        f"{s['inserts']:,} single-row insert transactions, then {s['update_rounds']} "
        "transactions each updating every row, on MariaDB (written by the server) and in a "
        f"MySQL {s['mysql_version']} binlog built byte by byte in MySQL's formats by the tests' "
        f"writer ({s['mysql_events']:,} events, built in {s['mysql_build_s']:.1f} s, not "
        "counted), served by the tests' protocol-level MySQL 8 primary (`tests/fakes/"
        "mysql_primary.py`, pure Python) in a process of its own, as `mariadbd` is; it "
        "holds the file framed as dump packets (framed once before the runs, as `mariadbd`'s "
        "file is in the page cache) and sends it with TCP_NODELAY, as `mysqld` does. The log "
        "reader alone (`reader_only`, typed, from `earliest`) runs in a thread of the bench "
        "process on each; the median of the runs taking turns. CPU: the bench process's "
        "(reader and the thread draining the store) and the MySQL primary process's, during "
        "the run (medians).",
        "",
        "| | changes | seconds (runs) | rate | bench CPU | MySQL primary CPU |",
        "|---|---:|---:|---:|---:|---:|",
        row("log reader, MariaDB", maria, "changes", primary=False),
        row("log reader, MySQL 8 test primary", mysql, "changes"),
        row("MySQL 8 test primary alone (bare session counting events)", alone, "events"),
        "",
        f"MySQL/MariaDB: **{s['ratio']:.2f}×** the rate.",
        "",
    ]


def _pg_stream(s: dict[str, Any]) -> list[str]:
    """Section 7: PostgreSQL log streaming, next to pg_recvlogical and a plain-Python reader."""
    cdc, recv, plain = s["sparkcdc"], s["pg_recvlogical"], s["plain_python"]

    def row(m: dict[str, Any]) -> str:
        runs = ", ".join(f"{x:.2f}" for x in m.get("runs", []))
        return (
            f"| {m['name']} | {m['rows']:,} | {m['seconds']:.2f} s ({runs}) | "
            f"{m['rows_per_s']:,.0f}/s | {m['bench_cpu_s']:.2f} s | {m['child_cpu_s']:.2f} s | "
            f"{m['server_cpu_s']:.2f} s |"
        )

    def goal(ratio: float, wanted: float) -> str:
        return "met" if ratio >= wanted else "**not met**"

    r, p = s["ratio_recvlogical"], s["ratio_plain_python"]
    return [
        f"## 7. PostgreSQL log streaming: {s['changes']:,} changes",
        "",
        f"A throwaway PostgreSQL {s['server_version'].split()[0]} (`wal_level=logical`, "
        f"autovacuum off), table `public.events` of section 1's columns; {s['inserts']:,} "
        f"single-row insert transactions, then {s['update_rounds']} transactions each updating "
        f"every row (written in {s['write_s']:.1f} s, not counted). Every run reads from a "
        "logical slot (pgoutput, protocol 1) of its own, all made before the first write, to "
        "the WAL position after the last commit. Taking turns: sparkcdc's log reader alone "
        "(`reader_only`: opened through the source port, typed images, the store drained, "
        "until every change arrived); `pg_recvlogical --start --endpos` (PostgreSQL's C "
        "client, binary pgoutput to `/dev/null`; exit 0 and the slot confirmed to the end are "
        "checked); a plain-Python reader (psycopg2's `LogicalReplicationConnection` and "
        "`consume_stream`, each message decoded with `struct`, a dict of Python values per "
        "change: `bench.postgres.PlainPgoutputReader`). Median of the runs; CPU during a run "
        "(medians): the bench process's, its children's (`pg_recvlogical`) and the server's "
        "(the WAL sender decoding the WAL, and the other backends).",
        "",
        "| reader | changes | seconds (runs) | rate | bench CPU | child CPU | server CPU |",
        "|---|---:|---:|---:|---:|---:|---:|",
        row(cdc),
        row(recv),
        row(plain),
        "",
        f"sparkcdc/pg_recvlogical: **{r:.2f}×** the rate (goal ≥ 0.5×: {goal(r, 0.5)}); "
        f"sparkcdc/plain Python: **{p:.2f}×** (goal ≥ 10×: {goal(p, 10)}).",
        "",
        *_pg_run(s.get("run"), recv),
        *_pg_profile(s.get("profile")),
        *_pg_transports(s.get("transports"), row),
    ]


def _pg_run(run: dict[str, Any] | None, recv: dict[str, Any]) -> list[str]:
    """Section 7's whole pipeline: ``sparkcdc run --available-now`` next to pg_recvlogical."""
    if not run:
        return []
    r = run["ratio_recvlogical"]
    rest = run["batches_s"] - run["sink_read_s"] - run["sink_write_s"]
    return [
        "The whole pipeline: `sparkcdc run --available-now` from a slot of its own (made before "
        "the writes, `startup: earliest`) into a Delta lake, once, after the runs above. Its "
        f"micro-batches took {run['batches_s']:.2f} s for {run['batch_rows']:,} changes "
        f"({run['rows_per_s']:,.0f}/s; start-up {run['query_started_s']:.2f} s and stop "
        f"{run['stop_s']:.2f} s left out, {run['total_s']:.2f} s in all): **{r:.2f}×** "
        f"pg_recvlogical's {recv['rows_per_s']:,.0f}/s (goal ≥ 0.9×: "
        f"{'met' if r >= 0.9 else '**not met**'}).",
        "",
        "| part | seconds |",
        "|---|---:|",
        f"| launch → stream query started | {run['query_started_s']:.2f} |",
        f"| {run['batches']} micro-batches, query start → last batch written | "
        f"{run['batches_s']:.2f} |",
        f"| … the sink reading the batches | {run['sink_read_s']:.2f} |",
        f"| … the sink writing Delta | {run['sink_write_s']:.2f} |",
        f"| … the rest: Spark planning and committing, the source waiting for the log reader "
        f"| {rest:.2f} |",
        f"| stop | {run['stop_s']:.2f} |",
        "",
    ]


def _pg_transports(t: dict[str, Any] | None, row: Callable[[dict[str, Any]], str]) -> list[str]:
    """Section 7's transports: the same reader over its wire client and over psycopg2."""
    if not t:
        return []
    return [
        "### The reader's transport: its own wire client or psycopg2, in clear text and TLS",
        "",
        "The same runs, taking turns with those above: sparkcdc's log reader (the same "
        "`PgLogReader`, typed images, the store drained until every change arrived) fed by "
        "its own wire client (the first row is the table's first) or by psycopg2's "
        "`LogicalReplicationConnection` (libpq; `bench.pg_transport.Psycopg2Stream`: "
        "`read_message()` until it has nothing, each XLogData rebuilt as the wire's item, "
        "about 0.25 µs a message, `select` on the socket), each in clear text and inside TLS "
        "(`source.tls: required`: TLS 1.3, AES-256-GCM; the server runs with `ssl=on` and a "
        "certificate made for the run). Command: `python -m bench.run --only pg-stream`.",
        "",
        "| reader | changes | seconds (runs) | rate | bench CPU | child CPU | server CPU |",
        "|---|---:|---:|---:|---:|---:|---:|",
        row(t["wire"]),
        row(t["psycopg2"]),
        row(t["wire_tls"]),
        row(t["psycopg2_tls"]),
        "",
        f"Wire client/psycopg2: **{t['ratio_clear']:.2f}×** the rate in clear text, "
        f"**{t['ratio_tls']:.2f}×** inside TLS; bench CPU "
        f"{t['wire']['bench_cpu_s'] / t['psycopg2']['bench_cpu_s']:.2f}× and "
        f"{t['wire_tls']['bench_cpu_s'] / t['psycopg2_tls']['bench_cpu_s']:.2f}× psycopg2's. "
        f"TLS takes {t['tls_cost_wire']:.2f}× the seconds of clear text over the wire client, "
        f"{t['tls_cost_psycopg2']:.2f}× over psycopg2. The wire client stays only while it is "
        "faster end to end (docs/postgres.md): "
        f"{'met' if min(t['ratio_clear'], t['ratio_tls']) > 1 else '**not met**'} in this run.",
        "",
    ]


def _pg_profile(p: dict[str, Any] | None) -> list[str]:
    """Where sparkcdc's PostgreSQL reader spends its CPU (py-spy, bench/postgres.py)."""
    if not p:
        return []
    threads = p["threads_cpu_s"]
    top = "; ".join(f"`{f['function']}` {f['share']:.0%}" for f in p["reader_top"][:8])
    phases = ""
    if p.get("inserts_s"):
        phases = (
            f" Of its seconds, {p['inserts_s']:.2f} s went to the single-row insert "
            f"transactions and {p['seconds'] - p['inserts_s']:.2f} s to the update "
            "transactions (the store hands each transaction over whole)."
        )
    return [
        f"Where the time goes in sparkcdc's reader: one more run ({p['seconds']:.2f} s) in a "
        f"subprocess under `py-spy record --nonblocking` ({p['rate']} Hz, running threads "
        f"only).{phases} CPU: the reader thread {threads.get('reader', 0):.2f} s, the thread "
        f"draining the store {threads.get('drain', 0):.2f} s, the rest (imports, opening the "
        f"source) {threads.get('other', 0):.2f} s. The reader thread's samples by innermost "
        f"sparkcdc function (the library code it calls included): {top}.",
        "",
    ]
