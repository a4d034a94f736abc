"""One pipeline run: check the source, start Spark, stream its changes into the sink, stop cleanly.

``run_pipeline(config)`` is what ``sparkcdc run`` does:

1. check the source before Spark starts (server ready for CDC, tables matched, every table's
   schema and key loadable): a bad input fails here with its sentence
   (:mod:`sparkcdc.sources.readiness`);
2. start the SparkSession (:mod:`.session`), its web UI's address logged and named in the run
   lock for ``sparkcdc status``;
3. ``readStream.format("<type>-cdc")`` → ``writeStream.foreachBatch(sink)`` (the ``sink.type``'s
   writer, :mod:`sparkcdc.sinks.registry`) with Spark's
   checkpoint in ``<checkpoint>/spark`` and the source's own files (schema history, status) in
   ``<checkpoint>/sparkcdc``;
4. with ``pipeline.metrics.port`` set, serve Prometheus metrics from the start to the end
   (:mod:`.metrics`, :mod:`.metrics_server`);
5. a log position found gone stops the run with the way out, or (``source.on_log_gone:
   resnapshot``) starts a re-snapshot and the stream again (:mod:`.resnapshot`);
6. run until SIGTERM/SIGINT or, with ``available_now``, until everything up to the log end
   seen at start is written (``trigger(availableNow=True)``).

Stopping (SIGTERM, or SIGINT: a terminal's Ctrl-C, sent to the whole process group): the
driver alone answers it (the JVM and Spark's Python processes start with SIGINT blocked:
:func:`.session.sigint_left_to_the_driver`). It writes the stop file the stream reader checks
before planning a micro-batch (``stop_file``: the source then answers "no new data"), so the
batch in flight finishes and commits, no batch starts after it, and the query stops once idle.
A second Ctrl-C stops the query at once: the batch in flight does not commit (the next run
writes it again, exactly once as after a crash), and :func:`run_pipeline` raises
KeyboardInterrupt once Spark has stopped. A third leaves at once.

All of it holds the checkpoint's run lock (:mod:`.run_lock`): one run per checkpoint at a time.

Errors of the log reader (in the source process) and of the sink come back as the
:class:`~sparkcdc.core.errors.SparkCDCError` they started as, with their sentence.
A Python process of Spark's that ends under the query (killed, crashed) is named in a sentence
of its own (:mod:`.lost_process`); a task whose worker ended is tried again first, a local
master included (:func:`.session.with_task_retries`).
"""

from __future__ import annotations

import logging
import os
import re
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

from sparkcdc.config.model import Config
from sparkcdc.config.secret import forget_key
from sparkcdc.core import errors
from sparkcdc.core.logs import counted
from sparkcdc.core.schema import TableSchema
from sparkcdc.sinks.port import BatchFrame, Sink, SinkContext
from sparkcdc.sinks.registry import batch_holders, check_sink, open_sink, open_tables_ahead
from sparkcdc.snapshot.signals import signal_folder
from sparkcdc.sources.readiness import check_source as check_source_of
from sparkcdc.sources.registry import open_source, source_type
from sparkcdc.spark.incremental.batch_mark import BatchMark
from sparkcdc.spark.pipeline import resnapshot
from sparkcdc.spark.pipeline.checkpoint import (
    clear_torn_first_offset,
    pipeline_id,
    resumes,
    snapshot_ahead,
    uncommitted_batch,
)
from sparkcdc.spark.pipeline.lost_process import lost_process
from sparkcdc.spark.pipeline.metrics import PipelineMetrics
from sparkcdc.spark.pipeline.metrics_server import serve_metrics
from sparkcdc.spark.pipeline.progress import Meter, ProgressCallback
from sparkcdc.spark.pipeline.run_lock import RunLock, hold_run_lock
from sparkcdc.spark.pipeline.session import (
    SPARK_LOG_LEVEL,
    own_python,
    pipeline_name,
    session_environment,
    spark_log_level,
    start_session,
    ui_address,
)
from sparkcdc.spark.pipeline.torn import repair_torn
from sparkcdc.spark.runtime.worker_warmup import warm_in_background, warm_workers
from sparkcdc.spark.shipping import check_executors
from sparkcdc.spark.stream.options import source_options
from sparkcdc.spark.stream.status import STATUS_FILE, StatusError, read_status

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.streaming.query import StreamingQuery
    from pyspark.sql.streaming.readwriter import DataStreamWriter

log = logging.getLogger("sparkcdc.pipeline")

