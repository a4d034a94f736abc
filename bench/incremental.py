"""Incremental snapshot while streaming: its speed, and what it costs the stream's latency.

One server holds ``bench.snap`` (the snapshot section's table and loader, kept out of the binlog)
and ``bench.ticks``, which receives the latency section's steady insert load. Each run starts a
new ``sparkcdc run`` (new checkpoint and lake) at the end of the log, capturing both tables, so
``bench.snap`` reaches the replica only through an incremental snapshot:

- the idle run streams the load alone for ``idle_seconds``;
- each snapshot run streams it for ``lead_seconds``, then ``sparkcdc signal execute-snapshot
  --tables bench.snap`` (file channel) starts an incremental snapshot of the table, and the load
  goes on until the snapshot's ``table-done`` notification is in the sink and a little after.
  Runs differ by ``source.snapshot.incremental_chunks`` (chunks read in parallel per window).

Snapshot seconds run from the signal sent (the CLI returned: the signal file is written) to
the Delta commit of the replica ``bench.snap`` that holds its last rows (the micro-batch that
carries ``table-done``); rows/s = the table's rows over them. The notifications' own timestamps
(``started`` → ``table-done``) are kept beside them. Latency is :mod:`bench.latency`'s (commit at
the source → first Delta version of ``bench.ticks`` holding the row); "during the snapshot"
takes the rows committed between the signal and that last commit. After each snapshot run the
replica's row count must equal the table's, else the section fails.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from bench import latency, snapshot
from sparkcdc.config.model import SnapshotConfig
from sparkcdc.sources.mysql.throwaway import ThrowawayMariaDB

TABLE = snapshot.TABLE  # bench.snap
START_TIMEOUT = 240.0  # the pipeline's first replica commit
SNAPSHOT_TIMEOUT = 900.0
SETTLE_S = 3.0  # the load goes on this long after table-done
DRAIN_S = 5.0  # then the pipeline this long, so the last rows become visible
SNAP_BATCH = re.compile(r"batch \d+: \d+ changes to .*bench\.snap")  # the sink's batch line


class Pipeline:
    """``sparkcdc run`` in its own process group, its output kept with the time of each line."""

    def __init__(self, cfg: Path) -> None:
        self.started = time.time()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "sparkcdc.cli.main", "run", str(cfg)],
            cwd=snapshot.ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            start_new_session=True,
        )  # fmt: skip
        self.lines: list[tuple[float, str]] = []
        self._pump = threading.Thread(target=self._read, daemon=True)
        self._pump.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append((time.time() - self.started, line.rstrip()))

    def check(self, what: str) -> None:
        code = self.proc.poll()
        if code is not None:
            self._pump.join(10)
            raise RuntimeError(snapshot.failure(what, code, self.lines))

    def stop(self) -> None:
        """SIGTERM, as a user stops it; SIGKILL for the whole group if it does not end."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        self._pump.join(10)

    def kill(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


def pipeline_config(
    d: Path,
    server: ThrowawayMariaDB,
    trigger: str,
    chunk_size: int,
    chunks: int,
    window: float | None = None,
) -> Path:
    """Both tables captured from the end of the log as it is now (``window``: the
    ``incremental_window`` in seconds, None for the default)."""
    extra = "" if window is None else f", incremental_window: {window}"
    file, pos = server.query("SHOW MASTER STATUS")[0][:2]
    cfg = d / "pipeline.yaml"
    cfg.write_text(
        f"source: {{type: mysql, host: 127.0.0.1, port: {server.port}, user: root, "
        f"password: '', tables: ['bench\\.ticks', 'bench\\.snap'], "
        f"startup: 'position:{file}:{pos}', "
        f"snapshot: {{chunk_size: {chunk_size}, incremental_chunks: {chunks}{extra}}}}}\n"
        f"sink: {{type: delta, path: {d / 'lake'}}}\n"
        f"pipeline: {{checkpoint: {d / 'checkpoint'}, trigger: {trigger}, "
        "spark: {master: 'local[2]'}}\n"
    )
    return cfg


def commit_times(table_path: Path) -> list[float]:
    """The commit time (epoch s) of each version of a Delta table, in version order."""
    out = []
    for entry in sorted((table_path / "_delta_log").glob("*.json")):
        for line in entry.read_text().splitlines():
            info = json.loads(line).get("commitInfo")
            if info and "timestamp" in info:
                out.append(info["timestamp"] / 1000.0)
                break
        else:
            out.append(entry.stat().st_mtime)
    return out


def stop_load(load: latency.SteadyLoad) -> None:
    """End a load started with a long duration: its loop ends at its next transaction."""
    load.seconds = 0
    load.join()


def _lat(values: list[float]) -> dict[str, float]:
    return {
        "rows": len(values),
        "p50_s": latency.percentile(values, 0.5),
        "p99_s": latency.percentile(values, 0.99),
        "max_s": max(values) if values else float("nan"),
    }


def one_run(
    server: ThrowawayMariaDB,
    work: Path,
    name: str,
    chunks: int,
    do_snapshot: bool,
    *,
    rate: int,
    trigger: str,
    chunk_size: int,
    idle_seconds: float,
    lead_seconds: float,
    first_id: int,
    rows: int,
    window: float | None = None,
) -> tuple[dict[str, Any], int]:
    """One pipeline from start to SIGTERM; its figures and the next free ``ticks`` key."""
    from deltalake import DeltaTable

    from sparkcdc.sinks.delta.notifications import read_notifications

    d = work / name
    d.mkdir()
    cfg = pipeline_config(d, server, trigger, chunk_size, chunks, window)
    lake = d / "lake"
    ticks = lake / "bench" / "ticks"
    pipe = Pipeline(cfg)
    load: latency.SteadyLoad | None = None
    try:
        server.execute(f"INSERT INTO bench.ticks VALUES ({first_id}, 'warm-up', 0)")
        deadline = time.time() + START_TIMEOUT
        while not (ticks / "_delta_log").exists():
            pipe.check(f"sparkcdc run ({name})")
            if time.time() > deadline:
                raise RuntimeError(f"{name}: no replica of bench.ticks after {START_TIMEOUT:.0f}s")
            time.sleep(0.2)
        ready = time.time() - pipe.started
        load = latency.SteadyLoad(server, rate=rate, seconds=1e9, first_id=first_id + 1)
        load.start()
        out: dict[str, Any] = {"name": name, "startup_s": ready}
        if not do_snapshot:
            time.sleep(idle_seconds)
            stop_load(load)
        else:
            out["incremental_chunks"] = chunks
            out["incremental_window"] = (
                SnapshotConfig.incremental_window if window is None else window
            )
            time.sleep(lead_seconds)
            pipe.check(f"sparkcdc run ({name})")
            sent = time.time()
            proc = subprocess.run(
                [sys.executable, "-m", "sparkcdc.cli.main", "signal", "execute-snapshot",
                 "--config", str(cfg), "--tables", TABLE],
                cwd=snapshot.ROOT, capture_output=True, text=True, timeout=120,
            )  # fmt: skip
            if proc.returncode != 0:
                raise RuntimeError(f"sparkcdc signal failed:\n{proc.stdout}{proc.stderr}")
            signalled = time.time()
            deadline = signalled + SNAPSHOT_TIMEOUT
            notes: list[dict[str, Any]] = []
            while not any(n["type"] == "table-done" for n in notes):
                pipe.check(f"sparkcdc run ({name})")
                if time.time() > deadline:
                    raise RuntimeError(f"{name}: no table-done after {SNAPSHOT_TIMEOUT:.0f}s")
                time.sleep(1.0)
                notes = read_notifications(str(lake))
            skipped = [n for n in notes if n["type"] == "skipped"]
            if skipped:
                raise RuntimeError(f"{name}: the snapshot was skipped: {skipped[0]['details']}")
            time.sleep(SETTLE_S)
            stop_load(load)
            out |= {"signal_cli_s": signalled - sent, "signalled": signalled}
        time.sleep(DRAIN_S)
    except BaseException:
        if load is not None and load.is_alive():
            stop_load(load)
        pipe.kill()
        raise
    pipe.stop()
    assert load is not None
    visible = latency.visibility_times(ticks)
    lat = {i: visible[i] - t for i, t in load.committed.items() if i in visible}
    out |= {
        "rows_streamed": len(load.committed),
        "not_visible": len(load.committed) - len(lat),
        "streaming": _lat(list(lat.values())),
        "replica_commits": len(commit_times(ticks)),
    }
    if do_snapshot:
        notes = read_notifications(str(lake))
        by = {n["type"]: n for n in notes if n["db"] == "bench" and n["table"] == "snap"}
        started, done = by["started"], by["table-done"]
        snap = lake / "bench" / "snap"
        versions = commit_times(snap)
        finished = versions[-1]  # nothing but the snapshot writes this replica
        signalled = out.pop("signalled")
        replica_rows = DeltaTable(str(snap)).to_pyarrow_dataset().count_rows()
        seconds = finished - signalled
        out |= {
            "rows": rows,
            "replica_rows": replica_rows,
            "notified_rows": json.loads(done["details"]).get("rows"),
            "windows": sum(1 for n in notes if n["type"] == "chunk" and n["table"] == "snap"),
            "batches": sum(1 for _, line in pipe.lines if SNAP_BATCH.search(line)),
            "replica_versions": len(versions),
            "seconds": seconds,
            "rows_per_s": rows / seconds,
            "pickup_s": started["ts_ms"] / 1000 - signalled,
            "notice_seconds": (done["ts_ms"] - started["ts_ms"]) / 1000,
            "before": _lat([v for i, v in lat.items() if load.committed[i] < signalled]),
            "during": _lat(
                [v for i, v in lat.items() if signalled <= load.committed[i] <= finished]
            ),
        }
    return out, load.next_id


def mode_label(chunks: int, window: float | None) -> str:
    """How a snapshot run reads: ``one chunk per window`` or ``chunks N``."""
    return "one chunk per window" if window == 0 and chunks == 1 else f"chunks {chunks}"


def run(
    server: ThrowawayMariaDB,
    work: Path,
    rows: int,
    chunk_modes: list[int],
    *,
    rate: int,
    trigger: str,
    chunk_size: int,
    idle_seconds: float,
    lead_seconds: float,
    window: float | None = None,
    baseline: bool = True,
) -> dict[str, Any]:
    """The whole section on a running server: load once, then the idle run, the one chunk per
    window run (``baseline``) and one snapshot run per ``incremental_chunks`` value, with
    ``incremental_window`` = ``window`` seconds (None: the default)."""
    other = snapshot.OtherCpu()
    other.start()
    load_s = snapshot.load(server, rows)
    server.execute(latency.LATENCY_DDL)
    print(f"loaded {rows:,} rows in {load_s:.1f}s", flush=True)
    busy = {"load": other.take()}
    common = {
        "rate": rate,
        "trigger": trigger,
        "chunk_size": chunk_size,
        "idle_seconds": idle_seconds,
        "lead_seconds": lead_seconds,
        "rows": rows,
    }
    next_id = 0
    idle, next_id = one_run(
        server, work, "idle", SnapshotConfig.incremental_chunks, False,
        first_id=next_id, **common,
    )  # fmt: skip
    busy["idle"] = other.take()
    s = idle["streaming"]
    print(f"  idle: latency p50 {s['p50_s']:.2f}s p99 {s['p99_s']:.2f}s", flush=True)
    runs = []
    # Debezium's way first: one chunk per window (per micro-batch here), then the windows of
    # incremental_window, each reading incremental_chunks chunks at a time
    modes = [(1, 0.0)] if baseline else []
    for chunks, seconds in [*modes, *((c, window) for c in chunk_modes)]:
        label = mode_label(chunks, seconds)
        r, next_id = one_run(
            server, work, label.replace(" ", "-"), chunks, True, first_id=next_id,
            window=seconds, **common,
        )  # fmt: skip
        r["mode"] = label
        busy[label] = other.take()
        d = r["during"]
        print(
            f"  {label}: {r['rows_per_s']:,.0f} rows/s ({r['seconds']:.1f}s, "
            f"{r['windows']} windows), latency during p50 {d['p50_s']:.2f}s "
            f"p99 {d['p99_s']:.2f}s, replica {r['replica_rows']:,} rows",
            flush=True,
        )
        if r["replica_rows"] != rows:
            raise RuntimeError(
                f"{label}: the replica of {TABLE} has "
                f"{r['replica_rows']:,} rows, the table {rows:,}"
            )
        runs.append(r)
    other.done.set()
    if max(busy.values()) > 2.0:
        print(f"  warning: other processes used the CPU meanwhile (s): {busy}", flush=True)
    return {
        "rows": rows,
        "load_s": load_s,
        "rate_rows_per_s": rate,
        "trigger": trigger,
        "chunk_size": chunk_size,
        "window_s": SnapshotConfig.incremental_window if window is None else window,
        "idle_seconds": idle_seconds,
        "lead_seconds": lead_seconds,
        "spark_master": "local[2]",
        "other_cpu_s": busy,
        "idle": idle,
        "runs": runs,
    }
