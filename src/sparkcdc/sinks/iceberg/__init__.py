"""The Iceberg sink (``sink.type: iceberg``): each captured table's replica and change log as
Apache Iceberg tables written with pyiceberg through a catalog (:mod:`.sink`). Looking the type
up imports nothing heavy; its parts import pyiceberg (``pip install 'sparkcdc[iceberg]'``) when
called."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from sparkcdc.config.model import SinkConfig
from sparkcdc.core.errors import ConfigError
from sparkcdc.sinks.port import (
    ChunkFiles,
    GoneKeys,
    Sink,
    SinkContext,
    SinkType,
    TableKeeper,
    TableRead,
)

if TYPE_CHECKING:
    from sparkcdc.core.schema import TableSchema
    from sparkcdc.snapshot.split_store import SplitResult, SplitStore


def _need_pyiceberg() -> None:
    try:
        import pyiceberg  # noqa: F401
    except ImportError as exc:
        raise ConfigError(
            "sink.type: iceberg needs pyiceberg, which is not installed; install "
            "'sparkcdc[iceberg]'"
        ) from exc


def check(config: SinkConfig) -> None:
    """The catalog reachable and the lake's folder writable, before Spark starts."""
    _need_pyiceberg()
    from sparkcdc.sinks.iceberg.catalog import check as check_catalog

    check_catalog(config)


def open_sink(config: SinkConfig, context: SinkContext) -> Sink:
    """The :class:`~.sink.IcebergSink` of ``config``, with its upkeep schedule
    (``sink.maintenance``) on the sink's own tables."""
    _need_pyiceberg()
    from sparkcdc.sinks.iceberg.catalog import open_catalog
    from sparkcdc.sinks.iceberg.sink import IcebergSink
    from sparkcdc.sinks.iceberg.tables import IcebergTables
    from sparkcdc.sinks.iceberg.upkeep import IcebergKeeper
    from sparkcdc.sinks.storage import LakeStorage
    from sparkcdc.sinks.upkeep import Schedule

    tables = IcebergTables.of(open_catalog(config), anew=True)
    lake, every = LakeStorage(config.path, config.storage_options), config.maintenance
    schedule = Schedule(lake, IcebergKeeper(tables), every.compact_every, every.retain)
    return IcebergSink(config, app_id=context.app_id, mark=context.mark, upkeep=schedule,
                       tables=tables, schema_changes=context.schema_changes,
                       transactions=context.transactions)  # fmt: skip


def keeper(config: SinkConfig) -> TableKeeper:
    """The upkeep of the tables in the sink's catalog (:mod:`.upkeep`)."""
    _need_pyiceberg()
    from sparkcdc.sinks.iceberg.catalog import open_catalog
    from sparkcdc.sinks.iceberg.tables import IcebergTables
    from sparkcdc.sinks.iceberg.upkeep import IcebergKeeper

    return IcebergKeeper(IcebergTables.of(open_catalog(config)))


def reader(config: SinkConfig) -> TableRead:
    """The Iceberg tables of ``config`` read with pyiceberg."""
    _need_pyiceberg()
    from sparkcdc.sinks.iceberg.tables import read_table

    return lambda name, kind, columns=None, since=None: read_table(
        config, name, kind, columns, since
    )


def write_chunk_files(
    results: Sequence[SplitResult],
    schema: TableSchema,
    store: SplitStore,
    fresh: bool,
    database: str | None,
    changelog: bool = True,
) -> ChunkFiles:
    """The run's replica and (``changelog``) change-log Parquet files in Iceberg's column types,
    written on the executor (:mod:`sparkcdc.sinks.changes.run_files`); the sink adds them to
    its tables as they are."""
    from sparkcdc.sinks.changes.run_files import write_run
    from sparkcdc.sinks.iceberg.columns import iceberg_columns

    columns = iceberg_columns(schema)
    return write_run(results, schema, store, fresh, database, changelog, columns=columns)


def gone_keys(config: SinkConfig) -> GoneKeys:
    """The re-snapshot's deletion of the keys gone at the source (:mod:`.gone_keys`)."""
    _need_pyiceberg()
    from sparkcdc.sinks.iceberg.catalog import open_catalog
    from sparkcdc.sinks.iceberg.gone_keys import IcebergGoneKeys
    from sparkcdc.sinks.iceberg.tables import IcebergTables

    return IcebergGoneKeys(IcebergTables.of(open_catalog(config)), config.history)


def batch_holders(config: SinkConfig, app: str, batch_id: int) -> list[str]:
    """The catalog's tables whose batch marker of ``app`` is ``batch_id`` or later."""
    _need_pyiceberg()
    from sparkcdc.sinks.iceberg.catalog import open_catalog
    from sparkcdc.sinks.iceberg.tables import IcebergTables, holds
    from sparkcdc.sinks.iceberg.upkeep import IcebergKeeper

    found = IcebergTables.of(open_catalog(config))
    held = []
    for name in IcebergKeeper(found).tables():
        db, table = name.split(".", 1)
        opened = found.table((db, table))
        if opened is not None and holds(opened, app, batch_id):
            held.append(name)
    return held


SINK_TYPE = SinkType("iceberg", check=check, open=open_sink, keys=("catalog",), reader=reader,
                     chunk_writer=write_chunk_files, keeper=keeper,
                     gone_keys=gone_keys, batch_holders=batch_holders)  # fmt: skip
