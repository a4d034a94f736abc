"""The change stream of one MySQL/MariaDB table as a streaming table of the pipeline.

Settings come from the environment (the password is never printed):

    SPARKCDC_HOST, SPARKCDC_PORT     the server (default 127.0.0.1:3306)
    SPARKCDC_USER, SPARKCDC_PASSWORD a user with REPLICATION SLAVE, REPLICATION CLIENT, SELECT
    SPARKCDC_TABLE                   the captured table (default shop.orders)
    SPARKCDC_SERVER_ID               the replica server ids the reader announces (default 5701-5705)
    SPARKCDC_STATE                   a folder for the source's own files, kept with the
                                     pipeline's storage and deleted with it (full refresh)
    SPARKCDC_MAX_BYTES               the largest micro-batch (default 64MB)
"""

import os

from pyspark import pipelines as dp
from pyspark.sql import DataFrame, SparkSession

import sparkcdc.spark.declarative

spark = SparkSession.active()
# registers mysql-cdc in the pipeline's Spark Connect session and lets the CLI end a run that
# read a Python data source with exit code 0 (pyspark 4.3: see docs/pipelines.md)
sparkcdc.spark.declarative.prepare(spark, "mysql")

STATE = os.environ["SPARKCDC_STATE"]


@dp.table(comment="Every change of the captured table: op, before, after, source")
def orders_changes() -> DataFrame:
    return (
        spark.readStream.format("mysql-cdc")
        .option("host", os.environ.get("SPARKCDC_HOST", "127.0.0.1"))
        .option("port", os.environ.get("SPARKCDC_PORT", "3306"))
        .option("user", os.environ.get("SPARKCDC_USER", "cdc"))
        .option("password", os.environ.get("SPARKCDC_PASSWORD", ""))
        .option("server_id", os.environ.get("SPARKCDC_SERVER_ID", "5701-5705"))
        .option("table", os.environ.get("SPARKCDC_TABLE", "shop.orders"))
        .option("max_bytes", os.environ.get("SPARKCDC_MAX_BYTES", "64MB"))
        .option("schema_history", f"{STATE}/schema_history.jsonl")
        .option("snapshot_dir", f"{STATE}/snapshot")
        .option("start_file", f"{STATE}/start.json")
        .option("status_file", f"{STATE}/metrics.json")
        .load()
    )