STOP_FILE = "stop"  # in <checkpoint>/sparkcdc while a run stops: the source plans no batch
EXIT_INTERRUPTED = 130  # the shell's status of a process ended by SIGINT


def check_source(config: Config, startup: bool = True) -> list[TableSchema]:
    """Fail before Spark starts unless the source is usable (and, ``startup``, the configured
    start position resolves); the captured tables' schemas."""
    return check_source_of(open_source(config.source), startup)


def has_checkpoint(config: Config) -> bool:
    """Whether the pipeline resumes (Spark's checkpoint holds offsets) rather than starts."""
    return resumes(config.pipeline.checkpoint)


def run_pipeline(
    config: Config, available_now: bool = False, progress: ProgressCallback | None = None
) -> int:
    """Run the pipeline (module docstring); returns the number of micro-batches written.

    The checkpoint's run lock is held from the start to the end (:mod:`.run_lock`): a second run
    on the same checkpoint stops at once. SIGTERM/SIGINT are taken over first: a stop asked for
    while Spark is still starting ends the run as soon as the session is up, before any batch,
    instead of killing it half-way. KeyboardInterrupt: a second Ctrl-C stopped the run without
    letting the batch in flight commit (module docstring)."""
    level = spark_log_level()  # a wrong value is named before anything runs
    checkpoint = Path(config.pipeline.checkpoint)
    with hold_run_lock(checkpoint / "sparkcdc") as lock:
        return _run_locked(config, checkpoint, level, available_now, progress, lock)


def _run_locked(
    config: Config,
    checkpoint: Path,
    level: str | None,
    available_now: bool,
    progress: ProgressCallback | None,
    lock: RunLock,
) -> int:
    """:func:`run_pipeline` once the run lock is held."""
    if resnapshot.pending(checkpoint) is not None:
        config = resnapshot.as_initial(config)  # a re-snapshot begun before: go on with it
    stop = StopRequest()
    metrics = PipelineMetrics()
    server = None
    try:
        server = serve_metrics(config.pipeline.metrics, metrics)  # a port in use fails here
        repair_torn(checkpoint / "spark", batch_holders(config.sink))  # before resumes() is read
        schemas = check_source(config, startup=not has_checkpoint(config))
        check_sink(config.sink)  # the sink's storage reachable, before Spark starts
        log.info(
            "capturing %s: %s", counted(len(schemas), "table"), ", ".join(t.name for t in schemas)
        )
        session_environment()  # before the thread below: setenv beside it crashes the process
        stop_opening = open_tables_ahead(config.sink, [t.table_name for t in schemas])
        started = time.monotonic()
        spark = start_session(config, checkpoint / "sparkcdc", level)
        log.info("Spark session started in %.1fs", time.monotonic() - started)
        lock.record_spark_ui(ui_address(spark, config))  # for sparkcdc status
        try:
            if stop.requested:
                return 0
            _check_executors(spark)
            try:
                return _stream(spark, config, checkpoint, available_now, progress, stop, metrics)
            except errors.LogPositionGone as gone:
                config = _after_log_gone(config, checkpoint, gone)
                return _stream(spark, config, checkpoint, available_now, progress, stop, metrics)
        finally:
            spark.stop()
            stop_opening()  # a run without a batch: its thread may open tables still
            forget_key()  # the sealing key lives as long as the session it was given to
            if stop.now:
                raise KeyboardInterrupt  # Spark stopped: now say the batch did not commit
    finally:
        if server is not None:
            server.stop()
        stop.restore()


def _check_executors(spark: SparkSession) -> None:
    """Fail with :class:`~sparkcdc.core.errors.NotShipped` unless every core Spark offers
    imports sparkcdc; skipped when the executors run this interpreter (:func:`own_python`)."""
    if own_python(spark.sparkContext.master or ""):
        return
    started = time.monotonic()
    try:
        check_executors(spark, spark.sparkContext.defaultParallelism)
    except Exception as exc:
        raise _named_error(str(exc)) or exc from None
    log.info("sparkcdc found on the executors in %.1fs", time.monotonic() - started)


def _after_log_gone(config: Config, checkpoint: Path, gone: errors.LogPositionGone) -> Config:
    """The configuration to run again with after the log position was found gone
    (``source.on_log_gone: resnapshot``: :mod:`.resnapshot`), else the sentence with the way
    out."""
    if config.source.on_log_gone != "resnapshot":
        try:
            with open_source(config.source).catalog() as catalog:
                oldest = catalog.oldest_position()
        except errors.SourceError as exc:  # the sentence stands without it
            oldest = f"unknown (the server could not be asked: {exc})"
        raise errors.LogPositionGone(
            f"{str(gone).rstrip('.')}; the oldest position the server holds is {oldest}: set "
            "source.on_log_gone: resnapshot to read the captured tables again and stream on, "
            "or start the pipeline anew (a new checkpoint and sink path)."
        ) from None
    resnapshot.begin(config, checkpoint, gone)
    return resnapshot.as_initial(config)


