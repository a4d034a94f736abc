"""Parsing the DDL statements that change table schemas into plain statement objects.

Understood: CREATE TABLE (column list, PRIMARY KEY, table charset; ``LIKE``), ALTER TABLE
(ADD/DROP/MODIFY/CHANGE/RENAME COLUMN, ADD/DROP PRIMARY KEY, RENAME TO, CONVERT TO CHARACTER
SET, DEFAULT CHARSET, and clauses that leave columns alone such as indexes and table options),
RENAME TABLE, DROP TABLE, TRUNCATE, DROP INDEX ``PRIMARY``, CREATE/ALTER/DROP DATABASE.
Anything else is :class:`Other`; a statement that starts like schema DDL but cannot be followed
raises :class:`DDLSyntaxError` (the tracker turns that into an "unknown" change, never a guess).
"""

from __future__ import annotations

from sparkcdc.sources.mysql.ddl.column_defs import CONSTRAINTS, column_def, constraint, skip_clause
from sparkcdc.sources.mysql.ddl.lexer import DDLSyntaxError, TokenStream
from sparkcdc.sources.mysql.ddl.statements import (
    Action,
    AlterTable,
    ColumnDef,
    CreateTable,
    Database,
    DropTables,
    Name,
    Other,
    RenameTables,
    Statement,
    Truncate,
)
from sparkcdc.sources.mysql.schema.column_types import charset_of_collation

__all__ = ["DDLSyntaxError", "Name", "parse", "table_names"]


# ALTER TABLE clauses and table options that leave the columns as they are
_NOOP_WORDS = (
    "ALGORITHM LOCK FORCE ENGINE TYPE COMMENT AUTO_INCREMENT ORDER ENABLE DISABLE "
    "ROW_FORMAT KEY_BLOCK_SIZE PARTITION REMOVE COALESCE REORGANIZE EXCHANGE ANALYZE "
    "CHECK OPTIMIZE REBUILD REPAIR TRUNCATE DISCARD IMPORT STATS_PERSISTENT "
    "STATS_AUTO_RECALC STATS_SAMPLE_PAGES PACK_KEYS CHECKSUM TABLE_CHECKSUM MAX_ROWS "
    "MIN_ROWS AVG_ROW_LENGTH DELAY_KEY_WRITE INSERT_METHOD DATA INDEX PAGE_CHECKSUM "
    "TRANSACTIONAL SEQUENCE ENCRYPTED ENCRYPTION_KEY_ID PAGE_COMPRESSED "
    "PAGE_COMPRESSION_LEVEL UNION COMPRESSION ENCRYPTION TABLESPACE STORAGE CONNECTION "
    "PASSWORD AUTOEXTEND_SIZE WITH WITHOUT DEFAULT CHARACTER CHARSET COLLATE CHAR "
)
_NOOP_OPTIONS = set(_NOOP_WORDS.split())


def parse(sql: str, default_db: str | None = None) -> Statement:
    """The schema statement ``sql`` (run with ``default_db`` selected) stands for."""
    p = TokenStream(sql, default_db)
    verb = p.kw()
    words = [t.upper for t in p.toks]
    if verb in ("CREATE", "ALTER") and any(
        a == "SYSTEM" and b == "VERSIONING" for a, b in zip(words, words[1:], strict=False)
    ):
        raise DDLSyntaxError("system versioning adds or removes hidden columns")
    p.i += 1
    if verb == "CREATE":
        p.accept("OR", "REPLACE")
        if p.accept("TEMPORARY"):
            return Other()  # temporary tables are never row-logged
        if p.accept("DATABASE") or p.accept("SCHEMA"):
            return _database(p, "create")
        if p.accept("TABLE"):
            return _create_table(p)
    elif verb == "ALTER":
        p.accept("ONLINE")
        p.accept("IGNORE")
        if p.accept("DATABASE") or p.accept("SCHEMA"):
            return _database(p, "alter")
        if p.accept("TABLE"):
            return _alter_table(p)
    elif verb == "DROP":
        if p.accept("DATABASE") or p.accept("SCHEMA"):
            return _database(p, "drop")
        temporary = p.accept("TEMPORARY")
        if p.accept("TABLE") or p.accept("TABLES"):
            return Other() if temporary else _drop_tables(p)
        if p.accept("INDEX"):
            p.accept("IF", "EXISTS")
            index = p.ident()
            p.accept("ON") or _fail(p)
            name = p.table_name()
            if index.upper() == "PRIMARY":
                return AlterTable(name, [Action("drop_pk")])
    elif verb == "RENAME" and (p.accept("TABLE") or p.accept("TABLES")):
        return _rename_tables(p)
    elif verb == "TRUNCATE":
        p.accept("TABLE")
        return Truncate(p.table_name())
    return Other()


