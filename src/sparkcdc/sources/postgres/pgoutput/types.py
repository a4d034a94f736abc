"""PostgreSQL column types -> :class:`~sparkcdc.core.schema.Column` and sparkcdc logical types.

A Relation message names each column's type by OID and typmod (PostgreSQL docs: "Logical
Replication Message Formats"; typmods as ``format_type`` reads them). Built-in types have fixed
OIDs (:data:`TYPES`, the one table); any other type (enum, domain, an extension's ``citext``,
arrays of those) is described by a resolver, ``oid -> PgType``: from the catalog
(:data:`CATALOG_SQL`), or from the stream's Type messages (:func:`type_message_resolver`:
names only, enough for ``citext`` and most domains). Lossless where Spark/Delta can hold the
values:

======================================  ==================  ===================================
PostgreSQL                              logical             value (from the text form)
======================================  ==================  ===================================
smallint, integer, bigint, oid          int16/int32/int64
numeric(p,s), p <= 38                   decimal(p,s)        'NaN' -> null (as Debezium, precise)
numeric(p,s) p > 38, numeric            string              exact digits, 'NaN', 'Infinity'
real, double precision                  float32, float64    'NaN', '[-]Infinity' kept
boolean                                 boolean
text, varchar, char(n), bpchar, name,   string              as sent (char(n) blank-padded)
"char", citext, enums
bytea                                   binary              from hex (or escape) output
date                                    date                BC and year > 9999 exact;
                                                            ±infinity -> 9999-12-31/0001-01-01
time                                    string              "HH:MM:SS.ffffff" (as MySQL TIME)
timetz                                  string              as sent ("12:00:00+05:30")
timestamp                               timestamp_ntz       as date; ±infinity -> the ends of
timestamptz                             timestamp (UTC)     0001-01-01 .. 9999-12-31T23:59:59.9…
interval                                string              ISO 8601, PostgreSQL's iso_8601 text
uuid, json, jsonb, xml, inet, cidr,     string              as sent
macaddr, macaddr8, money, geometric
bit(n), bit varying(n)                  string              '0'/'1' digits
T[] (any mapped T)                      array<logical(T)>   one dimension (new)
======================================  ==================  ===================================

Money is text: its output depends on ``lc_monetary`` ('$1,234.56'), so no decimal could be
read from it safely. ``Column.data_type`` is the ``pg_type.typname`` (``int4``, ``_int4`` for an
array, a domain's base type's name); ``length`` the declared length of character and bit types,
``precision``/``scale`` those of numeric, ``fsp`` the fractional digits of the time types.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from sparkcdc.core import types as core_types
from sparkcdc.core.schema import Column
from sparkcdc.sources.postgres.pgoutput.messages import Relation, Type

# ---- logical types core/types.py does not have yet (the lead adds them) ----------------------
BOOLEAN = "boolean"  # in core since the throwaway-server commit: Arrow bool, Spark boolean
NEEDED_LOGICAL_TYPES: dict[str, tuple[str, str, str]] = {
    # logical: (Arrow type, Spark/Delta type, row-image JSON value)
    "array<E>": ("list<E's Arrow type> (nullable elements)", "array<E's Spark type>",
                 "JSON array of E's JSON values, null elements null"),
}  # fmt: skip
NUMERIC = "numeric"  # in TYPES: decided by the typmod (numeric_logical)

# ---- THE table: OID -> (typname, logical type, OID of its array type) -------------------------
TYPES: dict[int, tuple[str, str, int]] = {
    16: ("bool", BOOLEAN, 1000), 17: ("bytea", "binary", 1001), 18: ("char", "string", 1002),
    19: ("name", "string", 1003), 20: ("int8", "int64", 1016), 21: ("int2", "int16", 1005),
    23: ("int4", "int32", 1007), 25: ("text", "string", 1009), 26: ("oid", "int64", 1028),
    114: ("json", "string", 199), 142: ("xml", "string", 143), 600: ("point", "string", 1017),
    601: ("lseg", "string", 1018), 602: ("path", "string", 1019), 603: ("box", "string", 1020),
    604: ("polygon", "string", 1027), 628: ("line", "string", 629),
    650: ("cidr", "string", 651), 700: ("float4", "float32", 1021),
    701: ("float8", "float64", 1022), 718: ("circle", "string", 719),
    774: ("macaddr8", "string", 775), 790: ("money", "string", 791),
    829: ("macaddr", "string", 1040), 869: ("inet", "string", 1041),
    1042: ("bpchar", "string", 1014), 1043: ("varchar", "string", 1015),
    1082: ("date", "date", 1182), 1083: ("time", "string", 1183),
    1114: ("timestamp", "timestamp_ntz", 1115), 1184: ("timestamptz", "timestamp", 1185),
    1186: ("interval", "string", 1187), 1266: ("timetz", "string", 1270),
    1560: ("bit", "string", 1561), 1562: ("varbit", "string", 1563),
    1700: ("numeric", NUMERIC, 1231), 2950: ("uuid", "string", 2951),
    3802: ("jsonb", "string", 3807),
}  # fmt: skip
ARRAY_ELEMENTS: dict[int, int] = {array: oid for oid, (_, _, array) in TYPES.items()}
_BY_TYPNAME = {name: oid for oid, (name, _, _) in TYPES.items()} | {
    f"_{name}": array for _, (name, _, array) in TYPES.items()
}
BY_NAME: dict[str, str] = {"citext": "string"}  # extension types, found by name
_LENGTH_TYPES = {"bpchar": 4, "varchar": 4, "bit": 0, "varbit": 0}  # typmod - length
_TIME_TYPES = {"time", "timetz", "timestamp", "timestamptz"}

CATALOG_SQL = (
    "SELECT t.oid, t.typname, n.nspname, t.typtype,"
    " CASE WHEN t.typcategory = 'A' THEN t.typelem ELSE 0 END, t.typbasetype, t.typtypmod"
    " FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace WHERE t.oid = ANY(%s)"
)  # the rows PgType(*row) is made of, for the OIDs passed as one array parameter


@dataclass(frozen=True, slots=True)
class PgType:
    """A type as ``pg_type`` describes it: ``kind`` its typtype (b base, e enum, d domain,
    c composite, r range, m multirange, p pseudo), ``element`` an array's element type (0 for
    other types), ``base``/``base_typmod`` a domain's underlying type."""

    oid: int
    name: str
    namespace: str = "pg_catalog"
    kind: str = "b"
    element: int = 0
    base: int = 0
    base_typmod: int = -1


