"""The column-definition part of DDL: a column's name, type and attributes, and table
constraints (of which only the PRIMARY KEY matters to a schema)."""

from __future__ import annotations

from sparkcdc.sources.mysql.ddl.defaults import default_value
from sparkcdc.sources.mysql.ddl.lexer import DDLSyntaxError, TokenStream
from sparkcdc.sources.mysql.ddl.statements import ColumnDef

_TYPE_WORDS = {"DOUBLE": "PRECISION", "CHARACTER": "VARYING", "CHAR": "VARYING", "LONG": ""}
_CONSTRAINT_WORDS = "PRIMARY KEY INDEX UNIQUE FULLTEXT SPATIAL FOREIGN CONSTRAINT CHECK PERIOD"
CONSTRAINTS = set(_CONSTRAINT_WORDS.split())
_CLAUSE_END = {",", ")"}
_REFERENCE_WORDS = "MATCH FULL PARTIAL SIMPLE ON DELETE UPDATE RESTRICT CASCADE SET NULL NO ACTION"
_REFERENCE = set(_REFERENCE_WORDS.split())


def constraint(p: TokenStream) -> list[str]:
    """A table constraint or index; the PRIMARY KEY's columns, else []."""
    if p.accept("CONSTRAINT") and p.kw() not in ("PRIMARY", "UNIQUE", "FOREIGN", "CHECK"):
        p.ident()
    if p.accept("PRIMARY", "KEY"):
        if p.accept("USING"):
            p.take()
        return p.name_list()
    skip_clause(p)
    return []


def skip_clause(p: TokenStream) -> None:
    """Skip to the ``,`` or ``)`` that ends the current clause (not consumed)."""
    while not p.at_end() and p.text() not in _CLAUSE_END:
        if p.text() == "(":
            p.skip_parens()
        else:
            p.take()


def _type_name(p: TokenStream) -> str:
    tok = p.take()
    if tok.kind != "word":
        raise DDLSyntaxError(f"expected a column type near {tok.text!r}")
    words = [tok.upper]
    if words[0] == "NATIONAL" or words[0] == "NCHAR":
        while p.kw() in ("CHAR", "CHARACTER", "VARCHAR", "VARYING"):
            words.append(p.take().upper)
    elif words[0] in _TYPE_WORDS and (
        p.kw() == _TYPE_WORDS[words[0]]
        or (words[0] == "LONG" and p.kw() in ("VARCHAR", "VARBINARY"))
    ):
        words.append(p.take().upper)
    return " ".join(words).lower()


def column_def(p: TokenStream, in_alter: bool = False) -> ColumnDef:
    col = ColumnDef(p.ident(), _type_name(p))
    if p.accept_punct("("):
        while not p.accept_punct(")"):
            tok = p.take()
            if tok.kind == "string":
                col.values += (tok.text,)
            elif tok.kind == "number":
                col.params.append(int(float(tok.text)))
    while not p.at_end() and p.text() not in _CLAUSE_END:
        if in_alter and p.kw() in ("FIRST", "AFTER"):
            after = p.take().upper == "AFTER"
            col.position = ("after", p.ident()) if after else ("first", "")
        elif p.accept("UNSIGNED") or p.accept("ZEROFILL"):
            col.unsigned = True
        elif p.accept("NOT", "NULL"):
            col.nullable = False
        elif p.accept("NULL"):
            col.nullable = True
        elif p.accept("CHARACTER", "SET") or p.accept("CHARSET") or p.accept("CHAR", "SET"):
            col.charset = p.ident()
        elif p.accept("COLLATE"):
            col.collate = p.ident()
        elif p.kw() in ("ASCII", "UNICODE", "BYTE"):
            col.charset = {"ASCII": "latin1", "UNICODE": "ucs2", "BYTE": "binary"}[p.take().upper]
        elif p.accept("PRIMARY", "KEY") or p.accept("KEY"):
            col.primary = True
        elif p.accept("DEFAULT"):
            col.default = default_value(p)
        elif p.accept("ON", "UPDATE"):
            default_value(p)  # later updates are logged with their values
        elif p.accept("AS") or p.accept("GENERATED", "ALWAYS", "AS"):
            col.generated = True  # AS (expr) [VIRTUAL | STORED | PERSISTENT]
        elif p.accept("AUTO_INCREMENT"):
            col.auto_increment = True
        elif p.accept("SERIAL", "DEFAULT", "VALUE"):  # NOT NULL AUTO_INCREMENT UNIQUE
            col.auto_increment, col.nullable = True, False
        elif p.accept("COMMENT") or p.accept("COLUMN_FORMAT") or p.accept("STORAGE"):
            p.take()
        elif p.accept("REFERENCES"):
            p.table_name()
            if p.text() == "(":
                p.skip_parens()
            while p.kw() in _REFERENCE:  # MATCH FULL, ON DELETE SET NULL, …
                if p.take().upper == "SET" and p.kw() == "DEFAULT":
                    p.take()
        elif p.text() == "(":
            p.skip_parens()  # AS (expr), CHECK (expr)
        else:
            p.take()  # VIRTUAL, STORED, UNIQUE, INVISIBLE …
    return col
