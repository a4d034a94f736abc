"""The change stream of one MySQL/MariaDB or PostgreSQL table as a streaming table of the pipeline.

Settings come from the environment (the password is never printed):

    SPARKCDC_TYPE                    the source type: mysql (default) or postgres
    SPARKCDC_HOST, SPARKCDC_PORT     the server (default 127.0.0.1 and the type's port)
    SPARKCDC_USER, SPARKCDC_PASSWORD a user with what the source needs (MySQL: REPLICATION
                                     SLAVE, REPLICATION CLIENT, SELECT; PostgreSQL: REPLICATION)
    SPARKCDC_TABLE                   the captured table (default shop.orders, PostgreSQL
                                     public.orders)
    SPARKCDC_SERVER_ID               MySQL: the replica server ids the reader announces
                                     (default 5701-5705)
    SPARKCDC_DATABASE                PostgreSQL: the database (default postgres)
    SPARKCDC_SLOT, SPARKCDC_PUBLICATION
                                     PostgreSQL: the replication slot and the publication
                                     (default sparkcdc_<database>; made when missing)
    SPARKCDC_STATE                   a folder for the source's own files, kept with the
                                     pipeline's storage and deleted with it (full refresh)
    SPARKCDC_MAX_BYTES               the largest micro-batch (default 64MB)
"""

import os

from pyspark import pipelines as dp
from pyspark.sql import DataFrame, SparkSession

import sparkcdc.spark.declarative

TYPE = os.environ.get("SPARKCDC_TYPE", "mysql")
DEFAULTS = {"mysql": ("3306", "shop.orders"), "postgres": ("5432", "public.orders")}
PORT, TABLE = DEFAULTS[TYPE]
STATE = os.environ["SPARKCDC_STATE"]

spark = SparkSession.active()
# registers <type>-cdc in the pipeline's Spark Connect session and lets the CLI end a run that
# read a Python data source with exit code 0 (pyspark 4.3: see docs/pipelines.md)
sparkcdc.spark.declarative.prepare(spark, TYPE)


def own_options() -> dict[str, str]:
    """The options only the source type takes (each type refuses the other's)."""
    if TYPE == "postgres":
        names = {"database": "SPARKCDC_DATABASE", "slot": "SPARKCDC_SLOT",
                 "publication": "SPARKCDC_PUBLICATION"}  # fmt: skip
        return {k: os.environ[v] for k, v in names.items() if os.environ.get(v)}
    return {"server_id": os.environ.get("SPARKCDC_SERVER_ID", "5701-5705")}


@dp.table(comment="Every change of the captured table: op, before, after, source")
def orders_changes() -> DataFrame:
    return (
        spark.readStream.format(f"{TYPE}-cdc")
        .option("host", os.environ.get("SPARKCDC_HOST", "127.0.0.1"))
        .option("port", os.environ.get("SPARKCDC_PORT", PORT))
        .option("user", os.environ.get("SPARKCDC_USER", "cdc"))
        .option("password", os.environ.get("SPARKCDC_PASSWORD", ""))
        .options(**own_options())
        .option("table", os.environ.get("SPARKCDC_TABLE", TABLE))
        .option("max_bytes", os.environ.get("SPARKCDC_MAX_BYTES", "64MB"))
        .option("schema_history", f"{STATE}/schema_history.jsonl")
        .option("snapshot_dir", f"{STATE}/snapshot")
        .option("start_file", f"{STATE}/start.json")
        .option("status_file", f"{STATE}/metrics.json")
        .load()
    )
