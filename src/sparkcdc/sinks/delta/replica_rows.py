"""A Delta replica's rows as they were before a micro-batch: what fills the values an update left
out of the log (:mod:`sparkcdc.sinks.changes.unchanged`)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import reduce

import numpy as np
import pyarrow as pa
import pyarrow.dataset as ds
from deltalake import DeltaTable

from sparkcdc.core.convert import cast_struct
from sparkcdc.sinks.changes.unchanged import Key, keys_of
from sparkcdc.sinks.delta import commits


@dataclass(frozen=True)
class Replica:
    """The replica at ``path`` as it was before micro-batch ``batch_id`` of ``app_id``."""

    path: str
    app_id: str
    batch_id: int

    def rows(
        self, names: list[str], keys: list[Key], fields: list[pa.Field]
    ) -> tuple[pa.StructArray, dict[Key, int]]:
        """Its rows whose key (columns ``names``) is one of ``keys``, as structs of ``fields``,
        and the index of each key's row."""
        table = commits.open_table(self.path)
        if table is None or not keys or not _before(table, self.app_id, self.batch_id):
            empty = [pa.nulls(0, f.type) for f in fields]
            return pa.StructArray.from_arrays(empty, fields=fields), {}
        types = {f.name: f.type for f in fields}
        wanted = [
            ds.field(n).isin(pa.array(sorted(set(v), key=repr), types[n]))
            for n, v in zip(names, zip(*keys, strict=True), strict=True)
        ]
        found = table.to_pyarrow_table(filters=reduce(lambda a, b: a & b, wanted))
        columns = [c.combine_chunks() for c in found.columns]
        stored = cast_struct(pa.StructArray.from_arrays(columns, names=found.column_names), fields)
        index = pa.array(np.arange(len(stored)), pa.int64())
        return stored, {k: i for i, k in enumerate(keys_of(stored, names, index))}


def _before(table: DeltaTable, app_id: str, batch_id: int) -> bool:
    """Load ``table``'s newest version without batch ``batch_id`` (False: there is none)."""
    version = table.version()
    while (done := table.transaction_version(app_id)) is not None and done >= batch_id:
        if version == 0:
            return False
        version -= 1
        table.load_as_version(version)
    return True
