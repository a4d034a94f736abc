"""Capture filters: which tables, columns and operations a pipeline takes, and which values it
masks, decided once for every source (Debezium's ``table.exclude.list``,
``column.include.list``/``column.exclude.list``, ``skipped.operations``,
``column.mask.hash.<alg>.with.salt.<salt>``, ``column.mask.with.<n>.chars`` and
``column.truncate.to.<n>.chars``; Canal's ``filter.black.regex``).

Column patterns are regular expressions over a column's three-part name ``db.table.column``
(PostgreSQL: ``schema.table.column``), matched whole. A column is kept when it matches an
``include`` pattern (all columns when there is none) and no ``exclude`` pattern. A key column
is always needed (it identifies the row in the replica): :meth:`TablePlan.check` refuses a rule
that would drop or mask one. Masks apply to text columns only (logical type ``string``), as
Debezium's do, and keep the column's type:

=========  ================================================================================
hash       the hex digest of ``salt + value`` (UTF-8) with ``algorithm`` (any of hashlib's):
           the same value hashes the same everywhere, so joins on it still work
mask       ``length`` asterisks in place of any non-null value
truncate   the first ``length`` characters
=========  ================================================================================

A :class:`TablePlan` is what the rules say of one table; it rewrites schemas, JSON row images
and Arrow struct or table columns, so the log reader's items, the snapshot's chunks and
``verify`` apply the same rules (:mod:`sparkcdc.sources.captured_items`,
:mod:`sparkcdc.snapshot.captured`).
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import pyarrow as pa
import pyarrow.compute as pc

from sparkcdc.core.errors import ConfigError
from sparkcdc.core.event import Change
from sparkcdc.core.images import UNCHANGED_KEY
from sparkcdc.core.schema import TableSchema

MASK_KINDS = ("hash", "mask", "truncate")
SHADOW_TABLES = r"[^.]+\._+[^.]+_(?:gho|ghc|del|new|old)"
"""The tables online schema change tools make beside a table ``t`` (``db.t``): gh-ost's ghost,
changelog and cut-over tables ``_t_gho``, ``_t_ghc``, ``_t_del``, pt-online-schema-change's
``_t_new`` and ``_t_old`` (with more leading underscores when a name is taken)."""
SKIPPABLE_OPERATIONS = ("c", "u", "d", "t")
JSON_CHUNK = ("key", "after")  # the columns of a chunk read without typed=True


@dataclass(frozen=True)
class Mask:
    """One ``source.masks`` entry: what ``kind`` does to the columns its patterns match."""

    columns: tuple[str, ...]
    kind: str
    length: int = 0  # mask: asterisks written; truncate: characters kept
    algorithm: str = "sha256"
    salt: str = field(default="", repr=False)  # never printed

    def function(self) -> Callable[[str], str]:
        """The masking of one non-null value."""
        if self.kind == "hash":
            salt, algorithm = self.salt.encode(), self.algorithm
            return lambda v: hashlib.new(algorithm, salt + v.encode()).hexdigest()
        if self.kind == "mask":
            stars = "*" * self.length
            return lambda v: stars
        n = self.length
        return lambda v: v[:n]


@dataclass(frozen=True)
class CaptureRules:
    """``source.tables_exclude``, ``source.columns``, ``source.skip_operations`` and
    ``source.masks``, checked (:mod:`sparkcdc.config.values`)."""

    tables_exclude: tuple[str, ...] = ()
    columns_include: tuple[str, ...] = ()
    columns_exclude: tuple[str, ...] = ()
    skip_operations: tuple[str, ...] = ()
    masks: tuple[Mask, ...] = ()
    shadow_tables: bool = False  # capture the online schema change tools' tables too

    @property
    def excluded_tables(self) -> tuple[str, ...]:
        """``tables_exclude``, and the shadow tables unless they are captured."""
        return self.tables_exclude if self.shadow_tables else (*self.tables_exclude, SHADOW_TABLES)

    @property
    def changes_values(self) -> bool:
        """Whether any column is left out or masked (rows and schemas must be rewritten)."""
        return bool(self.columns_include or self.columns_exclude or self.masks)

    @property
    def active(self) -> bool:
        return self.changes_values or bool(self.skip_operations)

    def excludes_table(self, name: str) -> bool:
        """Whether ``db.table`` fully matches one of :attr:`excluded_tables`."""
        return any(re.fullmatch(p, name) for p in self.excluded_tables)

    def plan(self, db: str, table: str, columns: Sequence[str]) -> TablePlan | None:
        """What the rules do to the columns ``columns`` of ``db.table``; None: nothing."""
        if not self.changes_values:
            return None
        return _plan(self, db, table, tuple(columns))

    def schema(self, schema: TableSchema) -> TableSchema:
        """``schema`` as the pipeline captures it: its left-out columns dropped, and its id
        :meth:`schema_id` of the source's."""
        if not self.changes_values or schema.captured_id:
            return schema
        found = self.plan(schema.db, schema.table, schema.column_names())
        kept = schema if found is None else found.schema(schema)
        return replace(kept, captured_id=self.schema_id(schema.schema_id()))

    def schema_id(self, source_id: str) -> str:
        """The id of a captured schema whose source schema's id is ``source_id`` (every table's,
        once a rule changes columns): changes with those rules, so a sink never takes a schema
        captured under other rules for this one."""
        if not self.changes_values or not source_id:
            return source_id
        digest = hashlib.sha1(f"{source_id} {self.pattern_text()}".encode()).hexdigest()
        return digest[:16]

    def schema_json(self, text: str | None) -> str | None:
        """A schema as JSON text (an ``s`` event's), as the pipeline captures it."""
        if not text or not self.changes_values:
            return text
        schema = TableSchema.from_json(json.loads(text))
        return json.dumps(self.schema(schema).to_json(), separators=(",", ":"))

    def check(self, schema: TableSchema) -> None:
        """ConfigError unless the rules keep ``schema``'s key whole and mask text only."""
        found = self.plan(schema.db, schema.table, schema.column_names())
        if found is not None:
            found.check(schema)

    def json_image(self, db: str, table: str, text: str | None) -> str | None:
        """A JSON row image of ``db.table`` as the pipeline captures it."""
        if not text or not self.changes_values:
            return text
        plan = self.plan(db, table, _names(text))
        return text if plan is None else plan.json_image(text)

    def changes(self, db: str, table: str, changes: list[Change]) -> list[Change]:
        """Log changes with JSON images (a snapshot window's) as the pipeline captures them."""
        if not self.changes_values:
            return changes
        return [
            (op, key, self.json_image(db, table, before), self.json_image(db, table, after))
            for op, key, before, after in changes
        ]

    def pattern_text(self) -> str:
        """The rules that change values, for a fingerprint (salts left out)."""
        masks = [(m.columns, m.kind, m.length, m.algorithm) for m in self.masks]
        return json.dumps([self.columns_include, self.columns_exclude, masks])


