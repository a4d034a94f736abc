"""The pipeline's SparkSession: its master and settings, its name and web UI, quiet logs,
Python workers on this interpreter, the driver JVM's compiler and collector, Ctrl-C left to
the driver, and the key that seals the source's password (:mod:`sparkcdc.config.secret`) given
to every Python process Spark starts."""

from __future__ import annotations

import contextlib
import logging
import os
import re
import signal
import sys
import threading
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from sparkcdc.config.model import Config
from sparkcdc.config.secret import KEY_ENV, ensure_key, forget_key
from sparkcdc.core import errors

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

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


DRIVER_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
"""The driver JVM's compiler and collector: the quick compiler alone (no C2) and the serial
collector, because the driver plans micro-batches while the rows move between Python processes,
and C2 competes with them for the cores (bench/history.md). ``pipeline.spark.conf``'s
``spark.driver.extraJavaOptions`` replaces it."""

DAEMON = "sparkcdc.spark.runtime.worker_daemon"

TASK_ATTEMPTS = 4  # tries of a failed task in local mode, as spark.task.maxFailures on a cluster
_LOCAL = re.compile(r"local(?:\[\s*(\d+|\*)\s*\])?")

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


@contextlib.contextmanager
def sigint_left_to_the_driver() -> Iterator[None]:
    """While the session starts: SIGINT blocked, and the driver's own SIGINT handler kept.

    A terminal's Ctrl-C goes to the whole process group: the driver, the JVM and every Python
    process the JVM starts. Only the driver may answer it (``sparkcdc run`` stops after the
    batch in flight: :mod:`.run`). The JVM, started meanwhile, inherits SIGINT blocked (pyspark
    also starts it ignoring SIGINT) and so does every process it starts: pyspark's forked
    Python workers set a SIGINT handler of their own, but a blocked signal never reaches it, so
    no task dies of a KeyboardInterrupt. pyspark's SparkContext installs a SIGINT handler
    (cancel all jobs, raise KeyboardInterrupt in whatever py4j call is waiting, which leaves
    tracebacks); the one in place before it is put back."""
    if threading.current_thread() is not threading.main_thread():
        yield  # signals are the main thread's
        return
    previous = signal.getsignal(signal.SIGINT)
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})  # a Ctrl-C meanwhile: now


def pipeline_name(checkpoint: str) -> str:
    """The name Spark's UI shows for the pipeline checkpointed at ``checkpoint``, as its
    application and its stream query: ``sparkcdc-<the checkpoint folder's name>`` (``shop`` of
    ``./checkpoints/shop``; one checkpoint per pipeline, so it tells pipelines apart)."""
    folder = re.sub(r"\s+", "-", PurePosixPath(checkpoint.rstrip("/")).name.strip())
    return f"sparkcdc-{folder}" if folder else "sparkcdc"


def ui_address(spark: SparkSession, config: Config) -> str | None:
    """Where the session's web UI is (its Structured Streaming tab shows the stream), logged as
    a run's first lines say it; None when it is off."""
    address: str | None = spark.sparkContext.uiWebUrl
    if address is not None:
        log.info("Spark UI at %s", address)
    elif not config.pipeline.spark_ui:
        log.info("Spark UI off (pipeline.spark.ui: false)")
    else:
        log.info("Spark UI off (spark.ui.enabled: false)")
    return address


def spark_settings(config: Config, own: Path) -> dict[str, str]:
    """The session's Spark settings but the sealing key: sparkcdc's, then
    ``pipeline.spark.conf`` over them; Spark's log configuration written into ``own``."""
    log4j = own / "log4j2.properties"
    log4j.write_text(LOG4J)
    java_opts = f"-Dlog4j2.configurationFile=file:{log4j.resolve()}"
    settings = {
        "spark.master": config.pipeline.spark_master,
        "spark.app.name": pipeline_name(config.pipeline.checkpoint),
        "spark.ui.enabled": "true" if config.pipeline.spark_ui else "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": "2",
        "spark.driver.extraJavaOptions": f"{java_opts} {DRIVER_JVM}",
        "spark.executor.extraJavaOptions": java_opts,
        "spark.python.worker.reuse": "true",
    }
    master = config.pipeline.spark_conf.get("spark.master", config.pipeline.spark_master)
    if own_python(master):
        settings["spark.python.daemon.module"] = DAEMON
    merged = {**settings, **config.pipeline.spark_conf}
    merged["spark.master"] = with_task_retries(master, merged)
    return merged


