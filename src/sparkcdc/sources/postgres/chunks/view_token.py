"""The token of a table as the PostgreSQL log reader describes it: what an incremental snapshot's
chunks need to read the table in the reader's schema (:mod:`.stream_view`).

The reader's schema in force names its columns as the last Relation message did; the catalog
may name them otherwise by now (DDL the log shows only with the table's next change). What
identifies a column for its whole life is its ``attnum``, which the reader's baseline gives
(:class:`~..stream.existing.Baseline`), and the type its values are stored in is the one the
Relation message gave. The token carries both per column, and the catalog as the reader last
read it (``then``: whether the table was rewritten since), as the
:class:`~sparkcdc.sources.port.TableView`'s ``token``::

    {"columns": [["id", 1, 23, -1], ["a", 2, 25, -1]], "then": {"storage": "16401", ...}}

No columns: the baseline does not say which attribute each column is (the chunks then read the
columns by name, :mod:`.stream_view`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from sparkcdc.sources.postgres.chunks.pin_token import PinnedColumn
from sparkcdc.sources.postgres.server.attributes import TableAttributes
from sparkcdc.sources.postgres.stream.existing import TableState


@dataclass(frozen=True)
class ViewToken:
    """Each column of the reader's schema with its attribute and stored type (``columns``,
    empty where not known), and the catalog as the reader last read it (``then``)."""

    columns: tuple[PinnedColumn, ...]
    then: TableAttributes | None

    def text(self) -> str:
        columns = [[c.name, c.attnum, c.type_oid, c.typmod] for c in self.columns]
        then = None if self.then is None else self.then.to_json()
        return json.dumps({"columns": columns, "then": then}, separators=(",", ":"))

    @classmethod
    def parse(cls, text: str) -> ViewToken:
        doc = json.loads(text)
        columns = tuple(
            PinnedColumn(str(n), int(a), int(o), int(m)) for n, a, o, m in doc["columns"]
        )
        then = doc.get("then")
        return cls(columns, None if then is None else TableAttributes.from_json(then))


def view_token(state: TableState) -> ViewToken:
    """The token of a table whose reader state is ``state``."""
    baseline, types = state.baseline, state.column_types()
    if baseline is None:
        return ViewToken((), None)
    nums, names = baseline.attnums, state.schema.column_names()
    if nums is None or types is None or not len(nums) == len(types) == len(names):
        return ViewToken((), baseline.attributes)
    columns = tuple(
        PinnedColumn(name, attnum, oid, typmod)
        for name, attnum, (oid, typmod) in zip(names, nums, types, strict=True)
    )
    return ViewToken(columns, baseline.attributes)
