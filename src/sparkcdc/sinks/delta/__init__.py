"""The Delta sink (``sink.type: delta``): each captured table's replica and change log as Delta
tables written with delta-rs (:mod:`.sink`). Looking the type up imports nothing heavy; its
parts import deltalake when called."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from sparkcdc.config.model import SinkConfig
from sparkcdc.core.table_name import TableName
from sparkcdc.sinks.port import ChunkFiles, Sink, SinkContext, SinkType

if TYPE_CHECKING:
    from sparkcdc.core.schema import TableSchema
    from sparkcdc.snapshot.split_store import SplitResult, SplitStore


def check(config: SinkConfig) -> None:
    """A lake on object storage written to, before Spark starts (:mod:`.lake_check`)."""
    from sparkcdc.sinks.delta.lake_check import check_lake
    from sparkcdc.sinks.storage import LakeStorage

    check_lake(LakeStorage(config.path, config.storage_options))


def open_sink(config: SinkConfig, context: SinkContext) -> Sink:
    """The :class:`~.sink.DeltaSink` of ``config``, with its upkeep schedule
    (``sink.maintenance``)."""
    from sparkcdc.sinks.delta.sink import DeltaSink
    from sparkcdc.sinks.delta.upkeep import Schedule
    from sparkcdc.sinks.storage import LakeStorage

    lake = LakeStorage(config.path, config.storage_options)
    upkeep = config.maintenance
    return DeltaSink(
        lake, app_id=context.app_id, mark=context.mark,
        upkeep=Schedule(lake, upkeep.compact_every, upkeep.retain),
        snapshot_in_changelog=config.snapshot_in_changelog,
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


SINK_TYPE = SinkType("delta", check=check, open=open_sink, chunk_writer=write_chunk_files,
                     open_ahead=open_ahead)  # fmt: skip
