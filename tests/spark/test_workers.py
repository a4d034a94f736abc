"""The session's Python task workers: forked by the preloading daemon, running compiled pyspark."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from sparkcdc.spark.runtime.worker_warmup import warm


class Probe(DataSource):
    """Reports, from each task worker: its pid, whether the chunk reader was imported before
    the task came, and where pyspark was imported from."""

    @classmethod
    def name(cls) -> str:
        return "sparkcdc-test-probe"

    def schema(self) -> str:
        return "pid long, warm boolean, pyspark string"

    def reader(self, schema: Any) -> DataSourceReader:
        return ProbeReader()


class ProbeReader(DataSourceReader):
    def partitions(self) -> list[InputPartition]:
        return [InputPartition(0), InputPartition(1)]

    def read(self, partition: InputPartition) -> Iterator[tuple[int, bool, str]]:
        import pyspark

        warmed = "sparkcdc.sources.mysql.chunks.dialect" in sys.modules
        yield os.getpid(), warmed, str(pyspark.__file__)


def test_task_workers_start_with_the_chunk_reader_imported_and_compiled_pyspark(
    spark: Any,
) -> None:
    spark.dataSource.register(Probe)
    rows = spark.read.format(Probe.name()).load().collect()
    assert len(rows) == 2
    # nothing in this module's session imported the chunk reader in a worker before: the
    # daemon did, before forking them; and they import pyspark from its installed package, not
    # from pyspark.zip, whose modules Python would compile again in every new process
    assert all(r.warm for r in rows), rows
    assert all(".zip" not in r.pyspark for r in rows), rows


def test_the_warm_up_read_runs_and_reads_nothing(spark: Any) -> None:
    warm(spark, 2)  # raises if the warm-up source cannot be planned or read
    assert spark.read.format("sparkcdc-warm-up").option("tasks", "3").load().count() == 0
