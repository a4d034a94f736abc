"""A stream of the fake source (``fake-cdc``, its log a JSON-lines file in the test's folder)
read to the log's end with ``availableNow`` into a ``foreachBatch`` function, as the Spark
tests of offsets and restarts run it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any


def drain(spark: Any, tmp: Path, on_batch: Callable[[Any, int], None], **options: str) -> None:
    """Stream ``tmp/log.jsonl``'s ``shop`` tables with the checkpoint ``tmp/checkpoint`` until
    the log's end; ``options`` add to or replace the source's options."""
    given = {
        "host": str(tmp / "log.jsonl"),
        "user": "cdc",
        "tables": r"shop\..*",
        "schema_history": str(tmp / "schema_history.jsonl"),
        **options,
    }
    reader = spark.readStream.format("fake-cdc").options(**given).load()
    query = (
        reader.writeStream.foreachBatch(on_batch)
        .option("checkpointLocation", str(tmp / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