def _fail(p: TokenStream) -> bool:
    raise DDLSyntaxError(f"unexpected {p.context()!r}")


def _wait(p: TokenStream) -> None:
    if p.accept("WAIT"):
        p.take()
    p.accept("NOWAIT")


def _database(p: TokenStream, kind: str) -> Database:
    p.accept("IF", "NOT", "EXISTS") or p.accept("IF", "EXISTS")
    name = "" if kind == "alter" and p.charset_option() is not None else p.ident()
    if name == "":
        p.i = 0
        while p.kw() not in ("DATABASE", "SCHEMA"):
            p.i += 1
        p.i += 1
    charset = None
    while not p.at_end():
        option = p.charset_option()
        if option is None:
            p.take()
        elif option[0] or not charset:
            charset = option[0] or _collation_charset(option[1])
    return Database(kind, name, charset)


def _collation_charset(collation: str | None) -> str | None:
    return charset_of_collation(collation) if collation else None


def _create_table(p: TokenStream) -> CreateTable:
    if_not_exists = p.accept("IF", "NOT", "EXISTS")
    name = p.table_name()
    if p.accept("LIKE") or (p.kw(1) == "LIKE" and p.accept_punct("(") and p.accept("LIKE")):
        like = p.table_name()
        return CreateTable(name, [], [], like=like, if_not_exists=if_not_exists)
    if not p.accept_punct("("):
        raise DDLSyntaxError("CREATE TABLE without a column list (… SELECT) is not followed")
    columns: list[ColumnDef] = []
    primary: list[str] = []
    while True:
        tok = p.peek()
        word = tok.upper if tok else ""
        if word in CONSTRAINTS and not (word == "PERIOD" and p.kw(1) != "FOR"):
            primary = constraint(p) or primary
        else:
            columns.append(column_def(p))
        if p.accept_punct(")"):
            break
        p.expect_punct(",")
    charset = None
    while not p.at_end():
        if p.kw() in ("AS", "SELECT", "IGNORE", "REPLACE") or p.text() == "(":
            raise DDLSyntaxError("CREATE TABLE … SELECT is not followed")
        if p.kw() == "PARTITION":
            break
        option = p.charset_option()
        if option is None:
            p.take()
        elif option[0] or not charset:
            charset = option[0] or _collation_charset(option[1])
    primary = primary or [c.name for c in columns if c.primary]
    return CreateTable(name, columns, primary, charset=charset, if_not_exists=if_not_exists)


def _alter_table(p: TokenStream) -> AlterTable:
    name = p.table_name()
    _wait(p)
    actions: list[Action] = []
    while not p.at_end():
        actions.extend(_alter_action(p))
        if not p.at_end():
            p.expect_punct(",")
    return AlterTable(name, actions)


def _alter_action(p: TokenStream) -> list[Action]:
    """One clause of ALTER TABLE (ADD/DROP first: the ones that read further themselves)."""
    if p.accept("ADD"):
        return _add(p)
    if p.accept("DROP"):
        return _drop(p)
    if p.accept("MODIFY"):
        p.accept("COLUMN")
        if_exists = p.accept("IF", "EXISTS")
        return [Action("modify", column=column_def(p, in_alter=True), if_exists=if_exists)]
    if p.accept("CHANGE"):
        p.accept("COLUMN")
        if_exists = p.accept("IF", "EXISTS")
        old = p.ident()
        col = column_def(p, in_alter=True)
        return [Action("change", column=col, name=old, if_exists=if_exists)]
    if p.accept("RENAME"):
        return _rename(p)
    if p.accept("ALTER"):
        skip_clause(p)  # ALTER [COLUMN] c SET/DROP DEFAULT, ALTER INDEX … VISIBLE
        return []
    if p.accept("CONVERT", "TO"):
        charset, collation = p.charset_option() or (None, None)
        skip_clause(p)
        return [Action("convert", charset=charset or _collation_charset(collation))]
    if p.kw() in _NOOP_OPTIONS:
        return _table_options(p)
    raise DDLSyntaxError(f"ALTER TABLE clause {p.context()!r} is not followed")