def _stream(
    spark: SparkSession,
    config: Config,
    checkpoint: Path,
    available_now: bool,
    progress: ProgressCallback | None,
    stop: StopRequest,
    metrics: PipelineMetrics,
) -> int:
    """Start the query (Python workers warmed up meanwhile, or before it for a snapshot) and
    watch it, its figures shown to ``metrics``; the batches written."""
    own = checkpoint / "sparkcdc"
    status_path = own / STATUS_FILE
    status_path.unlink(missing_ok=True)  # a previous run's error must not be reported again
    stop_file = own / STOP_FILE
    stop_file.unlink(missing_ok=True)  # a previous run's stop
    spark_checkpoint = checkpoint / "spark"
    context = SinkContext(
        app_id=lambda: pipeline_id(spark_checkpoint),
        mark=BatchMark(own / "batch.mark"),
        schema_changes=config.pipeline.schema_changes,
        transactions=config.pipeline.transactions,
    )
    sink = open_sink(config.sink, context)
    metrics.watch(sink, status_path)
    writer: Callable[[BatchFrame, int], None] = sink
    if resnapshot.pending(checkpoint) is not None:
        source = open_source(config.source)
        writer = resnapshot.ResnapshotSink(
            sink, checkpoint, config.sink, source.offset,
            lambda: pipeline_id(spark_checkpoint),
        )  # fmt: skip
    started = time.monotonic()
    clear_torn_first_offset(spark_checkpoint)
    snapshot_first = config.source.takes_snapshot and snapshot_ahead(spark_checkpoint)
    warming = None if snapshot_first else warm_in_background(spark)
    try:
        try:
            stream = _query(spark, config, own, writer, available_now, snapshot_first)
            if stop.requested:  # while the snapshot's workers warmed up
                return 0
            query = stream.start()
        except Exception as exc:  # a planner's error (sparkcdc missing there): its sentence
            raise _named_error(str(exc)) or exc from None
        log.info("stream query started in %.1fs", time.monotonic() - started)
        batches = _watch(query, sink, status_path, progress, stop)
        if not stop.requested:  # an available-now run's end: the upkeep if it is due
            _upkeep_at_end(sink, spark_checkpoint)
        if config.source.startup == "snapshot" and not stop.requested:
            open_source(config.source).release_log()  # the copy is whole: no log to keep
        return batches
    finally:
        stop_file.unlink(missing_ok=True)
        if warming is not None:
            warming.join(timeout=60)  # before the session stops under it


def _upkeep_at_end(sink: Sink, spark_checkpoint: Path) -> None:
    """The sink's upkeep once the query ended by itself, if Spark committed every batch (none
    is written again)."""
    if uncommitted_batch(spark_checkpoint) is None:
        sink.upkeep_at_end()


def _watch(
    query: StreamingQuery,
    sink: Sink,
    status_path: Path,
    progress: ProgressCallback | None,
    stop: StopRequest,
) -> int:
    """Watch the running query until it ends or a stop is asked for; the batches written."""
    meter = Meter(sink, status_path)
    try:
        while query.isActive:
            if stop.requested:
                _stop_after_batch_in_flight(query, status_path.with_name(STOP_FILE), stop)
                break
            # seconds, a float taken as such (pyspark annotates it int)
            if query.awaitTermination(0.25 if progress else 1.0):  # type: ignore[arg-type]
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
    return sink.figures().batches


