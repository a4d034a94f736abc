"""Renders ``bench/results.json`` as ``bench/RESULTS.md``."""

from __future__ import annotations

from typing import Any


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
    notes = r.get("notes")
    if notes:
        out += ["## Where the time goes", "", notes, ""]
    return "\n".join(out)
