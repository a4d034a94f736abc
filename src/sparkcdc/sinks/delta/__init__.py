"""The Delta sink (``sink.type: delta``): each captured table's replica and change log as Delta
tables written with delta-rs (:mod:`.sink`). Looking the type up imports nothing heavy; its
parts import deltalake when called."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import pyarrow as pa

from sparkcdc.config.model import SinkConfig
from sparkcdc.core.table_name import TableName
from sparkcdc.sinks.port import (
    ChunkFiles,
    GoneKeys,
    Sink,
    SinkContext,
    SinkType,
    TableKeeper,
    TableKind,
    TableRead,
)

if TYPE_CHECKING:
    from sparkcdc.core.schema import TableSchema
    from sparkcdc.snapshot.split_store import SplitResult, SplitStore


CHANGE_DATA_FEED = "change_data_feed"  # the sink's own key: the replicas' change data feed


def change_data_feed(config: SinkConfig) -> bool:
    """``sink.change_data_feed`` (default true): whether the replicas the sink creates get
    Delta's change data feed; ConfigError naming the key for a value neither true nor false."""
    from sparkcdc.config.values import as_bool

    given = config.settings.get(CHANGE_DATA_FEED)
    return True if given is None else as_bool(given, f"sink.{CHANGE_DATA_FEED}")


def check(config: SinkConfig) -> None:
    """The sink's own keys, and a lake on object storage written to, before Spark starts
    (:mod:`.lake_check`)."""
    from sparkcdc.sinks.delta.lake_check import check_lake
    from sparkcdc.sinks.storage import LakeStorage

    change_data_feed(config)
    check_lake(LakeStorage(config.path, config.storage_options))


def open_sink(config: SinkConfig, context: SinkContext) -> Sink:
    """The :class:`~.sink.DeltaSink` of ``config``, with its upkeep schedule
    (``sink.maintenance``)."""
    from sparkcdc.sinks.delta.sink import DeltaSink
    from sparkcdc.sinks.delta.upkeep import schedule
    from sparkcdc.sinks.storage import LakeStorage

    lake = LakeStorage(config.path, config.storage_options)
    upkeep = config.maintenance
    return DeltaSink(
        lake, app_id=context.app_id, mark=context.mark,
        upkeep=schedule(lake, upkeep.compact_every, upkeep.retain),
        snapshot_in_changelog=config.snapshot_in_changelog, schema_changes=context.schema_changes,
        change_data_feed=change_data_feed(config),
        transactions=context.transactions, history=config.history,
    )  # fmt: skip


def open_ahead(config: SinkConfig, tables: Sequence[TableName]) -> Callable[[], None]:
    """Open the Delta tables of ``tables`` in a thread of their own while Spark starts: the
    run's first micro-batch finds them open (:func:`.opened.open_ahead`); what stops it."""
    from sparkcdc.sinks.delta import opened
    from sparkcdc.sinks.delta.lake import Lake
    from sparkcdc.sinks.storage import LakeStorage

    lake = Lake(LakeStorage(config.path, config.storage_options))
    opened.open_ahead([path(t) for t in tables for path in (lake.replica, lake.changelog)])
    return opened.stop_ahead


def write_chunk_files(
    results: Sequence[SplitResult],
    schema: TableSchema,
    store: SplitStore,
    fresh: bool,
    database: str | None,
    changelog: bool = True,
) -> ChunkFiles:
    """The run's replica and (``changelog``) change-log Parquet files, written on the
    executor (:mod:`.chunk_files`)."""
    from sparkcdc.sinks.delta.chunk_files import files_of

    return files_of(results, schema, store, fresh=fresh, database=database, changelog=changelog)


def reader(config: SinkConfig) -> TableRead:
    """The Delta tables of ``config`` read with delta-rs (the change log's rows after a
    position filtered as the files are read)."""
    from sparkcdc.sinks.delta import commits
    from sparkcdc.sinks.delta.lake import Lake
    from sparkcdc.sinks.storage import LakeStorage

    lake = Lake(LakeStorage(config.path, config.storage_options))

    def read(
        name: TableName,
        kind: TableKind,
        columns: Sequence[str] | None = None,
        since: str | None = None,
    ) -> pa.Table | None:
        import pyarrow.dataset as ds

        table = commits.open_table(
            lake.replica(name) if kind == "replica" else lake.changelog(name)
        )
        if table is None:
            return None
        wanted = None if columns is None else list(columns)
        after = None if since is None else ds.field("source", "position") > since
        return table.to_pyarrow_dataset().to_table(columns=wanted, filter=after)

    return read


def keeper(config: SinkConfig) -> TableKeeper:
    """The upkeep of the Delta tables under the sink folder (:mod:`.upkeep`)."""
    from sparkcdc.sinks.delta.upkeep import DeltaKeeper
    from sparkcdc.sinks.storage import LakeStorage

    return DeltaKeeper(LakeStorage(config.path, config.storage_options))


def gone_keys(config: SinkConfig) -> GoneKeys:
    """The re-snapshot's deletion of the keys gone at the source (:mod:`.gone_keys`)."""
    from sparkcdc.sinks.delta.gone_keys import DeltaGoneKeys
    from sparkcdc.sinks.delta.lake import Lake
    from sparkcdc.sinks.storage import LakeStorage

    return DeltaGoneKeys(Lake(LakeStorage(config.path, config.storage_options)), config.history)


def batch_holders(config: SinkConfig, app: str, batch_id: int) -> list[str]:
    """The Delta tables under the sink folder whose transaction id of ``app`` is ``batch_id``
    or later (:func:`.commits.already_applied`)."""
    from sparkcdc.sinks.delta import commits
    from sparkcdc.sinks.delta.upkeep import delta_tables
    from sparkcdc.sinks.storage import LakeStorage

    found = delta_tables(LakeStorage(config.path, config.storage_options))
    return [name for name, path in found if commits.already_applied(path, app, batch_id)]


SINK_TYPE = SinkType("delta", check=check, open=open_sink, chunk_writer=write_chunk_files,
                     keys=(CHANGE_DATA_FEED,), open_ahead=open_ahead, reader=reader, keeper=keeper,
                     gone_keys=gone_keys, batch_holders=batch_holders)  # fmt: skip
