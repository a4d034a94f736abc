"""Iceberg tables of the sink, each data commit idempotent per micro-batch.

A captured table ``db.t`` is the Iceberg table ``t`` (replica) and ``t__changelog`` (change log)
in the namespace ``db``, created and evolved from the schema's Arrow columns
(:class:`IcebergTables`, the :class:`~sparkcdc.sinks.changes.lake.TableFormat`; pyiceberg maps
the types: int8/int16 become ``int``, decimals keep their precision and scale, timestamps are
``timestamptz`` or ``timestamp``, arrays ``list``). A column the schema gains is added by
Iceberg's schema evolution (a metadata commit); one is retyped or dropped only when asked
(:meth:`IcebergTables.retype`, :meth:`IcebergTables.drop_columns`, by
:mod:`~sparkcdc.sinks.iceberg.reshape`).

Every data commit's snapshot summary carries the pipeline's id (``sparkcdc.app``), the Spark
batch id (``sparkcdc.batch``) and the source position of the batch's last change
(``sparkcdc.position``), and the same commit sets the table property ``sparkcdc.batch.<app>``
to the batch id. Before writing batch N to a table the sink reads that property
(:func:`committed`): N or more, and the table holds batch N already (Spark replays the batch
after a crash): nothing is written. The property survives compaction and snapshot expiry, which
a walk over the snapshots would not. A table's writes of one batch are one catalog commit (a
transaction: the replica's delete and append are two snapshots and the property, committed at
once), so a crash leaves all of the batch or none of it.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable, Sequence

import pyarrow as pa
import pyarrow.compute as pc
from pyiceberg.catalog import Catalog
from pyiceberg.exceptions import NoSuchTableError
from pyiceberg.expressions import AlwaysTrue
from pyiceberg.table import Table, Transaction
from pyiceberg.table.snapshots import Snapshot

from sparkcdc.config.model import SinkConfig
from sparkcdc.core.table_name import TableName
from sparkcdc.sinks.changes.lake import changelog_schema
from sparkcdc.sinks.iceberg.reach import not_gone, reach
from sparkcdc.sinks.iceberg.reshape import ROW_IMAGES, TOP, dropped, retyped
from sparkcdc.sinks.port import TableKind

APP_KEY = "sparkcdc.app"
BATCH_KEY = "sparkcdc.batch"
POSITION_KEY = "sparkcdc.position"
BATCH_PROPERTY = "sparkcdc.batch."  # + the pipeline's id: a table property
CHANGELOG_SUFFIX = "__changelog"

Identifier = tuple[str, str]
_SHARED: dict[int, IcebergTables] = {}  # by the catalog's id (:meth:`IcebergTables.of`)
_SHARED_LOCK = threading.Lock()


class IcebergTables:
    """The replicas and change logs of the captured tables in one catalog."""

    label = "Iceberg"

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self._tables: dict[Identifier, Table] = {}
        self._lock = threading.Lock()

    @classmethod
    def of(cls, catalog: Catalog, anew: bool = False) -> IcebergTables:
        """The tables of ``catalog`` this process writes through: one object per catalog, so
        that a commit of one part (the sink, its upkeep, a re-snapshot's deletion of gone keys)
        leaves no other part holding an older version of the table. ``anew``: none kept from
        before (a sink opened for a run reads its tables as they are now)."""
        with _SHARED_LOCK:
            found = _SHARED.get(id(catalog))
            if anew or found is None or found.catalog is not catalog:
                found = _SHARED[id(catalog)] = cls(catalog)
            return found

    def replica(self, name: TableName) -> str:
        return f"{name[0]}.{name[1]}"

    def changelog(self, name: TableName) -> str:
        return f"{name[0]}.{name[1]}{CHANGELOG_SUFFIX}"

    def table(self, ident: Identifier) -> Table | None:
        """The table ``ident`` as last loaded or committed here; None if there is none."""
        with self._lock:
            found = self._tables.get(ident)
        if found is not None:
            return found
        try:
            found = self.catalog.load_table(ident)
        except NoSuchTableError:
            return None
        return self.keep(ident, found)

    def keep(self, ident: Identifier, table: Table) -> Table:
        with self._lock:
            self._tables[ident] = table
        return table

    def evolve(
        self, name: TableName, columns: list[pa.Field], source: pa.DataType
    ) -> list[pa.Field]:
        """Create the replica and change log of ``name`` or add the columns they lack."""
        self.catalog.create_namespace_if_not_exists(name[0])
        replica, changelog = replica_id(name), changelog_id(name)
        table = self.table(replica)
        if table is None:
            self.keep(replica, self.catalog.create_table_if_not_exists(replica, pa.schema(columns)))
        else:
            _add_columns(table, _missing(table, columns))
        stored = self.stored_columns(name) or []
        log = self.table(changelog)
        if log is None:
            schema = changelog_schema(stored, source)
            self.keep(changelog, self.catalog.create_table_if_not_exists(changelog, schema))
        else:
            have = _row_fields(log)
            missing = [f for f in stored if f.name.lower() not in have]
            if missing:
                row = pa.struct(missing)
                _add_columns(log, [pa.field("before", row), pa.field("after", row)])
        return stored

    def stored_columns(self, name: TableName) -> list[pa.Field] | None:
        table = self.table(replica_id(name))
        return None if table is None else plain_fields(table)

    def retype(self, name: TableName, fields: list[pa.Field]) -> list[pa.Field]:
        """Give the replica's columns named in ``fields`` those fields' types, and the change
        log's ``before``/``after`` struct fields of those names the same types; every value kept
        (cast exactly). The replica's columns afterwards.

        By schema evolution where Iceberg promotes the type, else by rewriting the table
        (:mod:`~sparkcdc.sinks.iceberg.reshape`). Both tables' changes are made before either is
        committed: a value that does not fit (ValueError) leaves both as they were."""
        staged = []
        for ident, parents in ((replica_id(name), TOP), (changelog_id(name), ROW_IMAGES)):
            table = self.table(ident)
            tx = None if table is None else retyped(table, fields, parents)
            if tx is not None:
                staged.append((ident, tx))
        for ident, tx in staged:
            self.keep(ident, tx.commit_transaction())
        return self.stored_columns(name) or []

    def drop_columns(self, name: TableName, names: list[str]) -> list[pa.Field]:
        """Remove the columns ``names`` from the replica only (the change log keeps them: its
        earlier images hold their values). The replica's columns afterwards."""
        table = self.table(replica_id(name))
        if table is None:
            return []
        dropped(table, names)  # a commit updates the table object this class keeps
        return plain_fields(table)


def replica_id(name: TableName) -> Identifier:
    return (name[0], name[1])


def changelog_id(name: TableName) -> Identifier:
    return (name[0], name[1] + CHANGELOG_SUFFIX)


def _missing(table: Table, columns: Sequence[pa.Field]) -> list[pa.Field]:
    have = {f.name.lower() for f in table.schema().fields}
    return [f for f in columns if f.name.lower() not in have]


def _row_fields(changelog: Table) -> set[str]:
    after = changelog.schema().as_arrow().field("after").type
    return {f.name.lower() for f in after}


def _add_columns(table: Table, fields: Sequence[pa.Field]) -> None:
    """Add ``fields`` (top-level, or struct fields of an existing struct column) by schema
    evolution, one metadata commit."""
    if not fields:
        return
    with table.update_schema() as update:
        update.union_by_name(pa.schema(list(fields)))


def plain_fields(table: Table) -> list[pa.Field]:
    """The table's columns as the sink writes them: plain string, binary and list types (Iceberg
    reports the large ones), no field ids."""
    return [pa.field(f.name, plain_type(f.type)) for f in table.schema().as_arrow()]


def plain_type(t: pa.DataType) -> pa.DataType:
    if pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return pa.string()
    if pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
        return pa.binary()
    if pa.types.is_large_list(t) or pa.types.is_list(t):
        return pa.list_(plain_type(t.value_type))
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, plain_type(f.type)) for f in t])
    return t


