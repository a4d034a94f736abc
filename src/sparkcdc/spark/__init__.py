"""Spark: the ``mysql-cdc`` stream source, the Delta sink and the pipeline that joins them.

This is the only package that imports pyspark. One call makes the source known to a session::

    import sparkcdc.spark
    sparkcdc.spark.register(spark)
    changes = spark.readStream.format("mysql-cdc").option("host", ...).load()
"""

from __future__ import annotations

from typing import Any


def register(spark: Any) -> None:
    """Register the ``mysql-cdc`` Python data source with the SparkSession ``spark``."""
    from sparkcdc.spark.source import MySQLCDCDataSource

    spark.dataSource.register(MySQLCDCDataSource)


__all__ = ["register"]