Resolver = Callable[[int], PgType | None]


def array_of(element: str) -> str:
    """The logical type of one-dimensional arrays of ``element``."""
    return f"array<{element}>"


def array_element(logical: str) -> str | None:
    """The element logical type of an array logical type, None for any other."""
    return logical[6:-1] if logical.startswith("array<") and logical.endswith(">") else None


def numeric_digits(typmod: int) -> tuple[int, int] | None:
    """(precision, scale) of a numeric typmod (PostgreSQL 15 allows scale < 0 and scale >
    precision), None for unbounded numeric."""
    if typmod < 4:
        return None
    bits = typmod - 4
    return (bits >> 16) & 0xFFFF, ((bits & 0x7FF) ^ 1024) - 1024


def numeric_logical(typmod: int) -> str:
    """decimal(p,s) holding every value of numeric(p,s), string where none does."""
    digits = numeric_digits(typmod)
    if digits is None:
        return "string"
    precision, scale = digits
    if scale < 0:  # numeric(5,-2): integers of up to 7 digits
        precision, scale = precision - scale, 0
    precision = max(precision, scale)  # numeric(2,5): 0.00012
    return core_types.decimal(precision, scale) if precision <= 38 else "string"


def resolve_type(oid: int, typmod: int, resolve: Resolver | None = None) -> tuple[str, str]:
    """(typname, logical type) of a column type; the logical type is "" for a type sparkcdc
    does not map (or cannot resolve), which its column's values are refused for."""
    name, logical, _ = _resolved(oid, typmod, resolve)
    return name, logical


def _resolved(oid: int, typmod: int, resolve: Resolver | None) -> tuple[str, str, int]:
    """:func:`resolve_type` and the typmod in force (a domain's own, not the column's -1)."""
    found = TYPES.get(oid)
    if found is not None:
        name, logical, _ = found
        return name, numeric_logical(typmod) if logical == NUMERIC else logical, typmod
    element = ARRAY_ELEMENTS.get(oid)
    described = None if element is not None or resolve is None else resolve(oid)
    if described is not None and described.kind == "d":
        return _resolved(described.base, described.base_typmod, resolve)
    if described is not None and described.element:
        element = described.element
    if element is not None:
        element_name, element_logical, typmod = _resolved(element, typmod, resolve)
        if not element_logical or array_element(element_logical):
            return f"_{element_name}", "", typmod
        return f"_{element_name}", array_of(element_logical), typmod
    if described is None:
        return "", "", typmod
    if described.kind == "e":
        return described.name, "string", typmod
    return described.name, BY_NAME.get(described.name, ""), typmod


def column(
    name: str, oid: int, typmod: int, resolve: Resolver | None = None, nullable: bool = True
) -> Column:
    """The :class:`Column` of a column of type ``oid`` with ``typmod`` (a Relation column)."""
    data_type, logical, typmod = _resolved(oid, typmod, resolve)
    base = data_type.removeprefix("_")
    digits = numeric_digits(typmod) if base == "numeric" else None
    length = typmod - _LENGTH_TYPES[base] if base in _LENGTH_TYPES and typmod >= 0 else None
    fsp = 0
    if base in _TIME_TYPES or base == "interval":
        fsp = typmod & 0xFFFF if base == "interval" else typmod
        fsp = 6 if typmod < 0 or fsp == 0xFFFF else fsp
    return Column(
        name,
        data_type or f"oid:{oid}",
        nullable=nullable,
        precision=digits[0] if digits else None,
        scale=digits[1] if digits else None,
        length=length,
        fsp=fsp,
        logical=logical,
    )


def relation_columns(relation: Relation, resolve: Resolver | None = None) -> tuple[Column, ...]:
    """The columns a Relation message describes, in order."""
    return tuple(column(c.name, c.type_oid, c.typmod, resolve) for c in relation.columns)


def type_message_resolver(types: Mapping[int, Type]) -> Resolver:
    """A resolver from the Type messages of a stream alone. pgoutput sends a domain's OID with
    its base type's namespace and name, so a domain over a built-in type maps as that type,
    except over numeric (the domain's typmod is in the catalog only: unmapped); an extension
    type maps by name (citext); enums and arrays of non-built-in types need the catalog."""

    def resolve(oid: int) -> PgType | None:
        found = types.get(oid)
        if found is None:
            return None
        base = _BY_TYPNAME.get(found.name) if found.namespace == "pg_catalog" else None
        if base is not None and found.name not in ("numeric", "_numeric"):
            return PgType(oid, found.name, found.namespace, kind="d", base=base)
        return PgType(oid, found.name, found.namespace, kind="?") if base is None else None

    return resolve


def key_names(relation: Relation) -> tuple[str, ...]:
    """The replica identity's columns (the primary key or the identity index); empty for
    REPLICA IDENTITY FULL (every column is flagged) and NOTHING: ask the catalog then."""
    if relation.replica_identity not in ("d", "i"):
        return ()
    return tuple(c.name for c in relation.columns if c.key)