# ------------------------------------------------------------------ one batch per commit
def committed(table: Table, app: str) -> int | None:
    """The newest batch of pipeline ``app`` that ``table`` holds (None: none): the table's
    property ``sparkcdc.batch.<app>``, which every commit of a batch sets."""
    found = table.properties.get(BATCH_PROPERTY + app)
    return None if found is None else int(found)


def holds(table: Table, app: str, batch_id: int) -> bool:
    """Whether ``table`` holds batch ``batch_id`` of pipeline ``app`` (or a later one)."""
    done = committed(table, app)
    return done is not None and done >= batch_id


def _holds_at(table: Table, snapshot: Snapshot | None, app: str, batch_id: int) -> bool:
    done = _batch_at(table, snapshot, app)
    return done is not None and done >= batch_id


def marks(app: str, batch_id: int, position: str | None) -> dict[str, str]:
    """The snapshot summary's properties of a commit of batch ``batch_id``."""
    found = {APP_KEY: app, BATCH_KEY: str(batch_id)}
    if position is not None:
        found[POSITION_KEY] = position
    return found


def append_once(table: Table, rows: pa.Table, props: dict[str, str]) -> bool:
    """Append ``rows`` in one snapshot; False if the table holds the batch, or no rows."""
    if rows.num_rows == 0 or holds(table, props[APP_KEY], int(props[BATCH_KEY])):
        return False
    with table.transaction() as tx:
        tx.append(rows.cast(_target(table)), snapshot_properties=props)
        _mark(tx, props)
    return True


