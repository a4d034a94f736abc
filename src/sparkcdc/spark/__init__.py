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
    shipping       what Spark pickles to its Python processes: a missing sparkcdc said so

One call makes a session know the sources::

    import sparkcdc.spark
    sparkcdc.spark.register(spark)                 # every built-in type, or name them
    changes = spark.readStream.format("mysql-cdc").option("host", ...).load()
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def register(spark: SparkSession, *types: str) -> None:
    """Register the data sources of ``types`` (default: every built-in source type) with the
    SparkSession ``spark``, as classes that name the way out in a Python process of Spark's
    without sparkcdc (:mod:`.shipping`)."""
    from sparkcdc.sources.registry import BUILT_IN, canonical, source_type
    from sparkcdc.spark import shipping

    shipping.register()
    for kind in types or tuple(BUILT_IN):
        spark.dataSource.register(shipping.shipped(canonical(kind), source_type(kind).format))


__all__ = ["register"]
