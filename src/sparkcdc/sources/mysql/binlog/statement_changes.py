"""Row changes written as a statement: a QUERY event holding INSERT, REPLACE, UPDATE or DELETE
(after a ``WITH`` clause too).

A server logs changes so when a session runs with ``binlog_format`` STATEMENT (or MIXED, for a
statement it deems safe): the rows it changed are not in the binlog, only the statement, which
sparkcdc cannot replay. Such a statement on a captured table stops the stream (treating it as
DDL would pass over its changes without a word); one on another table changes nothing captured.

:func:`changed_table` tells which table a statement changes, from its first words::

    INSERT|REPLACE [LOW_PRIORITY|DELAYED|HIGH_PRIORITY|IGNORE] [INTO] t …
    UPDATE [LOW_PRIORITY|IGNORE] t [[AS] alias] SET …
    DELETE [LOW_PRIORITY|QUICK|IGNORE] FROM t [[AS] alias] [WHERE|ORDER|LIMIT|PARTITION …]

Any other shape of those statements (several tables, a join, a WITH clause) names no table it
can be sure of: ``("", "")``, which the caller treats as possibly captured.
"""

from __future__ import annotations

from sparkcdc.sources.mysql.ddl.lexer import DDLSyntaxError, Name, TokenStream

UNKNOWN: Name = ("", "")
_CHANGES = ("INSERT", "REPLACE", "UPDATE", "DELETE", "WITH")  # WITH: a CTE, then one of them
_MODIFIERS = {"LOW_PRIORITY", "DELAYED", "HIGH_PRIORITY", "IGNORE", "QUICK"}
_AFTER_DELETE = {"WHERE", "ORDER", "LIMIT", "PARTITION"}
_CLAUSES = {"SET", *_AFTER_DELETE}


def changes_rows(sql: str) -> bool:
    """Whether ``sql`` (a QUERY event's statement) is INSERT, REPLACE, UPDATE or DELETE (a
    statement the server logs starting with WITH is one of them)."""
    head = sql.lstrip(" \t\r\n(").split(None, 1)
    if head and head[0].upper() in _CHANGES:
        return True
    return sql.lstrip().startswith(("/*", "#", "--")) and _first_word(sql) in _CHANGES


def changed_table(sql: str, default_db: str) -> Name:
    """The table a row-changing statement changes (:data:`UNKNOWN` if it cannot tell)."""
    try:
        p = TokenStream(sql, default_db or None)
        verb = p.take().upper
        while p.kw() in _MODIFIERS:
            p.i += 1
        if verb in ("INSERT", "REPLACE"):
            p.accept("INTO")
            return p.table_name()
        if verb not in ("UPDATE", "DELETE") or (verb == "DELETE" and not p.accept("FROM")):
            return UNKNOWN
        name = p.table_name()
        ahead = p.peek()
        if p.accept("AS") or (
            ahead is not None and ahead.kind in ("word", "name") and p.kw() not in _CLAUSES
        ):
            p.ident()  # an alias
        end, follows = p.peek() is None, p.kw()
        if verb == "UPDATE" and follows == "SET":
            return name
        if verb == "DELETE" and (end or follows in _AFTER_DELETE):
            return name
    except DDLSyntaxError:
        pass
    return UNKNOWN


def _first_word(sql: str) -> str:
    try:
        return TokenStream(sql, None).kw()
    except DDLSyntaxError:
        return ""
