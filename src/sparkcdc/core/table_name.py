"""A table's identity: ``TableName(db, table)``, and its one text form.

``db`` is the MySQL database or the PostgreSQL schema. The value is a named tuple, so it hashes,
compares and orders as the ``(db, table)`` pair it replaced, and unpacks as one.

The text form is what offsets, signals, ``source.tables``, status files, metrics labels and log
lines hold, written by ``str(name)`` and read by :meth:`TableName.parse`:

    shop.orders                 neither part holds a dot or a double quote: written plain
    "sales.eu".orders           a part that does is double-quoted, its quotes doubled
    shop."a ""b"" c"            (the table  a "b" c)

Plain text parses as a split at its first dot (``a.b.c`` is ``("a", "b.c")``), as every
checkpoint written before quoting existed reads it. SQL quoting stays with each source: it passes
its own quote function to :meth:`TableName.sql`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from sparkcdc.core.errors import ConfigError

_QUOTE = '"'


class TableName(NamedTuple):
    """A table's two-part name: (MySQL database or PostgreSQL schema, table)."""

    db: str
    table: str

    def __str__(self) -> str:
        return f"{_part(self.db)}.{_part(self.table)}"

    def sql(self, quote: Callable[[str], str]) -> str:
        """The qualified name in a source's SQL, each part quoted by the source's ``quote``."""
        return f"{quote(self.db)}.{quote(self.table)}"

    @classmethod
    def parse(cls, text: str) -> TableName:
        """The name ``text`` writes in the text form (see the module docstring)."""
        db, rest = _read_part(text, 0, text)
        if rest >= len(text) or text[rest] != ".":
            raise _unparseable(text)
        if text.startswith(_QUOTE, rest + 1):
            table, end = _read_part(text, rest + 1, text)
            if end != len(text):
                raise _unparseable(text)
            return cls(db, table)
        return cls(db, text[rest + 1 :])


def _part(part: str) -> str:
    if "." in part or _QUOTE in part:
        return _QUOTE + part.replace(_QUOTE, _QUOTE * 2) + _QUOTE
    return part


def _read_part(text: str, start: int, whole: str) -> tuple[str, int]:
    """The part of ``text`` from ``start`` and the index just after it: a quoted part up to its
    closing quote, a plain one up to the next dot (or the end)."""
    if not text.startswith(_QUOTE, start):
        dot = text.find(".", start)
        end = len(text) if dot < 0 else dot
        return text[start:end], end
    out: list[str] = []
    at = start + 1
    while True:
        close = text.find(_QUOTE, at)
        if close < 0:
            raise _unparseable(whole)
        out.append(text[at:close])
        if not text.startswith(_QUOTE, close + 1):
            return _QUOTE.join(out), close + 1
        at = close + 2


def _unparseable(text: str) -> ConfigError:
    return ConfigError(
        f"{text!r} is not a table name; write it as db.table, double-quoting a part that holds "
        'a dot or a double quote and doubling its quotes ("sales.eu".orders).',
        key="table",
        text=text,
    )


def written_problem(text: object) -> str | None:
    """Why ``text`` is not a table name as a user writes one in the pipeline file or a signal
    (a phrase), or None: it must be the text form itself, both parts non-blank, so that the
    text a user writes is the text every other part of sparkcdc compares with."""
    try:
        name = TableName.parse(text) if isinstance(text, str) else None
    except ConfigError:
        name = None
    if name is None or not name.db.strip() or not name.table.strip() or str(name) != text:
        return "is not a db.table name"
    return None


WRITE_IT = 'write it as db.table, double-quoting a part that holds a dot ("sales.eu".orders)'
"""The advice that goes with :func:`written_problem`'s phrase."""
