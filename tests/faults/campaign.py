"""The seeded fault campaign (FoundationDB's seeded simulation, Jepsen's nemesis and checker):
``python -m tests.faults.campaign --seed S --trials N``.

Trial ``i`` runs with seed ``S + i`` and takes every choice from ``random.Random(S + i)``: the
fault (by turn, ``(S + i) mod`` the number of faults, so consecutive trials cover every kind),
the source and sink it applies to, the phase (:mod:`tests.faults.phases`, among those that apply
to the source) and the moment; ``--seed S + i --trials 1`` with the same lists replays it.
``--phases`` picks the phases (all by default). Writes ``faults/REPORT.md`` and
``faults/report.json`` after every trial; ``--resume`` goes on with the campaign those hold
(the same lists), running only the seeds it has not run. Exits 1 on any violation."""

from __future__ import annotations

import argparse
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.faults.kinds import CLUSTER_SINK, FAULTS
from tests.faults.phases import PHASES
from tests.faults.report import read_results, write_report
from tests.faults.servers import Servers
from tests.faults.trial import Plan, Result, run_trial

SOURCES = ("mysql", "postgres")
SINKS = ("delta", "iceberg", "delta-s3", CLUSTER_SINK)


def plan_trial(
    seed: int, sources: list[str], sinks: list[str], faults: list[str],
    phases: list[str] | None = None,
) -> Plan:  # fmt: skip
    """The trial of ``seed``: everything it does, from the seed alone (``phases``: all by
    default; with ``snapshot,stream`` a seed draws what it drew before the other phases)."""
    rng = random.Random(seed)
    phases = list(PHASES) if phases is None else phases
    sources = [s for s in sources if any(PHASES[p]().applies(s) for p in phases)]
    usable = [f for f in faults if any(FAULTS[f].applies(s, k) for s in sources for k in sinks)]
    fault = usable[seed % len(usable)]
    source = rng.choice([s for s in sources if any(FAULTS[fault].applies(s, k) for k in sinks)])
    sink = rng.choice([k for k in sinks if FAULTS[fault].applies(source, k)])
    phase = PHASES[rng.choice([p for p in phases if PHASES[p]().applies(source)])]
    return Plan(seed, source, sink, phase.name, fault,
                round(rng.uniform(0.0, phase.max_offset), 2))  # fmt: skip


def run_campaign(
    seed: int, trials: int, sources: list[str], sinks: list[str], faults: list[str],
    out: Path, duration: float | None = None, phases: list[str] | None = None,
    resume: bool = False,
    keep: Path | None = None,
) -> list[Result]:  # fmt: skip
    """Run the trials (stopping early once ``duration`` seconds passed; ``resume``: those the
    report in ``out`` lacks), writing the report after each; every trial of the report.
    ``keep``: a failed trial's folder (configuration, checkpoint, lake, logs) copied there."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    args = f"--sources {','.join(sources)} --sinks {','.join(sinks)} --faults {','.join(faults)}"
    args += f" --phases {','.join(PHASES if phases is None else phases)}"
    results, earlier_s = read_results(out, args) if resume else ([], 0)
    done, commit = {r.plan.seed for r in results}, _commit()
    began = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="sparkcdc-faults-") as base:
        os.chmod(base, 0o755)  # PostgreSQL's server runs as its own user
        servers = Servers(Path(base))
        try:
            for i in range(trials):
                if seed + i in done:
                    continue
                if duration is not None and time.monotonic() - began > duration:
                    break
                plan = plan_trial(seed + i, sources, sinks, faults, phases)
                result = _without_folder(run_trial(plan, servers, Path(base)), base)
                if keep is not None and result.violations:
                    shutil.copytree(Path(base) / f"trial-{plan.seed}", keep / f"trial-{plan.seed}",
                                    symlinks=True, dirs_exist_ok=True)  # fmt: skip
                result.commit = commit
                results.append(result)
                wall = earlier_s + round(time.monotonic() - began)
                write_report(results, out, seed, args, wall)
                verdict = "ok" if not result.violations else "VIOLATION"
                print(f"trial {plan.seed}: {plan.fault} {plan.phase} {plan.source} {plan.sink}"
                      f" -> {result.outcome}, {result.wall_s}s, {verdict}", flush=True)  # fmt: skip
                for line in result.violations:
                    print(f"  {line}", flush=True)
        finally:
            servers.stop()
    write_report(results, out, seed, args, earlier_s + round(time.monotonic() - began))
    return results


def _commit() -> str:
    """The code's git commit (short), ``+changes`` when its files differ from it."""

    def git(*argv: str) -> str:
        found = subprocess.run(["git", *argv], capture_output=True, text=True, check=False)
        return found.stdout.strip() if found.returncode == 0 else ""

    head = git("rev-parse", "--short", "HEAD")
    return head + ("+changes" if head and git("status", "--porcelain", "src", "tests") else "")


def _without_folder(result: Result, base: str) -> Result:
    """The result with the campaign's temporary folder left out of its words."""
    result.violations = [v.replace(base, "<tmp>") for v in result.violations]
    result.notes = {k: v.replace(base, "<tmp>") for k, v in result.notes.items()}
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="faults", description=__doc__)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--duration", type=float, default=None, help="stop after N seconds")
    parser.add_argument("--sources", default=",".join(SOURCES))
    parser.add_argument("--sinks", default=",".join(SINKS))
    parser.add_argument("--faults", default=",".join(FAULTS))
    parser.add_argument("--phases", default=",".join(PHASES))
    parser.add_argument("--out", type=Path, default=Path("faults"))
    parser.add_argument(
        "--keep", type=Path, default=None, help="copy each failed trial's folder into this folder"
    )
    parser.add_argument("--resume", action="store_true",
                        help="go on with the campaign the report in --out holds")  # fmt: skip
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # the servers stop on the way out
    names = args.faults.split(",")
    unknown = [f for f in names if f not in FAULTS]
    if unknown:
        parser.error(f"unknown faults {unknown}; known: {', '.join(FAULTS)}")
    phases = args.phases.split(",")
    if [p for p in phases if p not in PHASES]:
        parser.error(f"unknown phases {[p for p in phases if p not in PHASES]}; "
                     f"known: {', '.join(PHASES)}")  # fmt: skip
    results = run_campaign(args.seed, args.trials, args.sources.split(","),
                           args.sinks.split(","), names, args.out, args.duration,
                           phases, args.resume, args.keep)  # fmt: skip
    return 1 if any(r.violations for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