def _add(p: TokenStream) -> list[Action]:
    """ADD [COLUMN] col … | ADD (col, …) | ADD a constraint (a PRIMARY KEY, or skipped)."""
    if p.accept("COLUMN") or p.kw() not in CONSTRAINTS | {"PARTITION", "SYSTEM"}:
        if_exists = p.accept("IF", "NOT", "EXISTS")
        if p.accept_punct("("):
            cols = [column_def(p)]
            while p.accept_punct(","):
                cols.append(column_def(p))
            p.expect_punct(")")
            return [Action("add", column=c, if_exists=if_exists) for c in cols]
        return [Action("add", column=column_def(p, in_alter=True), if_exists=if_exists)]
    p.accept("IF", "NOT", "EXISTS")
    key = constraint(p)
    return [Action("add_pk", columns=key)] if key else []


def _drop(p: TokenStream) -> list[Action]:
    """DROP PRIMARY KEY | DROP [COLUMN] col | DROP an index, constraint or partition (skipped)."""
    if p.accept("PRIMARY", "KEY"):
        return [Action("drop_pk")]
    if p.kw() in CONSTRAINTS | {"PARTITION", "SYSTEM", "PERIOD"} and p.kw() != "COLUMN":
        skip_clause(p)
        return []
    p.accept("COLUMN")
    if_exists = p.accept("IF", "EXISTS")
    column = p.ident()
    p.accept("RESTRICT") or p.accept("CASCADE")
    return [Action("drop", name=column, if_exists=if_exists)]


def _rename(p: TokenStream) -> list[Action]:
    """RENAME COLUMN a TO b | RENAME INDEX … (skipped) | RENAME [TO|AS] table."""
    if p.accept("COLUMN"):
        p.accept("IF", "EXISTS")
        old = p.ident()
        p.accept("TO") or _fail(p)
        return [Action("rename_column", name=old, new_name=p.ident())]
    if p.kw() in ("INDEX", "KEY"):
        skip_clause(p)
        return []
    p.accept("TO") or p.accept("AS")
    return [Action("rename", table=p.table_name())]


def _table_options(p: TokenStream) -> list[Action]:
    """Table options up to the next clause: a DEFAULT CHARSET changes new columns' charset."""
    actions: list[Action] = []
    while not p.at_end() and p.text() != ",":
        option = p.charset_option()
        if option is not None:
            charset = option[0] or _collation_charset(option[1])
            actions.append(Action("default_charset", charset=charset))
        elif p.text() == "(":
            p.skip_parens()
        else:
            p.take()
    return actions


def _drop_tables(p: TokenStream) -> DropTables:
    p.accept("IF", "EXISTS")
    names = [p.table_name()]
    while p.accept_punct(","):
        names.append(p.table_name())
    return DropTables(names)


def _rename_tables(p: TokenStream) -> RenameTables:
    pairs: list[tuple[Name, Name]] = []
    while True:
        old = p.table_name()
        _wait(p)
        p.accept("TO") or _fail(p)
        pairs.append((old, p.table_name()))
        if not p.accept_punct(","):
            return RenameTables(pairs)


def table_names(sql: str, default_db: str | None = None) -> list[Name]:
    """Best effort: the table a statement that failed to parse seems to be about (``""`` for
    the database or table it could not tell)."""
    p = TokenStream(sql, default_db)
    while not p.at_end() and p.kw() not in ("TABLE", "TABLES", "ON"):
        p.i += 1
    p.i += 1
    p.accept("IF", "NOT", "EXISTS") or p.accept("IF", "EXISTS")
    try:
        first = p.ident()
        return [(first, p.ident()) if p.accept_punct(".") else (default_db or "", first)]
    except DDLSyntaxError:
        return [("", "")]
