"""Building and changing one :class:`TableSchema` from parsed CREATE / ALTER TABLE statements,
with the server's rules: primary-key columns become NOT NULL, new character columns take the
table's default charset, ``CONVERT TO CHARACTER SET`` widens TEXT columns so they hold as many
characters as before, and a column keeps its place unless FIRST / AFTER moves it."""

from __future__ import annotations

from dataclasses import replace

from sparkcdc.core.schema import Column, TableSchema
from sparkcdc.sources.mysql.ddl.statements import Action, ColumnDef, CreateTable
from sparkcdc.sources.mysql.schema.column_types import (
    CHAR_TYPES,
    FIXED_LENGTH,
    TEXT_SIZES,
    build_column,
    bytes_per_char,
    charset_name,
    charset_of_collation,
    mapped,
)
from sparkcdc.sources.mysql.schema.existing import RowEffects


class Diverged(ValueError):
    """The statement does not fit the tracked schema (a column it names is not there …)."""


def resolve(d: ColumnDef, table_charset: str, native_json: bool = False) -> Column:
    """The column ``d`` declares, in a table whose default charset is ``table_charset``
    (``native_json``: on MySQL, where JSON is a type of its own)."""
    charset = d.charset or (charset_of_collation(d.collate) if d.collate else None)
    nullable = False if d.primary else (True if d.nullable is None else d.nullable)
    try:
        return build_column(
            d.name,
            d.type_name,
            d.params,
            unsigned=d.unsigned,
            nullable=nullable,
            charset=charset,
            values=d.values,
            default_charset=table_charset,
            native_json=native_json,
        )
    except (IndexError, ValueError, TypeError) as exc:
        raise Diverged(f"column {d.name}: {exc}") from exc


def create_schema(
    stmt: CreateTable, charset: str, key_columns: tuple[str, ...], native_json: bool = False
) -> TableSchema:
    columns = [resolve(d, charset, native_json) for d in stmt.columns]
    schema = TableSchema(*stmt.name, tuple(columns), key_columns=key_columns)
    return _with_primary_key(schema, stmt.primary_key)


def _index(columns: list[Column], name: str, must: bool = True) -> int:
    for i, c in enumerate(columns):
        if c.name.lower() == name.lower():
            return i
    if must:
        raise Diverged(f"no column {name}")
    return -1


def _with_primary_key(schema: TableSchema, names: list[str]) -> TableSchema:
    columns = list(schema.columns)
    key = []
    for name in names:
        i = _index(columns, name)
        columns[i] = replace(columns[i], nullable=False)
        key.append(columns[i].name)
    return replace(schema, columns=tuple(columns), primary_key=tuple(key))


def _place(columns: list[Column], col: Column, position: tuple[str, str] | None, at: int) -> None:
    """Insert ``col`` at FIRST / AFTER x, else at index ``at`` (-1: the end)."""
    if position is None:
        columns.insert(len(columns) if at < 0 else at, col)
    elif position[0] == "first":
        columns.insert(0, col)
    else:
        columns.insert(_index(columns, position[1]) + 1, col)


def _rename(names: tuple[str, ...], old: str, new: str) -> tuple[str, ...]:
    return tuple(new if n.lower() == old.lower() else n for n in names)


def _convert(col: Column, charset: str, widen: bool) -> Column:
    """The column after CONVERT TO CHARACTER SET ``charset`` (``widen``: a TEXT column keeps
    its capacity in characters, as the server does for columns the statement did not define)."""
    if col.data_type not in CHAR_TYPES or col.charset is None:
        return col
    if col.data_type not in FIXED_LENGTH or not widen:
        return replace(col, charset=charset)
    chars = FIXED_LENGTH[col.data_type] // bytes_per_char(col.charset)
    sizes = [name for name, cap in TEXT_SIZES if chars * bytes_per_char(charset) <= cap]
    current = [n for n, _ in TEXT_SIZES].index(col.data_type)
    fits = sizes[0] if sizes else TEXT_SIZES[-1][0]
    best = max(current, [n for n, _ in TEXT_SIZES].index(fits))
    data_type = TEXT_SIZES[best][0]
    return mapped(
        replace(col, data_type=data_type, length=FIXED_LENGTH[data_type], charset=charset)
    )


def _table_charset(actions: list[Action], charset: str) -> tuple[str, list[str]]:
    """The table's default charset after the statement, and its CONVERT TO charsets: table
    options take effect before the column clauses, wherever they stand."""
    converts = [charset_name(a.charset) for a in actions if a.kind == "convert" and a.charset]
    for a in actions:
        if a.kind in ("convert", "default_charset") and a.charset:
            charset = charset_name(a.charset)
    return charset, converts


def alter_schema(
    schema: TableSchema,
    actions: list[Action],
    charset: str,
    native_json: bool = False,
    effects: RowEffects | None = None,
) -> tuple[TableSchema, str]:
    """The schema after the ALTER TABLE ``actions``, and the table's default charset after;
    ``effects`` is told each column clause (what the rows become: :mod:`.existing`)."""
    effects = effects or RowEffects(schema)
    columns = list(schema.columns)
    key, keys = schema.primary_key, schema.key_columns
    db, table = schema.db, schema.table
    charset, converts = _table_charset(actions, charset)
    fresh: set[str] = set()  # columns (re)defined by this statement
    for a in actions:
        if a.kind == "add" and a.column is not None:
            if _index(columns, a.column.name, must=False) >= 0:
                if a.if_exists:
                    continue
                raise Diverged(f"column {a.column.name} exists already")
            added = resolve(a.column, charset, native_json)
            _place(columns, added, a.column.position, -1)
            effects.added(a.column, added)
            fresh.add(a.column.name.lower())
            if a.column.primary:
                key = (a.column.name,)
        elif a.kind in ("modify", "change") and a.column is not None:
            old_name = a.name or a.column.name
            i = _index(columns, old_name, must=not a.if_exists)
            if i < 0:
                continue
            col = resolve(a.column, charset, native_json)
            if any(k.lower() == old_name.lower() for k in key) or a.column.primary:
                col = replace(col, nullable=False)
            del columns[i]
            _place(columns, col, a.column.position, i)
            effects.redefined(old_name, a.column, col)
            fresh.add(col.name.lower())
            key = _rename(key, old_name, col.name)
            keys = _rename(keys, old_name, col.name)
            if a.column.primary:
                key = (col.name,)
        elif a.kind == "drop":
            i = _index(columns, a.name, must=not a.if_exists)
            if i >= 0:
                del columns[i]
                effects.dropped(a.name)
        elif a.kind == "rename_column":
            i = _index(columns, a.name)
            columns[i] = replace(columns[i], name=a.new_name)
            effects.renamed(a.name, a.new_name)
            if a.name.lower() in fresh:
                fresh.add(a.new_name.lower())
            key, keys = _rename(key, a.name, a.new_name), _rename(keys, a.name, a.new_name)
        elif a.kind == "add_pk":
            staged = replace(schema, columns=tuple(columns))
            staged = _with_primary_key(staged, a.columns)
            columns, key = list(staged.columns), staged.primary_key
        elif a.kind == "drop_pk":
            key = ()
        elif a.kind == "rename" and a.table is not None:
            db, table = a.table
    if converts:  # after the column clauses: new definitions change charset only
        columns = [_convert(c, converts[-1], widen=c.name.lower() not in fresh) for c in columns]
    names = {c.name.lower() for c in columns}
    key = tuple(k for k in key if k.lower() in names)
    keys = tuple(k for k in keys if k.lower() in names)
    new = TableSchema(db, table, tuple(columns), primary_key=key, key_columns=keys)
    return new, charset
