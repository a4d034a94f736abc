"""One pipeline run: check the source, start Spark, stream binlog changes into Delta, stop cleanly.

``run_pipeline(config)`` is what ``sparkcdc run`` does:

1. check the source before Spark starts (server ready for CDC, tables matched, every table's
   schema and key loadable): a bad input fails here with its sentence;
2. start the SparkSession (``pipeline.spark.master``, quiet logs, Python workers on this
   interpreter);
3. ``readStream.format("mysql-cdc")`` → ``writeStream.foreachBatch(DeltaSink)`` with Spark's
   checkpoint in ``<checkpoint>/spark`` and the source's own files (schema history, status) in
   ``<checkpoint>/sparkcdc``;
4. run until SIGTERM/SIGINT (the micro-batch in flight finishes and commits, then the query
   stops) or, with ``available_now``, until everything up to the log end seen at start is
   written (``trigger(availableNow=True)``).

Errors of the log reader (in the source process) and of the sink come back as the
:class:`~sparkcdc.core.errors.SparkCDCError` they started as, with their sentence.
"""

from __future__ import annotations

import logging
import os
import re
import signal
import sys
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

from sparkcdc.config.model import Config
from sparkcdc.core import errors
from sparkcdc.core.schema import TableSchema
from sparkcdc.spark.checkpoint import clear_torn_first_offset, pipeline_id, snapshot_ahead
from sparkcdc.spark.status import STATUS_FILE, read_status

log = logging.getLogger("sparkcdc.pipeline")
SPARK_LOG_LEVEL = "SPARKCDC_SPARK_LOG_LEVEL"  # e.g. ERROR: Spark's own log on stderr again

LOG4J = """rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n%ex
"""


@dataclass(frozen=True)
class Progress:
    """What the progress line shows, about once a second."""

    batches: int
    changes: int
    events_per_s: float
    lag_s: float | None  # now - commit time of the newest change written (0 when caught up)
    position: str | None
    caught_up: bool
    snapshot: dict[str, dict[str, Any]] | None = None  # per table, while a snapshot runs
    incremental: dict[str, Any] | None = None  # the incremental snapshot running or waiting


ProgressCallback = Callable[[Progress], None]


def check_source(config: Config, startup: bool = True) -> list[TableSchema]:
    """Fail before Spark starts unless the server, the table filter and every table are usable,
    and (``startup``) the configured start position resolves."""
    from sparkcdc.sources.mysql.catalog import MySQLCatalog
    from sparkcdc.sources.mysql.startup import resolve_startup

    s = config.source
    catalog = MySQLCatalog(s.host, s.port, s.user, s.password, s.connect_timeout)
    try:
        catalog.check_ready()
        tables = catalog.match_tables(list(s.tables))
        catalog.check_ready(sorted({db for db, _ in tables}))
        try:
            schemas = [
                catalog.load_schema(db, t, s.row_keys.get(f"{db}.{t}", ())) for db, t in tables
            ]
        except errors.TableWithoutKey as exc:
            if not s.takes_snapshot:
                raise
            name = f"{exc.fields.get('db')}.{exc.fields.get('table')}"
            raise errors.TableWithoutKey(
                f"Table {name} has no primary key to identify its rows and cut its snapshot "
                f"into chunks; name a unique column with source.snapshot.chunk_key_columns "
                f'(or source.key_columns): {{"{name}": [col, ...]}}.',
                **exc.fields,
            ) from None
        if startup and not s.takes_snapshot:
            resolve_startup(catalog, s, s.startup)
        return schemas
    finally:
        catalog.close()


def has_checkpoint(config: Config) -> bool:
    """Whether the pipeline resumes (Spark's checkpoint holds offsets) rather than starts."""
    offsets = Path(config.pipeline.checkpoint) / "spark" / "offsets"
    return offsets.is_dir() and any(offsets.iterdir())


def run_pipeline(
    config: Config,
    available_now: bool = False,
    progress: ProgressCallback | None = None,
    reader_factory: str | None = None,
) -> int:
    """Run the pipeline (module docstring); returns the number of micro-batches written.

    SIGTERM/SIGINT are taken over first: a stop asked for while Spark is still starting ends the
    run as soon as the session is up, before any batch, instead of killing it half-way."""
    level = spark_log_level()  # a wrong value is named before anything runs
    stop = _StopRequest()
    try:
        if reader_factory is None:
            schemas = check_source(config, startup=not has_checkpoint(config))
            log.info("capturing %d tables: %s", len(schemas), ", ".join(t.name for t in schemas))
        checkpoint = Path(config.pipeline.checkpoint)
        own = checkpoint / "sparkcdc"
        own.mkdir(parents=True, exist_ok=True)
        spark = _session(config, own, level)
        try:
            if stop.requested:
                return 0
            return _stream(spark, config, checkpoint, available_now, progress, reader_factory, stop)
        finally:
            spark.stop()
    finally:
        stop.restore()


