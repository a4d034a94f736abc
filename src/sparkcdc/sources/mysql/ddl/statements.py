"""The statements the DDL parser produces: what a schema statement does, names resolved, types
as declared (the tracker resolves charset defaults and aliases)."""

from __future__ import annotations

from dataclasses import dataclass, field

Name = tuple[str, str]


@dataclass(frozen=True)
class Default:
    """A column's DEFAULT as declared. ``kind``:

    =========  =============================================================================
    null       ``DEFAULT NULL``
    string     a string literal (``'x'``, ``_utf8mb4'x'``, ``'a' 'b'``, ``DATE '2024-01-02'``):
               ``text`` is its value
    number     a numeric literal, ``text`` as written with its sign (``-1.50``, ``2e3``)
    bits       a hexadecimal or bit literal (``x'ff'``, ``0x1F``, ``b'101'``): ``bits`` its
               value as bytes, ``text`` the charset of an introducer (``_latin1 x'41'``)
    boolean    ``TRUE`` / ``FALSE`` (``text`` is ``1`` or ``0``)
    expression anything else: a function (``CURRENT_TIMESTAMP``, ``uuid()``), an expression
               (``(a + 1)``, ``1 + 1``); ``text`` is its SQL
    =========  =============================================================================

    A literal in parentheses (MySQL 8's ``DEFAULT ('x')``) is the literal."""

    kind: str
    text: str = ""
    bits: bytes = b""


@dataclass
class ColumnDef:
    """A column as declared; charset defaults are resolved by the tracker. ``default`` is its
    DEFAULT (None when it has none), ``generated`` whether its values are computed (``AS
    (expr)``), ``auto_increment`` whether the server numbers new rows."""

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
    default: Default | None = None
    generated: bool = False
    auto_increment: bool = False


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
