"""One local SparkSession per test module (Python workers on this interpreter)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import Any

import pytest

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    from pyspark.sql import SparkSession

    import sparkcdc.spark
    from sparkcdc.spark.runtime.pythonpath import use_compiled_pyspark

    use_compiled_pyspark()
    session = (
        SparkSession.builder.master("local[2]")
        .appName("sparkcdc-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.python.daemon.module", "sparkcdc.spark.runtime.worker_daemon")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    sparkcdc.spark.register(session, "mysql", "tests.fakes")
    try:
        yield session
    finally:
        session.stop()
