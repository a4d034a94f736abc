"""AUTO CDC (SCD type 2) over the change stream: NOT run by the tests.

Needs Delta's or Iceberg's Spark package on the cluster (AUTO CDC refuses a Parquet target: it
merges). Copy this file into ``transformations/`` on such a cluster, beside orders_changes.py.
Keys: the table's primary key. Order: ``source.position`` (the event's place in the log as
sortable text); two changes of one key at one position have no defined order.
"""

from pyspark import pipelines as dp
from pyspark.sql import DataFrame, SparkSession, functions as F

spark = SparkSession.active()

dp.create_streaming_table("orders_history", format="delta")


@dp.temporary_view
def orders_flat() -> DataFrame:
    changes = spark.readStream.table("orders_changes").where(F.col("op").isin("r", "c", "u", "d"))
    image = F.when(F.col("op") == "d", F.col("before")).otherwise(F.col("after"))
    return changes.select(
        image.alias("row"), "op", F.col("source.position").alias("position")
    ).select("row.*", "op", "position")


dp.create_auto_cdc_flow(
    target="orders_history",
    source="orders_flat",
    keys=["id"],
    sequence_by="position",
    apply_as_deletes=F.expr("op = 'd'"),
    except_column_list=["op", "position"],
    stored_as_scd_type=2,
)