def upsert_once(
    table: Table,
    upserts: pa.Table,
    gone: pa.Table,
    key: Sequence[str],
    reset: bool,
    props: dict[str, str],
) -> bool:
    """Delete the rows whose key is in ``gone`` (every key the batch changed; every row if
    ``reset``), then append ``upserts``: one transaction (copy-on-write of the data files the
    keys reach). False if the table holds the batch, or there is nothing to do."""
    if holds(table, props[APP_KEY], int(props[BATCH_KEY])):
        return False
    if not reset and gone.num_rows == 0 and upserts.num_rows == 0:
        return False
    target = _target(table)
    kept = None
    with table.transaction() as tx:
        if reset:
            tx.delete(AlwaysTrue(), snapshot_properties=props)
        elif gone.num_rows:
            found, exact = reach(gone, key)
            if not exact:  # the rows it reaches beside the batch's keys are written again
                held = table.scan(row_filter=found).to_arrow().cast(target)
                kept = not_gone(held, gone, key)
            with warnings.catch_warnings():  # a key new to the table matches no row
                warnings.filterwarnings("ignore", "Delete operation did not match")
                tx.delete(found, snapshot_properties=props)
        parts = [p.cast(target) for p in (kept, upserts) if p is not None and p.num_rows]
        if parts:
            tx.append(pa.concat_tables(parts), snapshot_properties=props)
        _mark(tx, props)
    return True


def add_files_once(
    table: Table,
    paths: Sequence[str],
    gone: pa.Table | None,
    key: Sequence[str],
    props: dict[str, str],
    place: Callable[[str, str], str],
) -> bool:
    """Add the Parquet files ``paths`` (a snapshot's run files, in the table's columns) to the
    table as they are, ``place`` putting each into the table's data folder (its URI there), in
    one transaction that first deletes the rows whose key is in ``gone`` (None: an append) as
    :func:`upsert_once` does; False if the table holds the batch."""
    if holds(table, props[APP_KEY], int(props[BATCH_KEY])):
        return False
    folder = f"{table.location().rstrip('/')}/data"
    placed = [place(path, folder) for path in paths]
    with table.transaction() as tx:
        kept = None
        if gone is not None and gone.num_rows and table.current_snapshot() is not None:
            found, exact = reach(gone, key)
            if not exact:
                held = table.scan(row_filter=found).to_arrow().cast(_target(table))
                kept = not_gone(held, gone, key)
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", "Delete operation did not match")
                tx.delete(found, snapshot_properties=props)
        tx.add_files(placed, snapshot_properties=props, check_duplicate_files=False)
        if kept is not None and kept.num_rows:
            tx.append(kept, snapshot_properties=props)
        _mark(tx, props)
    return True


