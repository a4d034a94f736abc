"""One trial of the campaign: a table, a workload, ``sparkcdc run`` through the loopback proxy,
one fault at a random moment of a phase, healed; the pipeline restarted if it died; then the
replica awaited and the independent checker's verdict (FoundationDB's seeded simulation: every
choice comes from the trial's seed)."""

from __future__ import annotations

import contextlib
import random
import shutil
import subprocess
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.e2e.cli import write_config
from tests.e2e.cluster_runs import spark_settings
from tests.e2e.history_check import assert_history_matches, keep_history
from tests.e2e.iceberg_lake import IcebergLake, as_iceberg
from tests.e2e.workload import MARIADB, POSTGRES, ChangeWorkload
from tests.faults.checker import Identity, LakeTables, check_trial, source_accounts
from tests.faults.clock import ServerClock
from tests.faults.kinds import CLUSTER_SINK, FAULTS, RECONNECT_LIMIT, Fault
from tests.faults.lakes import DeltaTables, IcebergTables
from tests.faults.phases import Phase, phase_of
from tests.faults.pipeline import Pipeline, one_sentence
from tests.faults.proxy import TcpProxy
from tests.faults.servers import Servers, prepare_database
from tests.faults.store_proxy import StoreProxy

CONVERGE_S = 240.0


@dataclass(frozen=True)
class Plan:
    seed: int
    source: str
    sink: str
    phase: str
    fault: str
    offset: float  # seconds into the phase


@dataclass
class Result:
    plan: Plan
    phase_seen: str = ""
    outcome: str = ""  # survived | ended with a sentence | killed | refused, then …
    recovery_s: float | None = None
    wall_s: float = 0.0
    changes: int = 0
    violations: list[str] = field(default_factory=list)
    notes: dict[str, str] = field(default_factory=dict)
    commit: str = ""  # the code the trial ran (git's short hash, "+changes" if uncommitted)


@dataclass
class Trial:
    """What the faults reach (:class:`tests.faults.kinds.Target`)."""

    source: str
    database: str
    server: Any
    proxy: TcpProxy
    pipeline: Pipeline
    checkpoint: Path
    lake_dir: Path
    rng: random.Random
    notes: dict[str, str]
    clock: ServerClock
    cluster: Any = None  # the standalone cluster the pipeline runs on (sink delta-cluster)
    torn_copies: dict[Path, bytes] = field(default_factory=dict)
    http_proxy: StoreProxy | None = None  # between the pipeline and an S3 lake


@dataclass(frozen=True)
class _At:
    """The pipeline file's server: the proxy's port."""

    port: int


def pipeline_file(plan: Plan, tmp: Path, servers: Servers, port: int, db: str,
                  s3_endpoint: str | None = None) -> Path:  # fmt: skip
    phase = phase_of(plan.phase).settings()  # the phase's keys (tests.faults.phases)
    snapshot = f", snapshot: {{chunk_size: 2000, parallelism: 2, batch_rows: 4000{phase.snapshot}}}"
    extra = f", reconnect_timeout: {RECONNECT_LIMIT:g}s{snapshot}{phase.source}"
    if plan.source == "mysql":
        pattern, kind, user, password = rf"{db}\.accounts", "mysql", "root", ""
        extra += ", server_id: '7201-7210'"
    else:
        pg = servers.postgres
        pattern, kind, user, password = r"public\.accounts", "postgres", pg.user, pg.password
        extra += f", database: {db}"
    lake, sink, spark = None, "", ""
    if plan.sink == "delta-s3":
        lake, sink = servers.s3_lake(endpoint=s3_endpoint)
    if plan.sink == CLUSTER_SINK:  # both workers' cores
        spark = spark_settings(servers.cluster, cores=2)
    cfg = write_config(
        tmp, _At(port), pattern, startup=phase.startup, kind=kind, user=user, password=password,
        extra_source=extra, lake=lake, extra_sink=sink, max_bytes=phase.max_bytes,
        extra_pipeline=spark,
    )  # fmt: skip
    cfg = as_iceberg(cfg) if plan.sink == "iceberg" else cfg
    return cfg if plan.sink == "delta-s3" else keep_history(cfg)  # the checker reads a folder


def lake_tables(plan: Plan, tmp: Path, servers: Servers, db: str) -> LakeTables:
    schema = db if plan.source == "mysql" else "public"
    if plan.sink == "iceberg":
        return IcebergTables(tmp / "lake", schema)
    if plan.sink == "delta-s3":
        url, _ = servers.s3_lake(existing=True)
        return DeltaTables(url, schema, servers.s3_options())
    return DeltaTables(str(tmp / "lake"), schema)