def _query(
    spark: SparkSession,
    config: Config,
    own: Path,
    sink: Callable[[BatchFrame, int], None],
    available_now: bool,
    snapshot_first: bool,
) -> DataStreamWriter:
    """The stream of the source's changes into the sink, not started yet (``snapshot_first``:
    the snapshot's workers warmed up first)."""
    import sparkcdc.spark

    kind = config.source.type
    sparkcdc.spark.register(spark, kind)
    checkpoint = own.parent
    store = config.pipeline.store
    options = source_options(
        config.source,
        str(own / "schema_history.jsonl"),
        max_bytes=store.max_bytes,
        max_items=store.max_items,
        batch_mode=store.batch_mode,
        item_rows=store.item_rows,
        status_file=str(own / STATUS_FILE),
        snapshot_dir=str(own / "snapshot"),
        snapshot_delivery="store",  # the sink reads the chunks from the split store
        sink_type=config.sink.type,  # the snapshot tasks write the chunks' files for it
        snapshot_in_changelog=config.sink.snapshot_in_changelog,
        signal_dir=str(signal_folder(checkpoint)),
        batch_mark=str(own / "batch.mark"),  # the sink's mark, watched by incremental snapshots
        stop_file=str(own / STOP_FILE),  # no micro-batch is planned once it exists
        start_file=str(own / "first_offset.json"),  # the initial offset, asked for again
        log_dir=str(own / "log"),  # the sink reads each micro-batch's events from a file
    )
    spark_checkpoint = checkpoint / "spark"
    writer = (
        spark.readStream.format(source_type(kind).format)
        .options(**options)
        .load()
        .writeStream.foreachBatch(sink)
        .option("checkpointLocation", str(spark_checkpoint))
        .queryName(pipeline_name(config.pipeline.checkpoint))
    )
    if available_now or config.source.startup == "snapshot":
        writer = writer.trigger(availableNow=True)
    else:
        writer = writer.trigger(
            processingTime=f"{int(config.pipeline.trigger_seconds * 1000)} milliseconds"
        )
    if snapshot_first:
        warm_workers(spark, config.source.snapshot.parallelism)
    return writer


class StopRequest:
    """SIGTERM/SIGINT ask for a stop after the batch in flight (:attr:`requested`); a second
    SIGINT (Ctrl-C) for a stop now (:attr:`now`); a third leaves at once (exit status 130, as
    a crash: the checkpoint is safe)."""

    def __init__(self) -> None:
        self.requested = False
        self.now = False
        self._previous = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
        for s in self._previous:
            signal.signal(s, self._handle)

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if not self.requested:
            self.requested = True
            log.info("stopping: the batch in flight commits first (Ctrl-C again to stop now)")
        elif signum == signal.SIGINT and not self.now:
            self.now = True
            log.warning(
                "stopping now: the batch in flight does not commit (the next run writes it)"
            )
        elif signum == signal.SIGINT:
            sys.stderr.write("sparkcdc: stopped at once\n")
            sys.stderr.flush()
            os._exit(EXIT_INTERRUPTED)

    def restore(self) -> None:
        for s, handler in self._previous.items():
            signal.signal(s, handler)


def _stop_after_batch_in_flight(query: StreamingQuery, stop_file: Path, stop: StopRequest) -> None:
    """Stop ``query`` once the batch in flight has committed: with the stop file there, the
    source plans no further batch, so the query's trigger falls idle after it; a second
    Ctrl-C (``stop.now``) stops it at once instead."""
    stop_file.touch()
    while query.isActive and not stop.now and query.status.get("isTriggerActive", False):
        time.sleep(0.05)
    query.stop()


_PY_ERROR = re.compile(r"sparkcdc\.(?:core\.errors|spark\.shipping)\.(\w+): (.+)")


def _named_error(text: str) -> errors.SparkCDCError | None:
    """The SparkCDCError a Python process of Spark's raised, found in ``text`` (Spark's
    report of it): the last one, the one raised, not what it came from."""
    matches = _PY_ERROR.findall(text)
    return _error_of({"type": matches[-1][0], "message": matches[-1][1]}) if matches else None


def _error_of(found: StatusError) -> errors.SparkCDCError:
    """The SparkCDCError of ``found`` (its class name and sentence); SourceError if unknown."""
    cls = getattr(errors, str(found.get("type")), None)
    if not (isinstance(cls, type) and issubclass(cls, errors.SparkCDCError)):
        cls = errors.SourceError
    return cls(str(found.get("message")).strip())


def _as_sparkcdc_error(exc: Exception, sink: Sink, status_path: Path) -> Exception:
    """The SparkCDCError behind a failed query (sink, log reader), else the exception itself."""
    failed = sink.figures().error
    if isinstance(failed, errors.SparkCDCError):
        return failed
    status = read_status(status_path) or {}
    found = status.get("error")
    text = str(exc)
    named = _error_of(found) if found else _named_error(text)
    if named is not None:
        return named
    lost = lost_process(exc, failed)
    if lost is not None:
        return lost
    if isinstance(exc, errors.SparkCDCError):
        return exc
    first = next((line for line in text.splitlines() if line.strip()), type(exc).__name__)
    return errors.SparkCDCError(
        f"the stream stopped: {first.strip()} (run again with {SPARK_LOG_LEVEL}=ERROR to see "
        "Spark's own report)"
    )
