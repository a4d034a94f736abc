"""The statements the DDL parser produces: what a schema statement does, names resolved, types
as declared (the tracker resolves charset defaults and aliases)."""

from __future__ import annotations

from dataclasses import dataclass, field

Name = tuple[str, str]


@dataclass
class ColumnDef:
    """A column as declared; charset defaults are resolved by the tracker."""

    name: str
    type_name: str
    params: list[int] = field(default_factory=list)
    values: tuple[str, ...] = ()
    unsigned: bool = False
    charset: str | None = None
    collate: str | None = None
    nullable: bool | None = None
    primary: bool = False
    position: tuple[str, str] | None = None  # ("first", "") or ("after", column)


@dataclass
class Action:
    """One ALTER TABLE clause: kind in add, drop, modify, change, rename_column, add_pk,
    drop_pk, rename, convert, default_charset, noop."""

    kind: str
    column: ColumnDef | None = None
    name: str = ""  # the column dropped/changed/renamed
    new_name: str = ""
    columns: list[str] = field(default_factory=list)
    table: Name | None = None
    charset: str | None = None
    if_exists: bool = False


@dataclass
class CreateTable:
    name: Name
    columns: list[ColumnDef]
    primary_key: list[str]
    charset: str | None = None
    like: Name | None = None
    if_not_exists: bool = False


@dataclass
class AlterTable:
    name: Name
    actions: list[Action]


@dataclass
class RenameTables:
    pairs: list[tuple[Name, Name]]


@dataclass
class DropTables:
    names: list[Name]


@dataclass
class Truncate:
    name: Name


@dataclass
class Database:
    """CREATE / ALTER / DROP DATABASE (``kind`` says which)."""

    kind: str
    name: str
    charset: str | None = None


@dataclass
class Other:
    """A statement that changes no table schema (DML, grants, views, secondary indexes …)."""


Statement = CreateTable | AlterTable | RenameTables | DropTables | Truncate | Database | Other
