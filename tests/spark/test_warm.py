"""Python workers warmed before a snapshot's first micro-batch, running compiled pyspark."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from sparkcdc.spark.warm import warm


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

        warmed = "sparkcdc.sources.mysql.chunks" in sys.modules
        yield os.getpid(), warmed, str(pyspark.__file__)


def test_warmed_workers_run_the_next_reads_with_the_reader_imported(spark: Any) -> None:
    warm(spark, 2)
    spark.dataSource.register(Probe)
    rows = spark.read.format(Probe.name()).load().collect()
    assert len(rows) == 2
    # the reads ran in the workers the warm-up left (nothing else imports the chunk reader in
    # a worker), and those import pyspark from its installed package, not from pyspark.zip,
    # whose modules Python compiles again in every new process
    assert all(r.warm for r in rows), rows
    assert all(".zip" not in r.pyspark for r in rows), rows
