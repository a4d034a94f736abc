"""The captured tables as a pinned snapshot sees them: the schemas its chunks are read with and
the log reader that starts at its point starts from.

A new pipeline's log reader starts at the snapshot's point P, after the snapshot. Were its
schemas the catalog's when it opens, a DDL made while the snapshot ran (``ADD COLUMN … DEFAULT
5``) would be in them already: the Relation message after it would look unchanged, and what it
did to the rows the snapshot read would never be judged (:mod:`..stream.existing`). So the pin
reads each captured table's schema and catalog baseline inside its exported snapshot, where
``pg_class`` and ``pg_attribute`` read as of P, and records them in the schema history at P
(:mod:`..stream.history`): the reader starts from them and judges every later Relation message
against them. The snapshot reads its chunks with the same schemas (:meth:`PinnedView.schema`),
through the columns the pin's token names (:mod:`.pin_token`, :mod:`.columns_now`).

A pin taken again after a restart (P2) keeps the first pin's states (the history's earliest
record of each table, which the reader starts from whichever pin's point it starts at): chunks
are read with those schemas, by their columns' ``attnum``. A table whose columns changed between
the first pin and P2 is recorded again at the first pin's point with a baseline that says not
which attribute each column is, so the first Relation message of it after that point reads the
table again: chunks read at P2 hold values of after the change, which a ``fill`` judged from the
log would overwrite.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from sparkcdc.config.model import SourceConfig
from sparkcdc.core.schema import TableSchema
from sparkcdc.core.table_name import TableName
from sparkcdc.sources.port import SnapshotPin
from sparkcdc.sources.postgres.chunks.copy import ChunkSession
from sparkcdc.sources.postgres.chunks.export import ExportedSnapshot
from sparkcdc.sources.postgres.chunks.pin_token import PinToken, pinned_columns
from sparkcdc.sources.postgres.offset import LsnOffset
from sparkcdc.sources.postgres.server.catalog import PostgresCatalog
from sparkcdc.sources.postgres.server.connect import Row
from sparkcdc.sources.postgres.settings import PostgresSettings
from sparkcdc.sources.postgres.stream.existing import TableState
from sparkcdc.sources.postgres.stream.history import RelationHistory
from sparkcdc.sources.postgres.stream.tables import first_baseline

log = logging.getLogger("sparkcdc.snapshot")


class SnapshotSession(ChunkSession):
    """A session every query of which runs in the exported snapshot ``snapshot``."""

    def query(self, sql: str, args: Sequence[object] | None = None) -> list[Row]:
        return self.rows(sql, None if args is None else tuple(args))


class PinnedView:
    """:class:`~sparkcdc.sources.port.PinHolder`: an exported snapshot (``held``, closed with
    this view), its pin whose token names the tables' pinned columns, and their schemas."""

    def __init__(
        self, held: ExportedSnapshot, pin: SnapshotPin, schemas: Mapping[str, TableSchema]
    ) -> None:
        self.held, self.pin, self.schemas = held, pin, dict(schemas)

    def schema(self, name: str) -> TableSchema | None:
        return self.schemas.get(name)

    def close(self) -> None:
        self.held.close()


def pin_view(source: SourceConfig, held: ExportedSnapshot, schema_history: str) -> PinnedView:
    """The tables of ``held``'s snapshot as it sees them, settled with the schema history in
    file ``schema_history`` (none if empty; module docstring)."""
    states = read_states(source, held.pin.token)
    at = LsnOffset.of(held.pin.point)
    if schema_history:
        states = settle(RelationHistory(schema_history), at, states)
    columns = {str(n): pinned_columns(s.schema, s.baseline) for n, s in states.items()}
    token = PinToken(held.pin.token, {name: cols for name, cols in columns.items() if cols})
    schemas = {str(n): s.schema for n, s in states.items()}
    return PinnedView(held, SnapshotPin(token.text(), held.pin.point), schemas)


def read_states(source: SourceConfig, snapshot: str) -> dict[TableName, TableState]:
    """Each captured table's schema and catalog baseline in the exported snapshot."""
    database = PostgresSettings.of(source).database
    keys = source.row_keys
    with PostgresCatalog(source, session=SnapshotSession(source, database, snapshot)) as catalog:
        states = {}
        for name in catalog.match_tables(source.tables, exclude=source.capture.excluded_tables):
            schema = catalog.load_schema(*name, keys.get(str(name), ()))
            states[name] = TableState(schema, first_baseline(catalog, schema))
        return states


def settle(
    history: RelationHistory, at: LsnOffset, states: dict[TableName, TableState]
) -> dict[TableName, TableState]:
    """The states the snapshot reads with: a table's first record in ``history`` if it has one
    (an earlier pin's), else its state in ``states``, recorded at ``at``; a table whose columns
    changed since its first record is recorded again there, unmatched (module docstring)."""
    first = history.first_states()
    kept: dict[TableName, TableState] = {}
    for name, state in sorted(states.items()):
        found = first.get(name)
        if found is None:
            history.record(at, name, state)
            kept[name] = state
            continue
        since, earlier = found
        kept[name] = earlier
        if _columns_changed(earlier, state):
            log.warning(
                "the columns of %s changed between the snapshot's pins at %s and %s; the "
                "table is read again once the log shows the change", name, since, at,
            )  # fmt: skip
            if earlier.baseline is not None:  # else unmatched already
                unmatched = replace(earlier.baseline, attnums=None)
                history.record(since, name, TableState(earlier.schema, unmatched))
    return kept


def _columns_changed(then: TableState, now: TableState) -> bool:
    """Whether a column of the table was added, dropped or altered between the two states (a
    table rewritten without that, VACUUM FULL or TRUNCATE, keeps every row's values)."""
    if then.baseline is None or now.baseline is None:
        return then.schema != now.schema
    return _attributes(then) != _attributes(now)


def _attributes(state: TableState) -> list[Any]:
    assert state.baseline is not None
    return [a.to_json() for a in state.baseline.attributes.attributes]
