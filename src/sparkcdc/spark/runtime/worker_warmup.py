"""Python workers started before the query starts, so a snapshot's first micro-batch finds them.

A micro-batch of the ``mysql-cdc`` stream needs two kinds of Python worker besides the source's
own process: a *planner* (Spark's ``plan_data_source_read``, which builds the reader the tasks
run once per query) and one *task worker* per split task. Started cold, each is a new process
that imports pyspark, pyarrow and the chunk reader first: measured here as about 1.5 s between a
snapshot's first offset and its first chunk read. Spark keeps idle workers of both kinds for
reuse (``spark.python.worker.reuse``), so one tiny batch read of :class:`WarmUpSource` run
just before the query starts leaves both kinds waiting: it is planned in a planner worker of
the kind the stream's uses (which imports the reader there), and read in ``parallelism`` task
workers forked by the session's daemon (:mod:`.worker_daemon`, which preloads what they import, for
workers Spark starts later too). Run beside the query's start instead, on two busy
cores, it was measured here finishing after the first offset was written: the micro-batch
waited for the workers it started.

Only a head start: a failure changes nothing, the query starts whatever this read does.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

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

    def reader(self, schema: Any) -> DataSourceReader:
        preload(("sparkcdc.spark.stream.datasource",))
        return _NoRows(int(self.options.get("tasks", "1")))


class _NoRows(DataSourceReader):
    def __init__(self, tasks: int) -> None:
        self.tasks = tasks

    def partitions(self) -> list[InputPartition]:
        return [InputPartition(i) for i in range(self.tasks)]

    def read(self, partition: InputPartition) -> Iterator[tuple[int]]:
        return iter(())  # the worker's daemon preloaded what the split tasks import


def warm(spark: Any, tasks: int) -> None:
    """The warm-up read (see the module docstring)."""
    spark.dataSource.register(WarmUpSource)
    spark.read.format(NAME).option("tasks", str(tasks)).load().collect()


def warm_workers(spark: Any, tasks: int) -> None:
    """:func:`warm`, timed in the log; a failure is only logged."""
    started = time.monotonic()
    try:
        warm(spark, tasks)
    except Exception as exc:  # the snapshot's own tasks report real problems
        log.debug("warming the Python workers failed: %s", exc)
        return
    log.debug("Python workers for %d split tasks ready in %.1fs", tasks, time.monotonic() - started)
