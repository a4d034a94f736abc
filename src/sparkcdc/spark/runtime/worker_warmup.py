"""Python workers started before the query starts, so a snapshot's first micro-batch finds them.

A micro-batch of the ``mysql-cdc`` stream needs two kinds of Python worker besides the source's
own process: a *planner* (Spark's ``plan_data_source_read``, which builds the reader the tasks
run once per query) and one *task worker* per split task. Started cold, each imports pyspark,
pyarrow and the chunk reader before its first chunk. Spark keeps idle workers of both kinds for
reuse (``spark.python.worker.reuse``), so one tiny batch read of :class:`WarmUpSource` leaves
both waiting: planned in a planner worker of the stream's kind, read in task workers forked by
the session's daemon (:mod:`.worker_daemon`, which preloads their imports for later workers too).

Before a snapshot it runs just before the query starts, one task per split task
(:func:`warm_workers`): beside the start, on busy cores, the micro-batch would wait for the
workers it started. A stream from the log needs one task worker and its start mostly waits for
Spark's own processes, so there the read runs beside the start (:func:`warm_in_background`).
Why and how much: bench/history.md.

Only a head start: a failure changes nothing, the query starts whatever this read does.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.types import StructType

from sparkcdc.spark.runtime.worker_daemon import preload

log = logging.getLogger("sparkcdc.pipeline")

NAME = "sparkcdc-warm-up"


class WarmUpSource(DataSource):
    """A batch source of no rows: its reader is made in a planner worker and read in
    ``tasks`` task workers, each importing what the stream needs there."""

    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> str:
        return "id long"

    def reader(self, schema: StructType) -> DataSourceReader:
        preload(("sparkcdc.spark.stream.datasource",))
        return _NoRows(int(self.options.get("tasks", "1")))


class _NoRows(DataSourceReader):
    def __init__(self, tasks: int) -> None:
        self.tasks = tasks

    def partitions(self) -> list[InputPartition]:
        return [InputPartition(i) for i in range(self.tasks)]

    def read(self, partition: InputPartition) -> Iterator[tuple[int]]:
        return iter(())  # the worker's daemon preloaded what the split tasks import


def warm(spark: SparkSession, tasks: int) -> None:
    """The warm-up read (see the module docstring)."""
    spark.dataSource.register(WarmUpSource)
    spark.read.format(NAME).option("tasks", str(tasks)).load().collect()


def warm_workers(spark: SparkSession, tasks: int) -> None:
    """:func:`warm`, timed in the log; a failure is only logged."""
    started = time.monotonic()
    try:
        warm(spark, tasks)
    except Exception as exc:  # the snapshot's own tasks report real problems
        log.debug("warming the Python workers failed: %s", exc)
        return
    log.debug("Python workers for %d split tasks ready in %.1fs", tasks, time.monotonic() - started)


def warm_in_background(spark: SparkSession) -> threading.Thread:
    """:func:`warm_workers` for one task worker in a thread of its own, started; join it
    before the session stops."""
    thread = threading.Thread(
        target=warm_workers, args=(spark, 1), name="sparkcdc-warm-up", daemon=True
    )
    thread.start()
    return thread