DRIVER_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
"""The driver JVM's compiler and collector. Rows go from the source's tasks to the sink as
Arrow in Python processes; the driver JVM plans the micro-batches, and in ``local`` mode also
runs the tasks, which hand Arrow batches on. Its optimizing compiler (C2) was measured here
using ~1.1 CPU-s of a 2-core machine during a 2M-row snapshot, beside the Python workers; the
quick compiler alone and the serial collector cut that and made the snapshot ~15% faster and
start-up ~4 s shorter, while the binlog stream's batches took ~5% longer (bench sections 1 and
4). Replaced, like every Spark setting, by ``pipeline.spark.conf``
(``spark.driver.extraJavaOptions``)."""

SPARK_LOG_LEVELS = ("OFF", "FATAL", "ERROR", "WARN", "INFO", "DEBUG", "TRACE", "ALL")


def spark_log_level() -> str | None:
    """The level of Spark's own log asked for in ``SPARKCDC_SPARK_LOG_LEVEL`` (None: off)."""
    asked = os.environ.get(SPARK_LOG_LEVEL, "").strip().upper()
    if asked and asked not in SPARK_LOG_LEVELS:
        raise errors.ConfigError(
            f"{SPARK_LOG_LEVEL}={os.environ[SPARK_LOG_LEVEL]!r} is not a log level; use one of "
            f"{', '.join(SPARK_LOG_LEVELS)}, or leave it unset.",
            key=SPARK_LOG_LEVEL,
        )
    return asked or None


def _session(config: Config, own: Path, log_level: str | None) -> Any:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    from sparkcdc.spark.pythonpath import use_compiled_pyspark

    use_compiled_pyspark()

    log4j = own / "log4j2.properties"
    log4j.write_text(LOG4J)
    java_opts = f"-Dlog4j2.configurationFile=file:{log4j.resolve()}"
    builder = (
        SparkSession.builder.master(config.pipeline.spark_master)
        .appName("sparkcdc")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.extraJavaOptions", f"{java_opts} {DRIVER_JVM}")
        .config("spark.executor.extraJavaOptions", java_opts)
        .config("spark.python.worker.reuse", "true")
        .config("spark.python.daemon.module", "sparkcdc.spark.daemon")
    )
    for key, value in config.pipeline.spark_conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    # a failure is reported once, as a sentence (_as_sparkcdc_error); Spark's own reports of it
    # (stack traces from the executor, the scheduler, the query and, for an error raised in
    # the sink, py4j's callback server) only when asked for
    spark.sparkContext.setLogLevel(log_level or "OFF")
    if log_level is None:
        logging.getLogger("py4j.clientserver").setLevel(logging.CRITICAL)
    return spark


def _stream(
    spark: Any,
    config: Config,
    checkpoint: Path,
    available_now: bool,
    progress: ProgressCallback | None,
    reader_factory: str | None,
    stop: _StopRequest,
) -> int:
    import sparkcdc.spark
    from sparkcdc.snapshot.signals import signal_folder
    from sparkcdc.spark.mark import BatchMark
    from sparkcdc.spark.options import source_options
    from sparkcdc.spark.sink import DeltaSink

    sparkcdc.spark.register(spark)
    own = checkpoint / "sparkcdc"
    status_path = own / STATUS_FILE
    status_path.unlink(missing_ok=True)  # a previous run's error must not be reported again
    mark = own / "batch.mark"  # the sink's batch mark, watched by incremental snapshots
    store = config.pipeline.store
    options = source_options(
        config.source,
        str(own / "schema_history.jsonl"),
        max_bytes=store.max_bytes,
        max_items=store.max_items,
        batch_mode=store.batch_mode,
        item_rows=store.item_rows,
        status_file=str(status_path),
        snapshot_dir=str(own / "snapshot"),
        snapshot_delivery="store",  # the Delta sink reads the chunks from the split store
        signal_dir=str(signal_folder(checkpoint)),
        batch_mark=str(mark),
    )
    if reader_factory:
        options["reader_factory"] = reader_factory
    spark_checkpoint = checkpoint / "spark"
    sink = DeltaSink(
        config.sink.path,
        app_id=lambda: pipeline_id(spark_checkpoint),
        mark=BatchMark(mark),
    )
    writer = (
        spark.readStream.format("mysql-cdc")
        .options(**options)
        .load()
        .writeStream.foreachBatch(sink)
        .option("checkpointLocation", str(spark_checkpoint))
        .queryName("sparkcdc")
    )
    if available_now or config.source.startup == "snapshot":
        writer = writer.trigger(availableNow=True)
    else:
        writer = writer.trigger(
            processingTime=f"{int(config.pipeline.trigger_seconds * 1000)} milliseconds"
        )
    clear_torn_first_offset(spark_checkpoint)
    if config.source.takes_snapshot and snapshot_ahead(spark_checkpoint):
        from sparkcdc.spark.warm import warm_workers

        warm_workers(spark, config.source.snapshot.parallelism)
    query = writer.start()
    meter = _Meter(sink, status_path)
    try:
        while query.isActive:
            if stop.requested:
                _graceful_stop(query)
                break
            if query.awaitTermination(0.25 if progress else 1.0):
                break
            if progress is not None:
                sample = meter.sample()
                if sample is not None:
                    progress(sample)
        query.awaitTermination()
    except Exception as exc:
        raise _as_sparkcdc_error(exc, sink, status_path) from None
    if progress is not None:
        progress(meter.sample(force=True) or meter.last)
    return int(sink.batches)