def run_trial(plan: Plan, servers: Servers, work: Path) -> Result:
    """Run ``plan`` under ``work`` and check it; never raises for what the pipeline did."""
    result, began = Result(plan), time.monotonic()
    tmp = work / f"trial-{plan.seed}"
    shutil.rmtree(tmp, ignore_errors=True)
    (tmp / "lake").mkdir(parents=True)
    fault = FAULTS[plan.fault]
    mounted = False
    try:
        if fault.local_lake:
            subprocess.run(["mount", "-t", "tmpfs", "-o", "size=96m", "tmpfs", str(tmp / "lake")],
                           check=True)  # fmt: skip
            mounted = True
        _run(plan, servers, tmp, fault, result)
    except Exception as exc:  # the harness failed: a violation to look at, not a crash
        result.violations.append(f"harness: {type(exc).__name__}: {exc}")
    finally:
        if mounted:
            subprocess.run(["umount", "-l", str(tmp / "lake")], check=False)
        result.wall_s = round(time.monotonic() - began, 1)
        if not result.violations:
            shutil.rmtree(tmp, ignore_errors=True)
    return result


def _run(plan: Plan, servers: Servers, tmp: Path, fault: Fault, result: Result) -> None:
    rng = random.Random(plan.seed)
    server = servers.server(plan.source)
    db = f"faults_{plan.seed}"
    phase = phase_of(plan.phase)
    prepare_database(server, plan.source, db, phase.preload)
    proxy = TcpProxy(server.port)
    http_proxy = StoreProxy(servers.s3.port) if plan.sink == "delta-s3" else None
    endpoint = http_proxy.endpoint if http_proxy is not None else None
    cfg = pipeline_file(plan, tmp, servers, proxy.port, db, endpoint)
    cluster = servers.cluster if plan.sink == CLUSTER_SINK else None
    trial = Trial(plan.source, db, server, proxy, Pipeline(cfg, tmp), tmp / "checkpoint",
                  tmp / "lake", rng, result.notes, servers.clocks[plan.source], cluster,
                  http_proxy=http_proxy)  # fmt: skip
    preloaded: Counter[Identity] = Counter(("c", k, 0) for k in range(1, phase.preload + 1))
    committed = Counter(preloaded)
    try:
        try:
            phase.lake = lake_tables(plan, tmp, servers, db)
            phase.prepare(trial)
            committed += _fault_and_heal(plan, trial, fault, result, phase)
            after = _workload(server, plan, db, 20_000_000, 600, rng)
            after.start()
            after.join()
            committed += _finished(after, result)
            _converge(trial, plan, servers, tmp, db, committed, result)
        finally:
            _stop(trial, result)
        lake = lake_tables(plan, tmp, servers, db)
        verdict = check_trial(source_accounts(server, db), lake, "accounts", committed,
                              **phase.expected(preloaded))  # fmt: skip
        result.violations.extend(verdict.violations[:10])
        result.violations.extend(phase.check(trial, lake.rows("accounts")))
        result.violations.extend(_history_violations(plan, tmp, db))
        result.changes = verdict.changes + verdict.reads
    finally:
        with contextlib.suppress(Exception):
            servers.drop_database(plan.source, db)
        servers.after_trial(plan.source, plan.fault)


def _history_violations(plan: Plan, tmp: Path, db: str) -> list[str]:
    """The history table against the rebuild of the change log (:mod:`tests.e2e.history_check`;
    kept on a local lake only)."""
    if plan.sink == "delta-s3":
        return []
    schema = db if plan.source == "mysql" else "public"
    lake = IcebergLake(tmp / "lake") if plan.sink == "iceberg" else tmp / "lake"
    try:
        assert_history_matches(lake, schema, "accounts")
    except AssertionError as exc:
        return [f"history: {str(exc)[:1500]}"]
    return []


def _stop(trial: Trial, result: Result) -> None:
    if trial.pipeline.alive():
        status = trial.pipeline.stop()
        if status != 0:
            result.notes["stop"] = f"exit {status}"
    trial.proxy.close()
    if trial.http_proxy is not None:
        trial.http_proxy.close()


def _workload(server: Any, plan: Plan, db: str, first: int, changes: int,
              rng: random.Random) -> ChangeWorkload:  # fmt: skip
    dialect = MARIADB if plan.source == "mysql" else POSTGRES
    workload = ChangeWorkload(server, db, changes, rng.randrange(1 << 30), dialect)
    workload.next_id = first
    return workload


def _finished(workload: ChangeWorkload, result: Result) -> Counter[Identity]:
    if workload.error is not None:
        result.violations.append(f"harness: the workload failed: {workload.error}")
    return workload.expected


