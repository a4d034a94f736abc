"""Snapshot throughput: one table read whole into Delta, next to Spark JDBC and connectorx.

The table (``bench.snap``: BIGINT key, INT, VARCHAR(40), DECIMAL(12,2), DATETIME(6)) is loaded
once by the server itself from MariaDB's sequence engine and read by, at each parallelism:

- ``sparkcdc run`` with ``startup: snapshot`` (chunked, lock-free snapshot, then exit) into the
  Delta replica; rows/s over the snapshot's time: from Spark's first offset written (before it:
  start-up, i.e. source checks, JVM, session, data source workers, query start, first splits
  cut) to the last snapshot batch written (after it: shut-down, i.e. the hand-off batch, the
  query's end and the session stopping). Both fixed costs are reported beside it;
- Spark's JDBC source (MariaDB Connector/J, ``partitionColumn=id``) written to Parquet, timed in
  its own process around read + write only (session start and a small warm-up read excluded);
- connectorx reading the table into Arrow in this process: no Spark, no sink, the ceiling.

Where sparkcdc's time goes comes from its split files (``started``/``ended``/``rows`` per chunk)
and the sink's per-batch log lines.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from sparkcdc.sources.mysql.throwaway import ThrowawayMariaDB

JAR = "/usr/share/java/mariadb-java-client.jar"
TABLE = "bench.snap"
DDL = (
    "CREATE TABLE bench.snap (id BIGINT PRIMARY KEY, account INT NOT NULL, note VARCHAR(40), "
    "amount DECIMAL(12,2), created DATETIME(6))"
)
ROOT = Path(__file__).resolve().parent.parent
BATCH_LINE = re.compile(r"batch (\d+): (\d+) changes .*\(read ([\d.]+)s, written in ([\d.]+)s\)")
TIMEOUT = 1800.0
CLK_TCK = os.sysconf("SC_CLK_TCK")
SPLITS = Path("sparkcdc") / "snapshot" / "splits" / TABLE


def load(server: ThrowawayMariaDB, rows: int) -> float:
    """``rows`` dense keys in one INSERT … SELECT (kept out of the binlog: only read here)."""
    started = time.perf_counter()
    server.execute(
        "CREATE DATABASE IF NOT EXISTS bench",
        DDL,
        "SET SESSION sql_log_bin = 0",
        "INSERT INTO bench.snap SELECT seq, seq % 100000, CONCAT('customer-', seq, '-', "
        "seq % 97), seq * 0.01, TIMESTAMPADD(MICROSECOND, seq * 1234567, '2024-01-01') "
        f"FROM bench.seq_1_to_{rows}",
        "ANALYZE TABLE bench.snap",
    )
    server.query("SELECT COUNT(*) FROM bench.snap")  # the whole table in the buffer pool
    return time.perf_counter() - started


def timed(cmd: list[str], timeout: float = TIMEOUT) -> tuple[int, float, list[tuple[float, str]]]:
    """Run ``cmd`` in its own process group; (exit status, wall s, [(s since launch, line)]).
    The group is killed if the run times out or this process is interrupted."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True,
    )  # fmt: skip
    lines: list[tuple[float, str]] = []

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append((time.perf_counter() - started, line.rstrip()))

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    try:
        code = proc.wait(timeout=timeout)
    except BaseException:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        raise
    elapsed = time.perf_counter() - started
    reader.join(10)
    return code, elapsed, lines


class OtherCpu(threading.Thread):
    """CPU seconds of processes outside this benchmark's process tree (sampled each second):
    another workload on the machine makes every figure here slower, by no fixed share."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.seconds, self.done = 0.0, threading.Event()

    @staticmethod
    def _sample() -> dict[int, tuple[int, float]]:
        out = {}
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                f = stat.read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            out[int(stat.parent.name)] = (int(f[1]), (int(f[11]) + int(f[12])) / CLK_TCK)
        return out

    def run(self) -> None:
        last = self._sample()
        while not self.done.wait(1.0):
            now = self._sample()
            ours, grew = {os.getpid()}, True
            while grew:
                found = {p for p, (pp, _) in now.items() if pp in ours} - ours
                ours |= found
                grew = bool(found)
            for pid, (_, cpu) in now.items():
                if pid not in ours:
                    self.seconds += cpu - last.get(pid, (0, 0.0))[1]
            last = now

    def take(self) -> float:
        """The CPU seconds since the last call."""
        taken, self.seconds = self.seconds, 0.0
        return taken


def failure(what: str, code: int, lines: list[tuple[float, str]]) -> str:
    """The error lines and the end of a failed run's output; all of it kept in a file."""
    name = re.sub(r"\W+", "-", what).strip("-")
    log = Path(tempfile.gettempdir()) / f"sparkcdc-bench-{name}.log"
    log.write_text("\n".join(f"{t:8.2f} {s}" for t, s in lines))
    errors = [s for _, s in lines if re.search(r"Error|Exception|sparkcdc:", s) and " at " not in s]
    shown = "\n".join([*errors[:20], "...", *(s for _, s in lines[-15:])])
    return f"{what} exited {code} (whole output in {log}):\n{shown}"


