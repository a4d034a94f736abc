"""Spark: the ``<type>-cdc`` data sources (``mysql-cdc``) and the pipeline that runs them.

This is the only package that imports pyspark; it is written once against the source port
(:mod:`sparkcdc.sources.port`) and grouped by concern:

    stream/        the data source and its stream reader: offsets, the delivery of the log's
                   events into micro-batches, the status file
    snapshot/      the parallel snapshot: planning splits on the driver, split tasks on the
                   executors, the batch read of one table
    incremental/   incremental snapshots: signals, windows, chunk reads ahead of the batch
    runtime/       the Python worker processes Spark starts: search path, preloads, warm-up
    pipeline/      ``sparkcdc run``: the session, the query, progress, a clean stop

One call makes a session know the sources::

    import sparkcdc.spark
    sparkcdc.spark.register(spark)                 # every built-in type, or name them
    changes = spark.readStream.format("mysql-cdc").option("host", ...).load()
"""

from __future__ import annotations

from typing import Any


def register(spark: Any, *types: str) -> None:
    """Register the data sources of ``types`` (default: every built-in source type) with the
    SparkSession ``spark``."""
    from sparkcdc.sources.registry import BUILT_IN
    from sparkcdc.spark.stream.datasource import data_source

    for kind in types or tuple(BUILT_IN):
        spark.dataSource.register(data_source(kind))


__all__ = ["register"]
