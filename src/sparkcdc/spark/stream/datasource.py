"""The ``<type>-cdc`` PySpark data sources, one per source type (``mysql-cdc``).

``spark.readStream.format("mysql-cdc")`` streams change events
(:class:`~.reader.ChangeStreamReader`; with ``option("table", …)`` one table's, images typed:
:mod:`~.table_stream`); ``spark.read.format("mysql-cdc").option("table", …)`` reads one
consistent snapshot of a table (:class:`~sparkcdc.spark.snapshot.batch_read.
SnapshotBatchReader`). Both are written once against the source port; :func:`data_source` makes
the data source class of one source type, named after its Spark format.
"""

from __future__ import annotations

from typing import ClassVar

from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader
from pyspark.sql.types import StructType

from sparkcdc.core.errors import ConfigError
from sparkcdc.core.event import envelope_ddl
from sparkcdc.sources.registry import canonical, source_type
from sparkcdc.spark.stream.options import SourceOptions


class ChangeDataSource(DataSource):
    """Change events of the tables of one source type (:attr:`source_type`); registered as
    the subclass :func:`data_source` makes for that type."""

    source_type: ClassVar[str]

    @classmethod
    def name(cls) -> str:
        return source_type(cls.source_type).format

    def _options(self) -> SourceOptions:
        return SourceOptions.parse(self.options, self.source_type)

    def schema(self) -> str:
        options = self._options()
        if options.table is not None and "tables" not in {k.lower() for k in self.options}:
            from sparkcdc.spark.snapshot.batch_read import table_schema

            if options.table_stream:
                from sparkcdc.spark.stream.table_stream import TableStream

                stream = TableStream(table_schema(options), options.kind.offsets, options.changelog)
                return stream.ddl()
            return table_schema(options).spark_ddl()
        return envelope_ddl(options.kind.offsets)

    def reader(self, schema: StructType) -> DataSourceReader:
        from sparkcdc.spark.snapshot.batch_read import SnapshotBatchReader

        options = self._options()
        if options.table_stream:
            raise ConfigError(
                f"a batch read of {self.name()} takes no schema_history: with it, the option "
                "'table' names the typed change stream of one table (spark.readStream).",
                key="schema_history",
            )
        if options.table is None:
            raise ConfigError(
                f"a batch read of {self.name()} takes one table: set .option('table', 'db.table').",
                key="table",
            )
        return SnapshotBatchReader(options)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        from sparkcdc.spark.stream.reader import ChangeStreamReader
        from sparkcdc.spark.stream.table_stream import TableStream

        options = self._options()
        if options.table_stream:
            table = TableStream.of_spark(schema, options.kind.offsets, options.changelog)
            return ChangeStreamReader(options, table)
        return ChangeStreamReader(options)


def data_source(kind: str) -> type[ChangeDataSource]:
    """The data source class of the source type ``kind`` (``mysql`` → ``mysql-cdc``)."""
    found = source_type(kind)
    title = "".join(part.title() for part in found.name.replace("-", "_").split("_"))
    return type(f"{title}ChangeDataSource", (ChangeDataSource,), {"source_type": canonical(kind)})