def _names(image: str | None) -> list[str]:
    if not image:
        return []
    value = json.loads(image)
    if not isinstance(value, dict):
        return []
    unchanged = value.get(UNCHANGED_KEY)  # columns the change left out are columns too
    left_out = [str(n) for n in unchanged] if isinstance(unchanged, list) else []
    return [k for k in value if k != UNCHANGED_KEY] + left_out


@functools.lru_cache(maxsize=1024)
def _plan(rules: CaptureRules, db: str, table: str, columns: tuple[str, ...]) -> TablePlan | None:
    prefix = f"{db}.{table}."
    dropped: set[str] = set()
    masks: dict[str, Mask] = {}
    for name in columns:
        full = prefix + name
        included = not rules.columns_include or any(
            re.fullmatch(p, full) for p in rules.columns_include
        )
        if not included or any(re.fullmatch(p, full) for p in rules.columns_exclude):
            dropped.add(name)
            continue
        for mask in rules.masks:
            if any(re.fullmatch(p, full) for p in mask.columns):
                masks[name] = mask
                break
    if not dropped and not masks:
        return None
    functions = {name: mask.function() for name, mask in masks.items()}
    return TablePlan(f"{db}.{table}", frozenset(dropped), masks, functions)


@dataclass(frozen=True, eq=False)
class TablePlan:
    """What the capture rules do to one table: columns ``dropped``, columns ``masks``ed."""

    table: str
    dropped: frozenset[str]
    masks: dict[str, Mask]
    functions: dict[str, Callable[[str], str]]  # each masked column's masking

    def function(self, column: str) -> Callable[[str], str]:
        return self.functions[column]

    def check(self, schema: TableSchema) -> None:
        for name in schema.key:
            if name in self.dropped or name in self.masks:
                what = "leave out" if name in self.dropped else "mask"
                key = "source.columns" if name in self.dropped else "source.masks"
                raise ConfigError(
                    f"{key} would {what} {self.table}.{name}, a column of the table's key, "
                    "which identifies its rows in the replica; change the pattern so that it "
                    "does not match it.",
                    key=key,
                )
        for name, mask in self.masks.items():
            logical = schema.column(name).logical
            if logical != "string":
                raise ConfigError(
                    f"source.masks: {mask.kind} applies to text columns only, and "
                    f"{self.table}.{name} is {schema.column(name).data_type}; leave it out "
                    "with source.columns.exclude instead, or narrow the pattern.",
                    key="source.masks",
                )

    def _not_text(self, name: str) -> ConfigError:
        """A masked column that holds other than text (a DDL changed it since the start)."""
        return ConfigError(
            f"source.masks: {self.table}.{name} holds values that are no text (a DDL changed "
            "its type), so its mask cannot apply and its values are not let through; leave "
            "the column out with source.columns.exclude, or narrow the pattern, and restart.",
            key="source.masks",
        )

    def schema(self, schema: TableSchema) -> TableSchema:
        kept = tuple(c for c in schema.columns if c.name not in self.dropped)
        return schema.with_columns(kept)

    def json_image(self, text: str | None) -> str | None:
        """A row image's JSON text with the columns dropped and masked."""
        if not text:
            return text
        value = json.loads(text)
        if not isinstance(value, dict):
            return text
        out: dict[str, object] = {}
        for name, v in value.items():
            if name == UNCHANGED_KEY and isinstance(v, list):
                out[name] = [n for n in v if n not in self.dropped]
            elif name in self.dropped:
                continue
            elif name in self.masks and v is not None:
                if not isinstance(v, str):
                    raise self._not_text(name)
                out[name] = self.function(name)(v)
            else:
                out[name] = v
        return json.dumps(out, separators=(",", ":"), ensure_ascii=False)

    def array(self, name: str, values: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
        """A masked column's values (a text column; nulls stay null)."""
        if not (pa.types.is_string(values.type) or pa.types.is_large_string(values.type)):
            raise self._not_text(name)
        mask = self.masks[name]
        if mask.kind == "truncate":
            return pc.utf8_slice_codeunits(values, 0, mask.length)
        as_list = values.to_pylist()
        masked = self.function(name)
        return pa.array([None if v is None else masked(v) for v in as_list], values.type)

    def struct(self, images: pa.StructArray) -> pa.StructArray:
        """Struct row images (typed images) with the columns dropped and masked."""
        fields, arrays = [], []
        for i in range(images.type.num_fields):
            f = images.type.field(i)
            if f.name in self.dropped:
                continue
            values = images.field(i)
            fields.append(f)
            arrays.append(self.array(f.name, values) if f.name in self.masks else values)
        return pa.StructArray.from_arrays(arrays, fields=fields, mask=pc.invert(images.is_valid()))

    def table_columns(self, rows: pa.Table) -> pa.Table:
        """A typed chunk (one column per table column) with the columns dropped and masked;
        a chunk of JSON images (``after``) has them rewritten."""
        if rows.column_names == list(JSON_CHUNK):
            texts = [self.json_image(t) for t in rows.column("after").to_pylist()]
            return rows.set_column(1, "after", pa.array(texts, pa.string()))
        keep = [n for n in rows.column_names if n not in self.dropped]
        rows = rows.select(keep)
        for name in self.masks:
            if name in rows.column_names:
                at = rows.column_names.index(name)
                rows = rows.set_column(at, rows.schema.field(at), self.array(name, rows[name]))
        return rows
