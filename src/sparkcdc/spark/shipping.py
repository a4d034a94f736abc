"""The data sources as Spark ships them: a small class that says so when sparkcdc is missing.

Spark pickles a registered data source class on the driver and unpickles it in every Python
process it starts for the stream: planners and the stream's source process
(``python_streaming_source_runner``) on the driver's machine, task workers on the executors. A
class of a sparkcdc module is pickled by reference, so a Python without sparkcdc fails while
unpickling it, with a ``ModuleNotFoundError`` that names nothing of ours. Spark's driver-side
source process does not see ``--py-files`` (pyspark 4.3, local and standalone), so shipping a
zip the usual way ends there.

This module imports nothing of sparkcdc and is pickled by value (:func:`register`): its
:class:`ShippedDataSource` unpickles anywhere pyspark does, and imports the real data source
(:mod:`sparkcdc.spark.stream.datasource`) only when Spark calls it, raising :class:`NotShipped`,
one sentence naming the process and its Python, when that import fails. :func:`probe` is the
same check as a task, for the executors (:func:`check_executors`).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterable, Iterator
from types import ModuleType
from typing import TYPE_CHECKING, ClassVar

from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.types import StructType

REAL = "sparkcdc.spark.stream.datasource"
DOCS = "docs/cluster.md"


class NotShipped(ImportError):
    """sparkcdc is not importable in a Python process Spark started (its sentence)."""


def process() -> str:
    """What this Python process is to Spark, from the module it runs as (``python -m``)."""
    main = getattr(sys.modules.get("__main__"), "__spec__", None)
    name = getattr(main, "name", "") or ""
    if name.endswith("python_streaming_source_runner"):
        return "the stream's source"
    if name.startswith("pyspark.sql.worker."):
        return "the planning of the stream"
    return "an executor"


def need(module: str = REAL) -> ModuleType:
    """``module`` imported, or :class:`NotShipped` with the way out."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name is None or exc.name.split(".")[0] != "sparkcdc":
            raise  # something sparkcdc imports is missing: its own error says what
        raise NotShipped(
            f"sparkcdc is not importable in the Python that Spark started for {process()} "
            f"({sys.executable}): install sparkcdc in that Python on every node, or ship a "
            "packed virtual environment with spark.archives and PYSPARK_PYTHON "
            f"(see {DOCS})."
        ) from None


class ShippedDataSource(DataSource):
    """The ``<type>-cdc`` data source of :attr:`source_type`, handing every call to the real
    one (:class:`~sparkcdc.spark.stream.datasource.ChangeDataSource`)."""

    source_type: ClassVar[str]
    format: ClassVar[str]

    @classmethod
    def name(cls) -> str:
        return cls.format

    def _real(self) -> DataSource:
        found: DataSource = need().data_source(self.source_type)(self.options)
        return found

    def schema(self) -> StructType | str:
        return self._real().schema()

    def reader(self, schema: StructType) -> DataSourceReader:
        return self._real().reader(schema)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return self._real().streamReader(schema)


def shipped(source_type: str, format: str) -> type[ShippedDataSource]:
    """The shipped data source class of ``source_type``, named ``format`` in Spark."""
    title = "".join(part.title() for part in format.replace("-", "_").split("_"))
    attrs = {"source_type": source_type, "format": format}
    return type(f"{title}DataSource", (ShippedDataSource,), attrs)


def probe(rows: Iterable[object]) -> Iterator[str]:
    """A task that imports the stream's task code (:class:`NotShipped` when it cannot)."""
    need("sparkcdc.spark.snapshot.split_task")
    yield sys.executable


def check_executors(spark: SparkSession, tasks: int) -> None:
    """Run :func:`probe` as ``tasks`` tasks: an executor without sparkcdc fails it."""
    register()
    spark.sparkContext.parallelize(range(tasks), tasks).mapPartitions(probe).collect()


def register() -> None:
    """Have Spark's pickler carry this module's code by value, not by reference."""
    from pyspark import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # type: ignore[no-untyped-call]