def _fault_and_heal(
    plan: Plan, trial: Trial, fault: Fault, result: Result, phase: Phase
) -> Counter[Identity]:
    """Start the pipeline and the workload, reach the phase (:mod:`tests.faults.phases`),
    inject, heal, restart the pipeline if it died; the changes the workload committed."""
    started = time.monotonic()
    trial.pipeline.start()
    writes = _workload(trial.server, plan, trial.database, 10_000_000, 3000, trial.rng)
    phase.reach(trial, writes, plan.offset)
    if fault.writes_pause:
        writes.join()
    result.phase_seen = phase.seen(trial)
    if not trial.pipeline.alive():
        raise RuntimeError(f"the pipeline ended before the fault: {trial.pipeline.output()[-600:]}")
    result.notes["injected_at_s"] = f"{time.monotonic() - started:.1f}"
    during = None
    if fault.writes_during:
        during = _workload(trial.server, plan, trial.database, 15_000_000, 3000, trial.rng)
        during.start()
    fault.inject(trial)
    fault.heal(trial)
    trial.notes["healed_at"] = str(time.monotonic())
    writes.join()
    if during is not None:
        during.join()
    _after_heal(plan, trial, result)
    during_writes = Counter() if during is None else _finished(during, result)
    return _finished(writes, result) + during_writes + phase.settle(trial)


def _after_heal(plan: Plan, trial: Trial, result: Result) -> None:
    """Judge how the pipeline took the fault; restart it if it died. A torn checkpoint is
    survived (the torn file removed where that is safe) or refused with one sentence naming
    the file; then the trial takes the way out it names (the file restored from a copy) and
    the restarted pipeline must converge like any other."""
    killed = plan.fault in ("pipeline-kill9", "torn-checkpoint")
    if not trial.pipeline.alive():
        _judge_end(trial, result, expected=killed, what="the fault")
        trial.pipeline.start()
    else:
        result.outcome = "survived"
    if plan.fault == "torn-checkpoint" and trial.pipeline.wait_exit(60) is not None:
        _judge_end(trial, result, expected=False, what="the torn checkpoint")
        torn = trial.notes.get("torn", "")
        named = torn.split(" ")[0]
        if named and named not in trial.pipeline.output().splitlines()[-1]:
            result.violations.append(f"the refusal does not name the torn file {named}")
        result.outcome = "refused with a sentence naming the file, restored, restarted"
        for path, data in trial.torn_copies.items():  # the way out the sentence names
            path.write_bytes(data)
        trial.pipeline.start()
    elif plan.fault == "torn-checkpoint":
        result.outcome = "survived the torn file"


def _judge_end(trial: Trial, result: Result, expected: bool, what: str) -> None:
    output = trial.pipeline.output()
    if expected:
        result.outcome = "killed, restarted"
        return
    last = output.strip().splitlines()[-1] if output.strip() else "(nothing)"
    result.notes["sentence"] = last[:400]
    result.outcome = "ended with a sentence, restarted"
    if not one_sentence(output):
        result.outcome = "ended without a sentence, restarted"
        result.violations.append(f"after {what} the pipeline ended without one sentence: {last}")


def _converge(trial: Trial, plan: Plan, servers: Servers, tmp: Path, db: str,
              committed: Counter[Identity], result: Result) -> None:  # fmt: skip
    """Wait until the replica equals the source (restarting a pipeline that died, judging its
    sentence); the recovery time runs from the heal."""
    healed = float(trial.notes.pop("healed_at"))
    lake = lake_tables(plan, tmp, servers, db)
    deadline = time.monotonic() + CONVERGE_S
    restarts = 0
    while time.monotonic() < deadline:
        if not trial.pipeline.alive():
            restarts += 1
            _judge_end(trial, result, expected=False, what="the restart")
            if restarts > 2:
                result.violations.append("the pipeline kept ending after the fault was healed")
                return
            trial.pipeline.start()
        with contextlib.suppress(Exception):  # a table being written, or not there yet
            held = lake.rows("accounts")
            if held is not None and len(held) == _live(committed):
                verdict = check_trial(source_accounts(trial.server, db), lake, "accounts",
                                      committed, reads_allowed=True)  # fmt: skip
                if not any(v.startswith("replica") for v in verdict.violations):
                    result.recovery_s = round(time.monotonic() - healed, 1)
                    return
        time.sleep(1.0)
    result.violations.append(f"the replica did not equal the source {CONVERGE_S:g}s after the heal")


def _live(committed: Counter[Identity]) -> int:
    keys = {key for _, key, _ in committed}
    return len(keys) - sum(1 for op, _, _ in committed if op == "d")