class _StopRequest:
    """SIGTERM/SIGINT set a flag; the loop stops the query after the batch in flight."""

    def __init__(self) -> None:
        self.requested = False
        self._previous = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
        for s in self._previous:
            signal.signal(s, self._handle)

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.requested and signum == signal.SIGINT:
            raise KeyboardInterrupt  # a second Ctrl-C: stop now
        self.requested = True
        log.info("stop requested: finishing the batch in flight")

    def restore(self) -> None:
        for s, handler in self._previous.items():
            signal.signal(s, handler)


def _graceful_stop(query: Any, timeout: float = 600.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = query.status
        if not status.get("isTriggerActive", False):
            break
        time.sleep(0.05)
    query.stop()


class _Meter:
    """Turns the sink's counters and the source's status file into :class:`Progress`."""

    WINDOW = 10.0  # seconds of history behind the events/s figure

    def __init__(self, sink: Any, status_path: Path) -> None:
        self.sink, self.status_path = sink, status_path
        self._samples: deque[tuple[float, int]] = deque([(time.monotonic(), 0)])
        self.last = Progress(0, 0, 0.0, None, None, False)

    def sample(self, force: bool = False) -> Progress | None:
        now = time.monotonic()
        if not force and now - self._samples[-1][0] < 1.0:
            return None
        status = read_status(self.status_path) or {}
        changes = int(self.sink.changes)
        self._samples.append((now, changes))
        while len(self._samples) > 2 and now - self._samples[0][0] > self.WINDOW:
            self._samples.popleft()
        t0, c0 = self._samples[0]
        rate = (changes - c0) / max(now - t0, 1e-6)
        caught_up = bool(status.get("caught_up"))
        last_ts = self.sink.last_event_ts_ms
        lag = None if last_ts is None else max(0.0, time.time() - last_ts / 1000)
        self.last = Progress(
            int(self.sink.batches),
            changes,
            rate,
            0.0 if caught_up else lag,
            status.get("position"),
            caught_up,
            status.get("snapshot"),
            status.get("incremental"),
        )
        return self.last


_PY_ERROR = re.compile(r"sparkcdc\.core\.errors\.(\w+): (.+)")


def _as_sparkcdc_error(exc: Exception, sink: Any, status_path: Path) -> Exception:
    """The SparkCDCError behind a failed query (sink, log reader), else the exception itself."""
    if isinstance(sink.error, errors.SparkCDCError):
        return sink.error
    status = read_status(status_path) or {}
    found = status.get("error") or {}
    text = str(exc)
    if not found:
        match = _PY_ERROR.search(text)
        if match:
            found = {"type": match.group(1), "message": match.group(2).strip()}
    if found:
        cls = getattr(errors, str(found.get("type")), None)
        if not (isinstance(cls, type) and issubclass(cls, errors.SparkCDCError)):
            cls = errors.SourceError
        return cls(str(found.get("message")))
    if isinstance(exc, errors.SparkCDCError):
        return exc
    first = next((line for line in text.splitlines() if line.strip()), type(exc).__name__)
    return errors.SparkCDCError(
        f"the stream stopped: {first.strip()} (run again with {SPARK_LOG_LEVEL}=ERROR to see "
        "Spark's own report)"
    )