def _union(spans: list[tuple[float, float]]) -> float:
    """Seconds during which at least one of ``spans`` was running."""
    total, end = 0.0, float("-inf")
    for a, b in sorted(spans):
        if b > end:
            total += b - max(a, end)
            end = b
    return total


def sparkcdc_snapshot(
    server: ThrowawayMariaDB,
    work: Path,
    rows: int,
    parallelism: int,
    chunk_size: int,
    batch_rows: int | None = None,
    changelog: bool = True,
    sink: str = "delta",
) -> dict[str, Any]:
    """One ``sparkcdc run`` (``batch_rows``: the option's value, else its default;
    ``changelog`` false: ``sink.snapshot_in_changelog: false``; ``sink``: the sink type)."""
    d = work / (f"sparkcdc-p{parallelism}" + ("" if batch_rows is None else f"-b{batch_rows}")
                + ("" if changelog else "-replica-only"))  # fmt: skip
    batch = "" if batch_rows is None else f", batch_rows: {batch_rows}"
    source = (
        f"type: mysql, host: 127.0.0.1, port: {server.port}, user: root, password: '', "
        f"server_id: '7101-7110', snapshot: {{parallelism: {parallelism}, "
        f"chunk_size: {chunk_size}{batch}}}"
    )
    found = snapshot_run(d, source, rows, parallelism, changelog, sink)
    return {"batch_rows_option": batch_rows, **found}


def snapshot_run(
    d: Path, source: str, rows: int, parallelism: int, changelog: bool = True, sink: str = "delta"
) -> dict[str, Any]:
    """``sparkcdc run`` of ``bench.snap`` with ``startup: snapshot`` from the ``source``
    settings given (YAML flow mapping entries) into a lake in the new folder ``d`` (its
    change log without the snapshot's rows unless ``changelog``); its figures
    (:func:`run_figures`)."""
    d.mkdir()
    cfg = d / "pipeline.yaml"
    cfg.write_text(
        f"source: {{{source}, tables: ['bench\\.snap'], startup: snapshot}}\n"
        f"sink: {{type: {sink}, path: {d / 'lake'}, "
        f"snapshot_in_changelog: {str(changelog).lower()}}}\n"
        f"pipeline: {{checkpoint: {d / 'checkpoint'}, spark: {{master: 'local[2]'}}}}\n"
    )
    epoch = time.time()
    code, wall, lines = timed([sys.executable, "-m", "sparkcdc.cli.main", "run", str(cfg)])
    if code != 0:
        raise RuntimeError(failure(f"sparkcdc run (parallelism {parallelism})", code, lines))
    return {"parallelism": parallelism, **run_figures(d, epoch, wall, lines, rows, sink)}


def run_figures(
    d: Path, epoch: float, wall: float, lines: list[tuple[float, str]], rows: int,
    sink: str = "delta",
) -> dict[str, Any]:  # fmt: skip
    """The figures of a ``sparkcdc run`` in ``d`` launched at ``epoch`` (``lines``: seconds
    since launch, text): start-up until Spark's first offset written, the snapshot until the
    last batch that wrote rows, then shut-down; chunk reads from the split files, Spark jobs and
    Delta writes from the sink's per-batch lines."""
    replica_rows = _replica_rows(d / "lake", sink)
    ck = d / "checkpoint"
    splits = [json.loads(p.read_text()) for p in (ck / SPLITS).glob("*.json")]
    # the splits of a run read in one query share their start and end: each read counted once
    spans = sorted({(s["started"] - epoch, s["ended"] - epoch) for s in splits})
    # start-up: until Spark wrote the first offset (the first splits planned), the fixed cost
    startup = (ck / "spark" / "offsets" / "0").stat().st_mtime - epoch
    batches = [(t, m) for t, s in lines if (m := BATCH_LINE.search(s))]
    jobs, writes = ([float(m.group(i)) for _, m in batches] for i in (3, 4))
    # the last batch that wrote snapshot rows: the rest of the run is the hand-off and shut-down
    written = max((t for t, m in batches if int(m.group(2))), default=wall)
    seconds = max(written - startup, 1e-9)
    # steady state: the rows of the batches after the first, over the time they took
    done = [t for t, _ in batches]
    later = sum(int(m.group(2)) for _, m in batches[1:])
    return {
        "rows": rows,
        "replica_rows": replica_rows,
        "wall_s": wall,
        "startup_s": startup,
        "shutdown_s": wall - written,
        "seconds": seconds,
        "rows_per_s": rows / seconds,
        "splits": len(splits),
        "pins": len({json.dumps(s["high"]) for s in splits}),  # distinct high watermarks
        "chunk_reads": len(spans),
        "split_rows": sum(int(s["rows"]) for s in splits),
        "window_changes": sum(int(s.get("window_changes", 0)) for s in splits),
        "chunk_read_task_s": sum(b - a for a, b in spans),
        "chunk_read_wall_s": _union(spans),
        "batches": len(batches),
        "batch_rows": [int(m.group(2)) for _, m in batches],
        "steady_rows_per_s": later / (done[-1] - done[0]) if later else float("nan"),
        "batch_job_s": jobs,
        "batch_write_s": writes,
        "spark_job_s": sum(jobs),
        "sink_write_s": sum(writes),
    }