def overwrite_once(table: Table, rows: pa.Table, props: dict[str, str]) -> bool:
    """Replace every row of ``table`` with ``rows`` in one commit; False if it holds the batch."""
    if holds(table, props[APP_KEY], int(props[BATCH_KEY])):
        return False
    with table.transaction() as tx:
        tx.overwrite(rows.cast(_target(table)), snapshot_properties=props)
        _mark(tx, props)
    return True


def _mark(tx: Transaction, props: dict[str, str]) -> None:
    """The batch in the table's properties too, in the same commit as its data: a table whose
    snapshots were expired or compacted (by anyone's maintenance) still tells it."""
    tx.set_properties({BATCH_PROPERTY + props[APP_KEY]: props[BATCH_KEY]})


def _target(table: Table) -> pa.Schema:
    return pa.schema(plain_fields(table))


def rows_before(
    table: Table, app: str, batch_id: int, names: Sequence[str], keys: pa.Table
) -> pa.Table | None:
    """The rows of ``table`` whose key is one of ``keys``, in the newest snapshot without batch
    ``batch_id`` of ``app`` (None: there is none)."""
    snapshot = table.current_snapshot()
    while snapshot is not None and _holds_at(table, snapshot, app, batch_id):
        parent = snapshot.parent_snapshot_id
        snapshot = None if parent is None else table.snapshot_by_id(parent)
    if snapshot is None:
        return None
    found = table.scan(row_filter=reach(keys, names)[0], snapshot_id=snapshot.snapshot_id)
    wanted = keys.select(list(names)).group_by(list(names)).aggregate([])
    held = found.to_arrow().cast(_target(table))
    return held.join(wanted, keys=list(names), join_type="inner")


def _batch_at(table: Table, snapshot: Snapshot | None, app: str) -> int | None:
    """The newest batch of ``app`` in ``snapshot`` or its ancestors (None: none)."""
    while snapshot is not None:
        summary = snapshot.summary
        props = summary.additional_properties if summary is not None else {}
        if props.get(APP_KEY) == app:
            return int(props[BATCH_KEY])
        parent = snapshot.parent_snapshot_id
        snapshot = None if parent is None else table.snapshot_by_id(parent)
    return None


def read_table(
    config: SinkConfig,
    name: TableName,
    kind: TableKind,
    columns: Sequence[str] | None = None,
    since: str | None = None,
) -> pa.Table | None:
    """The rows of the replica or change log of ``name`` now, in plain types (only ``columns``;
    of a change log only the rows whose ``source.position`` sorts after ``since``); None while
    the table does not exist."""
    from sparkcdc.sinks.iceberg.catalog import open_catalog

    ident = replica_id(name) if kind == "replica" else changelog_id(name)
    try:
        table = open_catalog(config).load_table(ident)
    except NoSuchTableError:
        return None
    wanted = set(columns or []) | ({"source"} if since is not None else set())
    fields = [f for f in plain_fields(table) if columns is None or f.name in wanted]
    found = table.scan(selected_fields=tuple(f.name for f in fields)).to_arrow()
    found = found.cast(pa.schema(fields))
    if since is not None:
        position = pc.struct_field(found.column("source"), "position")
        found = found.filter(pc.greater(position, since))
    return found if columns is None else found.select(list(columns))