def with_task_retries(master: str, settings: dict[str, str]) -> str:
    """``master`` with task retries when it is local: Spark's local scheduler ignores
    ``spark.task.maxFailures`` and tries a task once under ``local`` and ``local[N]``, so one
    Python worker killed mid-task (the kernel's out-of-memory killer, an operator) failed the
    micro-batch and the run; ``local[N,F]`` tries it ``F`` times, as a cluster does. ``F``:
    ``spark.task.maxFailures`` in ``settings``, else :data:`TASK_ATTEMPTS`. A local master that
    names its count, and any other master, is kept as written."""
    found = _LOCAL.fullmatch(master.strip())
    attempts = settings.get("spark.task.maxFailures", str(TASK_ATTEMPTS)).strip()
    if found is None or not attempts.isdigit() or int(attempts) < 1:
        return master
    return f"local[{found.group(1) or 1},{int(attempts)}]"


def _launch_jvm(settings: dict[str, str]) -> None:
    """Start Spark's JVM (``spark-submit``) with ``settings``, unless it runs already. pyspark
    writes the settings it starts the JVM with on its command line, which ``ps`` shows every
    user of the machine: so the sealing key is left out here and set through py4j after."""
    from pyspark import SparkConf, SparkContext

    if SparkContext._gateway is not None:
        return
    conf = SparkConf(loadDefaults=False)
    for key, value in settings.items():
        conf.set(key, value)
    SparkContext._ensure_initialized(conf=conf)


def own_python(master: str) -> bool:
    """Whether Spark's Python processes run this interpreter on this machine (a local
    ``master``, ``PYSPARK_PYTHON`` this one), and so import sparkcdc as this process does."""
    python = os.environ.get("PYSPARK_PYTHON", sys.executable)
    return master.startswith("local") and os.path.abspath(python) == os.path.abspath(sys.executable)


# Spark's JVM scans the Python path for ``pyspark_*`` data source packages when the first data
# source is registered (``DataSourceManager``: a Python process of its own, about 1 s alone,
# 0.3 s of a pipeline's start-up), only when ``PYSPARK_DRIVER_PYTHON`` names a command: the
# pipeline registers its own sources, so it names none. Spark's Python processes run
# ``PYSPARK_PYTHON``.
NO_DATA_SOURCE_SCAN = "sparkcdc-registers-its-own-data-sources"


def session_environment() -> None:
    """The environment Spark's JVM and Python processes inherit (the interpreter, the compiled
    PySpark's path, the sealing key), set before any thread of this process starts: ``setenv``
    while another thread's C or Rust code reads the environment (delta-rs opening tables while
    Spark starts) crashes the process. Once set, calling this again changes nothing."""
    from sparkcdc.spark.runtime.pythonpath import use_compiled_pyspark

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", NO_DATA_SOURCE_SCAN)
    use_compiled_pyspark()
    ensure_key()


def start_session(config: Config, own: Path, log_level: str | None) -> SparkSession:
    """The session of a pipeline whose own files are in ``own``; Spark's log at ``log_level``
    (None: off). Spark's web UI is on unless ``pipeline.spark.ui`` is false: at
    ``spark.ui.port`` (4040), or the next free port after it when another Spark application
    holds that one (``spark.port.maxRetries``); ``spark.sparkContext.uiWebUrl`` says where.
    Task workers fork from the preloading daemon (:mod:`..runtime.worker_daemon`) only when
    they run this interpreter (:func:`own_python`): elsewhere sparkcdc may be missing, and
    :mod:`sparkcdc.spark.shipping` says so where Spark's daemon would fail unexplained.
    The sealing key goes to Spark's Python processes as ``spark.executorEnv`` (hidden by
    Spark's ``spark.redaction.regex`` in its UI and event log), set through py4j once the JVM
    runs (:func:`_launch_jvm`); a session already running here without it (not started by this
    function) gets nothing sealed."""
    session_environment()
    from pyspark.sql import SparkSession

    settings = spark_settings(config, own)
    key_setting = f"spark.executorEnv.{KEY_ENV}"
    builder = SparkSession.builder
    for key, value in {**settings, key_setting: ensure_key()}.items():
        builder = builder.config(key, value)
    with sigint_left_to_the_driver():
        _launch_jvm(settings)
        spark = builder.getOrCreate()
    if spark.sparkContext.environment.get(KEY_ENV) != os.environ.get(KEY_ENV):
        forget_key()
    # a failure is reported once, as a sentence (_as_sparkcdc_error); Spark's own reports of it
    # (stack traces from the executor, the scheduler, the query and, for an error raised in
    # the sink, py4j's callback server) only when asked for
    spark.sparkContext.setLogLevel(log_level or "OFF")
    if log_level is None:
        logging.getLogger("py4j.clientserver").setLevel(logging.CRITICAL)
    return spark