def _replica_rows(lake: Path, sink: str) -> int:
    """The rows of ``bench.snap``'s replica in the lake (Delta's folder, or Iceberg's embedded
    catalog)."""
    if sink == "iceberg":
        from sparkcdc.config.model import SinkConfig
        from sparkcdc.core.table_name import TableName
        from sparkcdc.sinks.registry import sink_type

        reader = sink_type("iceberg").reader
        assert reader is not None
        found = reader(SinkConfig(path=str(lake), type="iceberg"))(
            TableName("bench", "snap"), "replica"
        )
        return 0 if found is None else found.num_rows
    from deltalake import DeltaTable

    return int(DeltaTable(str(lake / "bench" / "snap")).to_pyarrow_dataset().count_rows())


def jdbc(server: ThrowawayMariaDB, work: Path, rows: int, parallelism: list[int]) -> list[dict]:
    """Spark JDBC (MariaDB Connector/J) → Parquet (:func:`jdbc_runs`)."""
    login = {"url": f"jdbc:mysql://127.0.0.1:{server.port}/bench", "user": "root", "password": ""}
    spec = {**login, "driver": "org.mariadb.jdbc.Driver", "jar": JAR, "table": "snap"}
    return jdbc_runs(spec, work, rows, parallelism)


def jdbc_runs(spec: dict[str, Any], work: Path, rows: int, parallelism: list[int]) -> list[dict]:
    """Spark JDBC → Parquet in a child process (``python -m bench.snapshot jdbc SPEC``);
    ``spec``: the driver's ``jar``, ``url``, ``driver``, ``user``, ``password`` and ``table``."""
    if not Path(spec["jar"]).exists():
        raise RuntimeError(f"{spec['jar']} is missing: scripts/bench.sh installs it")
    spec = {**spec, "rows": rows, "out": str(work / "jdbc"), "parallelism": parallelism}
    code, _, lines = timed([sys.executable, "-m", "bench.snapshot", "jdbc", json.dumps(spec)])
    found = [s for _, s in lines if s.startswith("{")]
    if code != 0 or not found:
        raise RuntimeError(failure("the Spark JDBC baseline", code, lines))
    return list(json.loads(found[-1])["runs"])


