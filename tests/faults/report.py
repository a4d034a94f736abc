"""The campaign's report: ``REPORT.md`` (trials per fault × phase and source, × sink and ×
outcome, then per fault × phase × source × sink, violations,
recovery time p50/p99 per fault kind, each failing trial's replay command, the code each trial
ran) and ``report.json`` (every trial), written again after each trial; :func:`read_results`
reads the trials back, so a campaign cut short goes on where it stopped (``--resume``)."""

from __future__ import annotations

import json
import math
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

from tests.faults.trial import Plan, Result


def percentile(values: list[float], q: float) -> float:
    """The ``q`` quantile by the nearest rank."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def read_results(out: Path, args: str) -> tuple[list[Result], int]:
    """The trials of the report in ``out`` and its wall time (none if there is no report);
    ValueError if it was a campaign of other lists."""
    found = out / "report.json"
    if not found.exists():
        return [], 0
    held = json.loads(found.read_text())
    if held["args"] != args:
        raise ValueError(f"{found} holds a campaign of other lists ({held['args']}); give the "
                         "same lists to go on with it, or another --out")  # fmt: skip
    results = [Result(**{**r, "plan": Plan(**r["plan"])}) for r in held["results"]]
    return results, int(held["wall_s"])


def write_report(results: list[Result], out: Path, seed: int, args: str, wall: int) -> None:
    out.mkdir(parents=True, exist_ok=True)
    trials = [{**asdict(r), "plan": asdict(r.plan)} for r in results]
    summary = {"seed": seed, "trials": len(results), "args": args, "wall_s": wall,
               "violations": sum(len(r.violations) for r in results)}  # fmt: skip
    (out / "report.json").write_text(json.dumps({**summary, "results": trials}, indent=1) + "\n")
    (out / "REPORT.md").write_text("\n".join(_markdown(results, seed, args, wall)) + "\n")


def _markdown(results: list[Result], seed: int, args: str, wall: int) -> list[str]:
    failed = [r for r in results if r.violations]
    codes = Counter(r.commit for r in results).items()
    lines = [
        "# Fault campaign",
        "",
        f"`scripts/faults.sh --seed {seed} --trials {len(results)} {args}`: {len(results)} "
        f"trials in {wall} s, **{len(failed)} with violations**. Every trial's seed, fault, "
        "phase, timing and result: [report.json](report.json).",
        "",
        "Code: " + ", ".join(f"`{c or '?'}` ({n} trials)" for c, n in codes) + ".",
    ]
    lines += _matrix(results, "phase", lambda r: r.phase_seen or "?", by_source=True)
    lines += _matrix(results, "sink", lambda r: r.plan.sink, by_source=False)
    lines += _matrix(results, "outcome", lambda r: r.outcome or "?", by_source=False)
    lines += _cells(results)
    lines += _recovery(results)
    lines += ["", "## Violations", ""]
    if not failed:
        lines.append("None.")
    for r in failed:
        lines.append(f"- seed {r.plan.seed} ({r.plan.fault}, {r.plan.phase}, {r.plan.source}, "
                     f"{r.plan.sink}): {'; '.join(r.violations)[:600]}. Replay: "
                     f"`scripts/faults.sh --seed {r.plan.seed} --trials 1 {args}`")  # fmt: skip
    sentences = sorted({r.notes["sentence"] for r in results if "sentence" in r.notes})
    if sentences:
        lines += ["", "## The sentences the pipeline ended with", ""]
        lines += [f"- {s}" for s in sentences]
    return lines


def _matrix(
    results: list[Result], what: str, column: Callable[[Result], str], by_source: bool
) -> list[str]:
    """Trials per fault (rows) and ``what`` (columns); ``by_source``: each cell as MariaDB +
    PostgreSQL trials."""
    columns = sorted({column(r) for r in results})
    title = f"## Trials per fault × {what}" + (" (MariaDB + PostgreSQL)" if by_source else "")
    lines = ["", title, "", f"| fault | {' | '.join(columns)} | all |",
             "|---|" + "---:|" * (len(columns) + 1)]  # fmt: skip
    for fault in sorted({r.plan.fault for r in results}):
        mine = [r for r in results if r.plan.fault == fault]
        cells = []
        for c in columns:
            here = [r for r in mine if column(r) == c]
            mysql = sum(1 for r in here if r.plan.source == "mysql")
            cells.append(
                "" if not here else f"{mysql}+{len(here) - mysql}" if by_source else str(len(here))
            )
        lines.append(f"| {fault} | {' | '.join(cells)} | {len(mine)} |")
    return lines


def _cells(results: list[Result]) -> list[str]:
    lines = ["", "## Trials per fault × phase × source × sink", "",
             "| fault | phase (planned → seen) | source | sink | trials | outcomes | violations |",
             "|---|---|---|---|---|---|---|"]  # fmt: skip
    cells: dict[tuple[str, str, str, str], list[Result]] = defaultdict(list)
    for r in results:
        phase = f"{r.plan.phase} → {r.phase_seen or '?'}"
        cells[(r.plan.fault, phase, r.plan.source, r.plan.sink)].append(r)
    for (fault, phase, source, sink), rs in sorted(cells.items()):
        outcomes = ", ".join(f"{o} ×{n}" for o, n in Counter(r.outcome for r in rs).items())
        bad = sum(1 for r in rs if r.violations)
        lines.append(f"| {fault} | {phase} | {source} | {sink} | {len(rs)} | {outcomes} | {bad} |")
    return lines


def _recovery(results: list[Result]) -> list[str]:
    lines = ["", "## Recovery time per fault kind (heal → replica equals source)", "",
             "| fault | trials | p50 s | p99 s |", "|---|---|---|---|"]  # fmt: skip
    per_fault: dict[str, list[float]] = defaultdict(list)
    for r in results:
        if r.recovery_s is not None:
            per_fault[r.plan.fault].append(r.recovery_s)
    for fault, times in sorted(per_fault.items()):
        lines.append(
            f"| {fault} | {len(times)} | {percentile(times, 0.5):g} | {percentile(times, 0.99):g} |"
        )
    return lines
