"""Where a captured table's history table is (``sink.history``), and its rows read back: for
tests and readers that know the sink's config, whatever its table format."""

from __future__ import annotations

import pyarrow as pa

from sparkcdc.config.model import SinkConfig
from sparkcdc.core.table_name import TableName


def history_location(config: SinkConfig, name: TableName) -> str:
    """The history table of ``name``: Delta's path ``<lake>/<db>/<t>__history``, Iceberg's
    identifier ``<db>.<t>__history``."""
    if config.type == "iceberg":
        from sparkcdc.sinks.iceberg.history import history_id

        return ".".join(history_id(name))
    from sparkcdc.sinks.delta.history import history_path
    from sparkcdc.sinks.storage import LakeStorage

    return history_path(LakeStorage(config.path, config.storage_options), name)


def read_history(config: SinkConfig, name: TableName) -> pa.Table | None:
    """Every row of the history table of ``name`` (None while there is none)."""
    where = history_location(config, name)
    if config.type == "iceberg":
        from pyiceberg.exceptions import NoSuchTableError

        from sparkcdc.sinks.iceberg.catalog import open_catalog
        from sparkcdc.sinks.iceberg.history import history_id
        from sparkcdc.sinks.iceberg.tables import plain_fields

        try:
            table = open_catalog(config).load_table(history_id(name))
        except NoSuchTableError:
            return None
        return table.scan().to_arrow().cast(pa.schema(plain_fields(table)))
    from deltalake import DeltaTable

    from sparkcdc.sinks import storage

    options = storage.delta_options(where)
    if not DeltaTable.is_deltatable(where, storage_options=options):
        return None
    return DeltaTable(where, storage_options=options).to_pyarrow_table()