def jdbc_child(spec: dict[str, Any]) -> None:
    """A warm-up read, then the table read whole and written to Parquet at each parallelism."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("bench-jdbc")
        .config("spark.jars", spec["jar"])
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    login = {k: spec[k] for k in ("url", "driver", "user", "password")}

    def read(table: str, hi: int, n: int) -> Any:
        bounds = {"partitionColumn": "id", "lowerBound": "1", "upperBound": str(hi)}
        return (
            spark.read.format("jdbc")
            .options(**login, **bounds, dbtable=table, numPartitions=str(n))
            .option("fetchsize", "10000")
            .load()
        )

    out, table = Path(spec["out"]), spec["table"]
    # a small read first: JDBC driver, codegen and Parquet writer warm (to JDBC's benefit)
    read(f"(SELECT * FROM {table} WHERE id <= 20000) w", 20000, 2).write.parquet(str(out / "w"))
    runs = []
    for n in spec["parallelism"]:
        target = str(out / f"p{n}")
        started = time.perf_counter()
        read(table, spec["rows"], n).write.parquet(target)
        seconds = time.perf_counter() - started
        runs.append({"parallelism": n, "rows": spark.read.parquet(target).count(),
                     "seconds": seconds})  # fmt: skip
    spark.stop()
    print(json.dumps({"runs": runs}), flush=True)


def connectorx(server: ThrowawayMariaDB, parallelism: list[int]) -> list[dict[str, Any]]:
    return connectorx_runs(f"mysql://root:@127.0.0.1:{server.port}/bench", "snap", parallelism)


def connectorx_runs(url: str, table: str, parallelism: list[int]) -> list[dict[str, Any]]:
    """connectorx into Arrow, partitioned on ``id`` when the parallelism is above 1."""
    import connectorx as cx

    runs = []
    for n in parallelism:
        extra: dict[str, Any] = {"partition_on": "id", "partition_num": n} if n > 1 else {}
        started = time.perf_counter()
        found = cx.read_sql(url, f"SELECT * FROM {table}", return_type="arrow", **extra)
        seconds = time.perf_counter() - started
        runs.append({"parallelism": n, "rows": found.num_rows, "seconds": seconds})
        del found
    return runs


def run(server: ThrowawayMariaDB, work: Path, rows: int, parallelism: list[int],
        chunk_size: int) -> dict[str, Any]:  # fmt: skip
    """The whole section on a running server (the table is loaded here, once)."""
    other = OtherCpu()
    other.start()
    load_s = load(server, rows)
    print(f"loaded {rows:,} rows in {load_s:.1f}s", flush=True)
    busy = {"load": other.take()}
    cx_runs = connectorx(server, parallelism)
    busy["connectorx"] = other.take()
    for r in cx_runs:
        print(f"  connectorx p{r['parallelism']}: {r['rows'] / r['seconds']:,.0f} rows/s")
    jdbc_runs = jdbc(server, work, rows, parallelism)
    busy["Spark JDBC"] = other.take()
    for r in jdbc_runs:
        print(f"  Spark JDBC p{r['parallelism']}: {r['rows'] / r['seconds']:,.0f} rows/s")
    cdc_runs = []
    for n in parallelism:
        r = sparkcdc_snapshot(server, work, rows, n, chunk_size)
        busy[f"sparkcdc p{n}"] = other.take()
        print(
            f"  sparkcdc p{n}: {r['rows_per_s']:,.0f} rows/s ({r['wall_s']:.1f}s, start-up "
            f"{r['startup_s']:.1f}s, replica {r['replica_rows']:,} rows)",
            flush=True,
        )
        if r["replica_rows"] != rows:
            print(f"  warning: the replica has {r['replica_rows']:,} rows, not {rows:,}")
        cdc_runs.append(r)
    replica_only = []  # the snapshot's rows left out of the change log: one encoding
    for n in parallelism:
        r = sparkcdc_snapshot(server, work, rows, n, chunk_size, changelog=False)
        busy[f"sparkcdc p{n}, replica only"] = other.take()
        print(f"  sparkcdc p{n}, replica only: {r['rows_per_s']:,.0f} rows/s", flush=True)
        replica_only.append(r)
    # the cost of a micro-batch: parallelism 1 again, its splits in four batches
    small = sparkcdc_snapshot(server, work, rows, 1, chunk_size, batch_rows=rows // 4)
    busy["sparkcdc p1, smaller batches"] = other.take()
    print(f"  sparkcdc p1 in {small['batches']} batches: {small['rows_per_s']:,.0f} rows/s")
    other.done.set()
    if max(busy.values()) > 2.0:
        print(f"  warning: other processes used the CPU meanwhile (s): {busy}", flush=True)
    for group in (cx_runs, jdbc_runs):
        for r in group:
            r["rows_per_s"] = r["rows"] / r["seconds"]
    jdbc_by = {r["parallelism"]: r for r in jdbc_runs}
    return {
        "rows": rows,
        "load_s": load_s,
        "other_cpu_s": busy,
        "chunk_size": chunk_size,
        "spark_master": "local[2]",
        "sparkcdc": cdc_runs,
        "sparkcdc_small_batches": small,
        "sparkcdc_replica_only": replica_only,
        "jdbc": jdbc_runs,
        "connectorx": cx_runs,
        "ratio_vs_jdbc": {
            str(r["parallelism"]): r["rows_per_s"] / jdbc_by[r["parallelism"]]["rows_per_s"]
            for r in cdc_runs
            if r["parallelism"] in jdbc_by
        },
    }


if __name__ == "__main__" and sys.argv[1:2] == ["jdbc"]:
    jdbc_child(json.loads(sys.argv[2]))
