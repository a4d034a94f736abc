"""SQL text of the PostgreSQL chunk queries: key literals, keyset conditions and ``locate``.

Key values arrive in their row-image JSON encoding (:mod:`sparkcdc.core.chunk`) and become
typed literals ``CAST(E'text' AS type)``: the text the type's input function reads for the
value, in an ``E''`` string (escaped the same whatever ``standard_conforming_strings`` says),
cast to the key column's type (:attr:`KeyColumn.data_type`, checked to be a type name). The
server compares them with the columns, so each column's collation decides; ``locate`` compares
literals with literals and gives them the column's ``COLLATE``.

Keyset conditions are the shared ones of :mod:`sparkcdc.sources.keyset_sql` in PostgreSQL's
own key order: ascending, NULL after every value, as ``ORDER BY k1, k2`` and a b-tree index give
it; over NOT NULL columns they are row-value comparisons, ``(k1, k2) >= (a, b)``, which a
b-tree index answers with one range scan.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from collections.abc import Sequence

from sparkcdc.core import types
from sparkcdc.core.chunk import KeyColumn
from sparkcdc.sources import keyset_sql
from sparkcdc.sources.keyset_sql import Bound, KeyRange, KeysetSyntax

# a type or collation name as format_type and quote_ident write it (``pg_catalog."en-x-icu"``,
# ``timestamp(3) with time zone``, ``public.mood``): nothing that could end its expression
_WORD = r'(?:"(?:[^"]|"")+"|[A-Za-z_][A-Za-z0-9_$]*)'
_SQL_NAME = re.compile(
    rf"{_WORD}(?:\.{_WORD})?(?: {_WORD})*(?:\(\d+(?:,\d+)?\))?(?: {_WORD})*(?:\[\])*"
)
_ISO_DATE = re.compile(r"([+-]?)(\d{4,})(-\d\d-\d\d)(?:T(\d\d:\d\d:\d\d(?:\.\d+)?)(Z?))?")
_TEMPORAL = frozenset({"date", "timestamp", "timestamp_ntz"})


def sql_name(text: str) -> str:
    """``text`` if it is a type or collation name (ValueError otherwise)."""
    if not _SQL_NAME.fullmatch(text):
        raise ValueError(f"{text!r} is not a PostgreSQL type or collation name")
    return text


def text_literal(value: str) -> str:
    """``value`` as an ``E''`` string literal."""
    if "\x00" in value:
        raise ValueError("PostgreSQL text cannot hold the character U+0000")
    return "E'" + value.replace("\\", "\\\\").replace("'", "''") + "'"


def input_text(key: KeyColumn, value: object) -> str:
    """The text PostgreSQL reads as ``value``, a key value in its row-image JSON encoding."""
    logical = key.logical
    if types.is_integer(logical):
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"key {key.name}: {value!r} is not an integer")
        return str(value)
    if logical in ("float32", "float64"):
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"key {key.name}: {value!r} is not a number")
        number = float(value)
        if math.isfinite(number):
            return repr(number)
        return "NaN" if math.isnan(number) else ("Infinity" if number > 0 else "-Infinity")
    if logical == "boolean":
        if not isinstance(value, bool):
            raise ValueError(f"key {key.name}: {value!r} is not a boolean")
        return "true" if value else "false"
    if not isinstance(value, str):
        raise ValueError(f"key {key.name}: {value!r} is not a {logical} value")
    if logical == "binary":
        try:
            return "\\x" + base64.b64decode(value, validate=True).hex()
        except binascii.Error as exc:
            raise ValueError(f"key {key.name}: {value!r} is not base64") from exc
    return temporal_text(value) if logical in _TEMPORAL else value


def temporal_text(value: str) -> str:
    """A date or timestamp in its JSON form (ISO 8601, years outside 1..9999 expanded:
    ``-0043-03-15``) as PostgreSQL reads it (``0044-03-15 BC``: PostgreSQL has no year 0)."""
    found = _ISO_DATE.fullmatch(value)
    if found is None:
        raise ValueError(f"{value!r} is not a date or timestamp in ISO 8601")
    sign, digits, rest, clock, utc = found.groups()
    year = int(sign + digits)
    if not sign and year >= 1:
        return value  # PostgreSQL reads ISO 8601 itself: 'T' and 'Z' included
    shown = f"{1 - year:04d}" if year <= 0 else str(year)
    text = shown + rest + (f" {clock}" if clock else "") + ("+00" if utc else "")
    return text + (" BC" if year <= 0 else "")


def literal(key: KeyColumn, value: object) -> str | None:
    """A typed SQL literal of one key value (None for a null value)."""
    if value is None:
        return None
    return f"CAST({text_literal(input_text(key, value))} AS {sql_name(key.data_type)})"


KEYSET = KeysetSyntax(
    literal,
    nulls_first=False,
    true="true",
    false="false",
    same=lambda a, b: f"{a} IS NOT DISTINCT FROM {b}",
    row_values=True,
)


def range_condition(
    cols: Sequence[str], keys: Sequence[KeyColumn], nulls: bool, span: KeyRange
) -> str:
    """``span`` over the quoted ``cols`` as a WHERE condition: the shared keyset SQL
    (:func:`sparkcdc.sources.keyset_sql.range_condition`), NULL last; ``nulls``: a key
    column may be NULL."""
    return keyset_sql.range_condition(KEYSET, cols, keys, span, nulls)


def _located(keys: Sequence[KeyColumn], value: Bound) -> list[str]:
    """The literals of one value for ``locate``: typed, with the column's collation."""
    out = []
    for key, v in zip(keys, value, strict=True):
        lit = literal(key, v) or f"CAST(NULL AS {sql_name(key.data_type)})"
        out.append(lit + (f" COLLATE {sql_name(key.collation)}" if key.collation else ""))
    return out


def locate_query(
    keys: Sequence[KeyColumn], values: Sequence[Bound], bounds: Sequence[Bound]
) -> str:
    """For each value (by index ``i``), how many bounds are ``<=`` it, compared by the server
    with the keys' collations (:func:`sparkcdc.sources.keyset_sql.locate_query`)."""
    located = [_located(keys, v) for v in values], [_located(keys, b) for b in bounds]
    return keyset_sql.locate_query(KEYSET, *located)


# string literals, quoted identifiers and dollar-quoted strings, whose content is not SQL
_QUOTED = re.compile(
    r"[eE]'(?:[^'\\]|\\.|'')*'|'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\""
    r"|\$([A-Za-z_][A-Za-z0-9_]*|)\$.*?\$\1\$",
    re.S,
)
_DOLLAR = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)?\$")


def condition_refusal(where: str) -> str | None:
    """Why ``where`` is not one SQL condition sparkcdc will put in a query (a ``;``, a
    comment or an unclosed quote outside its literals), or None. PostgreSQL runs every
    statement of a query string, so a condition must not be able to end its own."""
    bare = _QUOTED.sub(" ", where)
    for mark, what in ((";", "a ';'"), ("--", "a comment"), ("/*", "a comment")):
        if mark in bare:
            return f"the condition holds {what} outside its quotes"
    if "'" in bare or '"' in bare or _DOLLAR.search(bare):
        return "the condition has an unclosed quote"
    return None
