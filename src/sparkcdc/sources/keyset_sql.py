"""The keyset SQL of the chunk queries, written once for every database: ``lo <= key < hi``
conditions and ``locate``'s cross join, over a small :class:`KeysetSyntax` per database.

A chunk bound compares a composite key lexicographically, as Debezium's and Flink CDC 2.x's
chunk queries do (seeds 000, 003)::

    key >= (a, b)  =  (k1 > a) OR (k1 = a AND k2 >= b)
    key <  (a, b)  =  (k1 < a) OR (k1 = a AND k2 <  b)

with NULL placed where the database's ``ORDER BY`` puts it (MySQL: before every value;
PostgreSQL: after), so the chunks cover exactly what a keyset scan in key order reads. Terms
that are always true or false (a NULL bound, a NOT NULL column) are folded away. Where every
key column is NOT NULL and the database answers them with one index range scan, the bound is a
row-value comparison, ``(k1, k2) >= (a, b)``. The database compares the typed literals the
syntax makes, so each column's collation decides the order, never Python.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from sparkcdc.core.chunk import KeyColumn

Bound = Sequence[object]
Term = str | bool  # SQL, or a condition known to be always true or false


@dataclass(frozen=True)
class KeyRange:
    """The rows a chunk query reads: ``lo <= key < hi`` (None bounds are open), and
    ``key <= upto`` (an incremental snapshot's maximum key), and the SQL condition ``where``."""

    lo: Bound | None = None
    hi: Bound | None = None
    upto: Bound | None = None
    where: str | None = None


@dataclass(frozen=True)
class KeysetSyntax:
    """What differs between databases in keyset SQL: ``literal`` (a key value's typed literal,
    None for NULL), where NULL sorts, the spelling of true and false and of a NULL-safe
    equality, and whether NOT NULL keys compare as one row value."""

    literal: Callable[[KeyColumn, object], str | None]
    nulls_first: bool
    true: str
    false: str
    same: Callable[[str, str], str]  # a NULL-safe ``a = b``
    row_values: bool = False

    def sql(self, term: Term) -> str:
        if isinstance(term, bool):
            return self.true if term else self.false
        return term


def _is_null(col: str, nullable: bool, null: bool) -> Term:
    """``col IS NULL`` (``null``) or ``col IS NOT NULL``, folded for a NOT NULL column."""
    if not nullable:
        return not null
    return f"{col} IS NULL" if null else f"{col} IS NOT NULL"


def _or(a: Term, b: Term) -> Term:
    if a is True or b is True:
        return True
    if a is False or b is False:
        return b if a is False else a
    return f"({a} OR {b})"


def compare_column(col: str, op: str, value: str | None, nulls_first: bool, nullable: bool) -> Term:
    """``col op value`` (op ``=``, ``>``, ``>=``, ``<``, ``<=``) in key order, ``value`` None
    being a NULL key value, NULL first or last."""
    if op == "=":
        return _is_null(col, nullable, True) if value is None else f"{col} = {value}"
    up = op[0] == ">"  # looking above the value
    if value is None:
        if nulls_first == up:  # every value is past a NULL at this end, and NULL itself maybe
            return True if op in (">=", "<=") else _is_null(col, nullable, False)
        return _is_null(col, nullable, True) if op in (">=", "<=") else False
    plain = f"{col} {op} {value}"
    return _or(plain, _is_null(col, nullable, True)) if nulls_first != up else plain


def compare_keys(
    syntax: KeysetSyntax,
    cols: Sequence[str],
    keys: Sequence[KeyColumn],
    bound: Bound,
    op: str,
    nullable: bool = True,
) -> Term:
    """``key op bound`` (op ``>=``, ``<`` or ``<=``) in key order over the quoted columns
    ``cols``; ``nullable``: a key column may hold NULL."""
    if len(bound) != len(keys):
        raise ValueError(f"a chunk bound has {len(bound)} values for {len(keys)} key columns")
    values = [syntax.literal(k, v) for k, v in zip(keys, bound, strict=True)]
    if syntax.row_values and not nullable and all(v is not None for v in values):
        if len(cols) == 1:
            return f"{cols[0]} {op} {values[0]}"
        return f"({', '.join(cols)}) {op} ({', '.join(map(str, values))})"
    strict = ">" if op == ">=" else "<"
    terms: list[str] = []
    for i in range(len(cols)):
        last = op if i == len(cols) - 1 else strict
        parts = [compare_column(c, "=", v, syntax.nulls_first, nullable)
                 for c, v in zip(cols[:i], values[:i], strict=True)]  # fmt: skip
        parts.append(compare_column(cols[i], last, values[i], syntax.nulls_first, nullable))
        if False in parts:
            continue
        kept = [p for p in parts if isinstance(p, str)]
        if not kept:
            return True
        terms.append(" AND ".join(kept))
    return "(" + " OR ".join(f"({t})" for t in terms) + ")" if terms else False


def range_condition(
    syntax: KeysetSyntax,
    cols: Sequence[str],
    keys: Sequence[KeyColumn],
    span: KeyRange,
    nullable: bool = True,
) -> str:
    """``span`` as a WHERE condition over the quoted ``cols``; true when nothing bounds it."""
    parts = [
        compare_keys(syntax, cols, keys, bound, op, nullable)
        for bound, op in ((span.lo, ">="), (span.hi, "<"), (span.upto, "<="))
        if bound is not None
    ]
    if span.where:
        parts.append(f"({span.where})")
    return " AND ".join(syntax.sql(p) for p in parts if p is not True) or syntax.true


def locate_query(
    syntax: KeysetSyntax, values: Sequence[Sequence[str]], bounds: Sequence[Sequence[str]]
) -> str:
    """For each value (by index ``i``), how many bounds are ``<=`` it: two derived tables of
    the literals given (NULL ones typed), cross-joined and compared by the database in key
    order."""

    def rows(items: Sequence[Sequence[str]], index: bool) -> str:
        selects = []
        for n, item in enumerate(items):
            cols = [f"{lit} AS k{j}" for j, lit in enumerate(item)]
            selects.append("SELECT " + ", ".join([f"{n} AS i"] * index + cols))
        return " UNION ALL ".join(selects)

    def past(j: int, last: bool) -> str:  # v.kj > b.kj (>= for the last column), NULLs placed
        v, b = f"v.k{j}", f"b.k{j}"
        low, high = (b, v) if syntax.nulls_first else (v, b)  # the NULL side of v > b
        if last:
            return f"COALESCE({v} >= {b}, {low} IS NULL)"
        return f"COALESCE({v} > {b}, {high} IS NOT NULL AND {low} IS NULL)"

    n = len(values[0]) if values else 0
    same = [syntax.same(f"v.k{j}", f"b.k{j}") for j in range(n)]
    terms = [" AND ".join([*same[:i], past(i, i == n - 1)]) for i in range(n)]
    return (
        f"SELECT v.i, SUM(CASE WHEN {' OR '.join(f'({t})' for t in terms)} THEN 1 ELSE 0 END)"
        f" FROM ({rows(values, True)}) v CROSS JOIN ({rows(bounds, False)}) b GROUP BY v.i"
    )
