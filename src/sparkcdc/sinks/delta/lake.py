"""Delta's side of the sink's tables (:mod:`sparkcdc.sinks.changes.lake`): the replica of
``db.t`` is the Delta table ``<lake>/<db>/<t>``, its change log ``<lake>/<db>/<t>__changelog``,
both written with delta-rs (:mod:`.commits`)."""

from __future__ import annotations

import pyarrow as pa

from sparkcdc.core.schema_policy import SchemaPolicy
from sparkcdc.core.table_name import TableName
from sparkcdc.sinks.changes import lake
from sparkcdc.sinks.delta import commits, reshape
from sparkcdc.sinks.storage import LakeStorage, as_storage


class DeltaTables:
    """The Delta tables of the captured tables under one lake (:class:`~.lake.TableFormat`)."""

    label = "Delta"

    def __init__(self, storage: LakeStorage, change_data_feed: bool = True) -> None:
        self.storage = storage
        self.change_data_feed = change_data_feed  # of the replicas it creates

    def replica(self, name: TableName) -> str:
        return self.storage.join(name[0], name[1])

    def changelog(self, name: TableName) -> str:
        return self.storage.join(name[0], f"{name[1]}__changelog")

    def evolve(
        self, name: TableName, columns: list[pa.Field], source: pa.DataType
    ) -> list[pa.Field]:
        found = commits.ensure_replica(self.replica(name), columns, self.change_data_feed)
        commits.ensure_changelog(self.changelog(name), found, source)
        return found

    def stored_columns(self, name: TableName) -> list[pa.Field] | None:
        table = commits.open_table(self.replica(name))
        return None if table is None else commits.arrow_fields(table)

    def retype(self, name: TableName, fields: list[pa.Field]) -> list[pa.Field]:
        """Give the replica's columns named in ``fields`` those fields' types, and the change
        log's ``before``/``after`` struct fields of those names the same types; every value kept
        (cast exactly). The replica's columns afterwards."""
        found = reshape.retype_replica(self.replica(name), fields)
        reshape.retype_changelog(self.changelog(name), fields)
        return found

    def drop_columns(self, name: TableName, names: list[str]) -> list[pa.Field]:
        """Remove the columns ``names`` from the replica only (the change log keeps them: its
        earlier images hold their values). The replica's columns afterwards."""
        return reshape.drop_replica_columns(self.replica(name), names)


class Lake(lake.Lake):
    """The captured tables of a Delta lake at ``path`` (a folder, a URI or its storage);
    ``change_data_feed``: of the replicas it creates (``sink.change_data_feed``)."""

    def __init__(
        self,
        path: str | LakeStorage,
        policy: SchemaPolicy | None = None,
        change_data_feed: bool = True,
    ) -> None:
        storage = as_storage(path)
        super().__init__(storage, DeltaTables(storage, change_data_feed), policy)
