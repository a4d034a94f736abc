"""Following table schemas through the DDL statements of the binary log.

The tracker starts from the catalog's schemas and applies each DDL statement of the log, so rows
events are always decoded with the columns in force at their point of the log. It knows every
table it has seen (captured or not, so a table renamed into the capture keeps its history) and
reports a :class:`SchemaChange` for each captured table a statement touches:

========  ===============================================================================
create    CREATE TABLE (also ``LIKE``), or a table renamed into the capture
alter     ALTER TABLE changed columns, their types or the primary key
rename    the table got a new name (``old_name``), still captured
drop      DROP TABLE / DROP DATABASE, or a table renamed out of the capture (``schema`` None)
truncate  TRUNCATE TABLE (all rows gone; ``schema`` unchanged)
unknown   a statement about the table that could not be followed; ``schema`` is the catalog's
          current schema when a loader is given, else None: never a silent guess
========  ===============================================================================

Each change also says what the statement did to the rows the table holds (``existing``,
:class:`~sparkcdc.core.existing_rows.ExistingRows`): an ALTER's defaults, renames and type
changes (:mod:`.existing`); a table renamed, or renamed into the capture, and a statement that
could not be followed but changed the table's schema are read again (``resnapshot``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from sparkcdc.core.existing_rows import ExistingRows
from sparkcdc.core.json_value import JSONObject
from sparkcdc.core.schema import TableSchema
from sparkcdc.core.table_name import TableName
from sparkcdc.sources.mysql.ddl.parser import DDLSyntaxError, parse, table_names
from sparkcdc.sources.mysql.ddl.statements import (
    AlterTable,
    CreateTable,
    Database,
    DropTables,
    Name,
    RenameTables,
    Truncate,
)
from sparkcdc.sources.mysql.schema.alter import Diverged, alter_schema, create_schema
from sparkcdc.sources.mysql.schema.column_types import charset_name
from sparkcdc.sources.mysql.schema.existing import RowEffects

Include = Callable[[str, str], bool]
Loader = Callable[[str, str], TableSchema]


@dataclass(frozen=True)
class SchemaChange:
    """What one DDL statement did to one captured table (kinds: see the module docstring)."""

    kind: str
    db: str
    table: str
    schema: TableSchema | None
    old_name: Name | None
    ddl: str
    existing: ExistingRows = ExistingRows()


class SchemaTracker:
    """The schemas of the tables in the log, kept current by :meth:`apply_ddl`."""

    def __init__(
        self,
        schemas: dict[Name, TableSchema],
        include: Include | None = None,
        loader: Loader | None = None,
        key_columns: dict[str, tuple[str, ...]] | None = None,
        charsets: dict[Name, str] | None = None,
    ) -> None:
        self._schemas = dict(schemas)
        self.include: Include = include or (lambda db, table: True)
        self.loader = loader
        self.key_columns = dict(key_columns or {})
        self._charsets = {k: charset_name(v) for k, v in (charsets or {}).items()}
        self._db_charsets: dict[str, str] = {}
        self.native_json = False  # the log is MySQL's, where JSON is a type of its own

    # -- reading ---------------------------------------------------------------------------

    def get(self, db: str, table: str) -> TableSchema | None:
        return self._schemas.get((db, table))

    def schemas(self) -> dict[Name, TableSchema]:
        """Every table the tracker knows, captured or not."""
        return dict(self._schemas)

    def tables(self) -> list[Name]:
        """The captured tables the tracker knows, sorted."""
        return sorted(n for n in self._schemas if self.include(*n))

    def captured(self) -> dict[Name, TableSchema]:
        """The schemas of the captured tables (what the schema history records)."""
        return {n: self._schemas[n] for n in self.tables()}

    def table_charset(self, db: str, table: str) -> str:
        """The default charset of a table's new columns: declared, else guessed from its
        character columns when they agree, else the database's, else utf8mb4."""
        if (db, table) in self._charsets:
            return self._charsets[(db, table)]
        schema = self._schemas.get((db, table))
        seen = {c.charset for c in schema.columns if c.charset} if schema else set()
        if len(seen) == 1:
            return str(seen.pop())
        return self._db_charsets.get(db, "utf8mb4")

    # -- applying DDL ----------------------------------------------------------------------

    def apply_ddl(self, default_db: str | None, sql: str) -> list[SchemaChange]:
        """Apply one statement of the log; the changes it made to captured tables."""
        try:
            stmt = parse(sql, default_db or None)
        except DDLSyntaxError:
            return self._unknown(table_names(sql, default_db or None), sql)
        if isinstance(stmt, CreateTable):
            return self._create(stmt, sql)
        if isinstance(stmt, AlterTable):
            return self._alter(stmt, sql)
        if isinstance(stmt, RenameTables):
            changes: list[SchemaChange] = []
            for old, new in stmt.pairs:
                changes += self._move(old, new, self._schemas.get(old), sql)
            return _swapped(changes)
        if isinstance(stmt, DropTables):
            return [c for name in stmt.names for c in self._drop(name, sql)]
        if isinstance(stmt, Truncate):
            schema = self._schemas.get(stmt.name)
            if not self.include(*stmt.name) or schema is None:
                return []
            return [SchemaChange("truncate", *stmt.name, schema, None, sql)]
        if isinstance(stmt, Database):
            return self._database(stmt, default_db, sql)
        return []

    def _create(self, stmt: CreateTable, sql: str) -> list[SchemaChange]:
        if stmt.if_not_exists and stmt.name in self._schemas:
            return []
        db, table = stmt.name
        if stmt.like is not None:
            source = self._schemas.get(stmt.like) or self._load(*stmt.like)
            if source is None:
                return self._unknown([stmt.name], sql)
            schema = replace(source.renamed(db, table), key_columns=self._keys(db, table))
            if stmt.like in self._charsets:
                self._charsets[stmt.name] = self._charsets[stmt.like]
        else:
            charset = charset_name(stmt.charset) if stmt.charset else None
            charset = charset or self._db_charsets.get(db, "utf8mb4")
            self._charsets[stmt.name] = charset
            try:
                schema = create_schema(stmt, charset, self._keys(db, table), self.native_json)
            except Diverged:
                return self._unknown([stmt.name], sql)
        self._schemas[stmt.name] = schema
        return (
            [SchemaChange("create", db, table, schema, None, sql)]
            if self.include(db, table)
            else []
        )

    def _alter(self, stmt: AlterTable, sql: str) -> list[SchemaChange]:
        old = self._schemas.get(stmt.name)
        if old is None:
            return self._unknown([stmt.name], sql)
        charset = self.table_charset(*stmt.name)
        effects = RowEffects(old)
        try:
            new, new_charset = alter_schema(old, stmt.actions, charset, self.native_json, effects)
        except Diverged:
            return self._unknown([stmt.name], sql)
        self._charsets[stmt.name] = new_charset
        new_name = (new.db, new.table)
        if new_name != stmt.name:
            new = replace(new, key_columns=self._keys(*new_name) or new.key_columns)
            return self._move(stmt.name, new_name, new, sql)
        self._schemas[stmt.name] = new
        if new == old or not self.include(*stmt.name):
            return []
        return [SchemaChange("alter", *stmt.name, new, None, sql, effects.result(new))]

    def _move(
        self, old: Name, new: Name, schema: TableSchema | None, sql: str
    ) -> list[SchemaChange]:
        """Table ``old`` is now called ``new`` (with ``schema``, when known)."""
        self._schemas.pop(old, None)
        if old in self._charsets:
            self._charsets[new] = self._charsets.pop(old)
        was, now = self.include(*old), self.include(*new)
        if schema is None:
            return self._unknown([new], sql) if now else []
        schema = schema.renamed(*new)
        self._schemas[new] = schema
        # the new name's replica starts empty: its rows are read again
        again = ExistingRows(resnapshot=f"the table was renamed from {TableName(*old)}")
        if was and now:
            return [SchemaChange("rename", *new, schema, old, sql, again)]
        changes = [SchemaChange("drop", *old, None, None, sql)] if was else []
        if now:
            changes.append(SchemaChange("create", *new, schema, old, sql, again))
        return changes

    def _drop(self, name: Name, sql: str) -> list[SchemaChange]:
        self._charsets.pop(name, None)
        if self._schemas.pop(name, None) is None or not self.include(*name):
            return []
        return [SchemaChange("drop", *name, None, None, sql)]

    def _database(self, stmt: Database, default_db: str | None, sql: str) -> list[SchemaChange]:
        name = stmt.name or default_db or ""
        if stmt.kind == "drop":
            self._db_charsets.pop(name, None)
            doomed = sorted(n for n in self._schemas if n[0] == name)
            return [c for n in doomed for c in self._drop(n, sql)]
        if stmt.charset:
            self._db_charsets[name] = charset_name(stmt.charset)
        return []

    def _unknown(self, names: list[Name], sql: str) -> list[SchemaChange]:
        """Statements that could not be followed: forget what they touched; report captured
        tables (and statements about a table it cannot name) with the catalog's schema when a
        loader is given."""
        changes = []
        for name in names:
            before = self._schemas.pop(name, None)
            if name[0] and name[1] and not self.include(*name):
                continue  # an uncaptured table: forgetting it is enough
            schema = self._load(*name) if name[0] and name[1] else None
            existing = ExistingRows()
            if schema is not None:
                self._schemas[name] = schema
                if schema != before:  # the statement may have rewritten its rows
                    existing = ExistingRows(resnapshot="a statement sparkcdc could not follow "
                                            "changed the table")  # fmt: skip
            changes.append(SchemaChange("unknown", *name, schema, None, sql, existing))
        return changes

    def _load(self, db: str, table: str) -> TableSchema | None:
        if self.loader is None:
            return None
        try:
            return self.loader(db, table)
        except Exception:  # noqa: BLE001 - the table may be gone by now; the change says unknown
            return None

    def _keys(self, db: str, table: str) -> tuple[str, ...]:
        return tuple(self.key_columns.get(str(TableName(db, table)), ()))

    # -- persistence -----------------------------------------------------------------------

    def to_json(self) -> JSONObject:
        return {
            "tables": [s.to_json() for _, s in sorted(self._schemas.items())],
            "charsets": [[db, t, cs] for (db, t), cs in sorted(self._charsets.items())],
            "databases": dict(sorted(self._db_charsets.items())),
        }

    @classmethod
    def from_json(
        cls,
        value: dict[str, Any],
        include: Include | None = None,
        loader: Loader | None = None,
        key_columns: dict[str, tuple[str, ...]] | None = None,
    ) -> SchemaTracker:
        schemas = {(s.db, s.table): s for s in map(TableSchema.from_json, value["tables"])}
        charsets = {(db, t): cs for db, t, cs in value.get("charsets", [])}
        tracker = cls(schemas, include, loader, key_columns, charsets)
        tracker._db_charsets = dict(value.get("databases", {}))
        return tracker


def _swapped(changes: list[SchemaChange]) -> list[SchemaChange]:
    """One RENAME TABLE's changes, where a captured table renamed away and another renamed to
    its name (the cut-over of gh-ost and pt-online-schema-change: ``t`` to ``_t_del``, ``_t_gho``
    to ``t``) are one ``alter`` of the table, whose rows are read again: its replica is never
    emptied by a drop."""
    created = {(c.db, c.table): c for c in changes if c.kind == "create"}
    gone = {(c.db, c.table) for c in changes if c.kind == "drop"}
    out: list[SchemaChange] = []
    for change in changes:
        name = (change.db, change.table)
        if name not in created or name not in gone:
            out.append(change)
        elif change.kind == "create" and change.old_name is not None:
            why = f"it was swapped with {TableName(*change.old_name)} by one RENAME TABLE"
            again = ExistingRows(resnapshot=why)
            out.append(replace(change, kind="alter", old_name=None, existing=again))
    return out
