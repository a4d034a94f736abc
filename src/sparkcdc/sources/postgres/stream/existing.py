"""What a schema change seen in a Relation message did to the rows a table already holds.

PostgreSQL changes existing values without row changes in the WAL: ``ADD COLUMN … DEFAULT``
(a non-volatile default is evaluated once and kept in ``attmissingval``; a volatile one rewrites
the table), ``RENAME COLUMN``, ``ALTER COLUMN … TYPE`` (a conversion rewrites the table). The
Relation message says only which columns the table has, by name and type, as of the next change;
the catalog (:mod:`..server.attributes`) says more, but as of when it is read, which may be after
more DDL. :func:`judge` keeps what the catalog can confirm for the Relation's point and answers
``resnapshot`` for anything else (:class:`~sparkcdc.core.existing_rows.ExistingRows`)::

    match    which attribute each of the Relation's columns is. The schema in force's columns
             are the attributes of the last read (Baseline.attnums); the attributes numbered
             above Baseline.known were added since, in attnum order, after them. The match is
             exact when the catalog allows one reading only: no column of the schema in force
             dropped since, and none of those added since dropped (the added ones the Relation
             lists are the first of them), or nothing added since (the Relation lists the
             survivors, or all of them); each column's name and type now are the Relation's
    rewrite  the table's files changed since the last read (pg_class.relfilenode) while a
             column's pg_attribute row changed or a column was added: a conversion, a
             volatile default, a type changed and back: resnapshot. A rewrite that touched
             no column (VACUUM FULL, CLUSTER, TRUNCATE) keeps every value
    added    no rewrite since the column was added: the rows older than it read its
             ``attmissingval`` (fill: a constant, a stable expression such as now(), a domain's
             default, a NOT NULL column's default), or null (nothing)
    renamed  the same attnum under another name: copy
    retyped  without a rewrite the stored values are the old ones: nothing if the new type
             reads each the same (:func:`~sparkcdc.core.type_change.type_change`), else
             resnapshot; with one, the rewrite rule above
    dropped  nothing

Not matched (more DDL since than the catalog can order, the pipeline catching up): resnapshot,
unless the Relation shows the schema in force and nothing changed since the last read.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from sparkcdc.core.existing_rows import ExistingRows
from sparkcdc.core.json_value import JSONObject, JSONValue
from sparkcdc.core.schema import Column, TableSchema
from sparkcdc.core.type_change import describe, type_change
from sparkcdc.sources.postgres.pgoutput.messages import RelationColumn
from sparkcdc.sources.postgres.pgoutput.types import array_element
from sparkcdc.sources.postgres.pgoutput.values import json_value
from sparkcdc.sources.postgres.server.attributes import Attribute, TableAttributes


@dataclass(frozen=True)
class Baseline:
    """The catalog as last read for a table (``attributes``), which of its attributes the
    schema in force's columns are (``attnums``, None: not known), and ``known``: attributes
    numbered above it were added after the schema in force's point."""

    attributes: TableAttributes
    attnums: tuple[int, ...] | None
    known: int

    @classmethod
    def first(
        cls, schema: TableSchema, attributes: TableAttributes, columns: Sequence[Column]
    ) -> Baseline:
        """The baseline of ``schema`` read from the catalog with ``attributes`` (``columns``:
        the live attributes as columns): matched where they describe the same columns."""
        live = attributes.live()
        same = len(columns) == len(schema.columns) and all(
            _type(a) == _type(b) and a.name == b.name
            for a, b in zip(columns, schema.columns, strict=True)
        )
        attnums = tuple(a.attnum for a in live) if same else None
        return cls(attributes, attnums, attributes.last())

    def to_json(self) -> JSONObject:
        nums: JSONValue = None if self.attnums is None else [*self.attnums]
        return {"attributes": self.attributes.to_json(), "attnums": nums, "known": self.known}

    @classmethod
    def from_json(cls, value: dict[str, Any]) -> Baseline:
        nums = value.get("attnums")
        return cls(
            TableAttributes.from_json(value["attributes"]),
            None if nums is None else tuple(int(n) for n in nums),
            int(value["known"]),
        )


PgTypes = tuple[tuple[int, int], ...]
"""Each column's type (OID, typmod), in the order of a schema's columns."""


@dataclass(frozen=True)
class TableState:
    """A captured table's schema in force, its baseline, and ``types``: each column's type at
    the schema's point, as the last Relation message gave it (what the schema history keeps)."""

    schema: TableSchema
    baseline: Baseline | None
    types: PgTypes | None = None

    def column_types(self) -> PgTypes | None:
        """``types``, else the baseline's types of the attributes the columns are: exact for a
        baseline read with the schema (the start, a pin); None where it does not say which
        attribute each column is."""
        if self.types is not None:
            return self.types
        baseline = self.baseline
        if baseline is None or baseline.attnums is None:
            return None
        found = [baseline.attributes.by_attnum(n) for n in baseline.attnums]
        return tuple(a.type for a in found if a is not None) if all(found) else None

    def to_json(self) -> JSONObject:
        baseline = None if self.baseline is None else self.baseline.to_json()
        out: JSONObject = {"schema": self.schema.to_json(), "baseline": baseline}
        return out if self.types is None else {**out, "types": [[*t] for t in self.types]}

    @classmethod
    def from_json(cls, value: dict[str, Any]) -> TableState:
        baseline, types = value.get("baseline"), value.get("types")
        return cls(
            TableSchema.from_json(value["schema"]),
            None if baseline is None else Baseline.from_json(baseline),
            None if types is None else tuple((int(o), int(m)) for o, m in types),
        )


@dataclass(frozen=True)
class Judgement:
    """The Relation's columns as the new schema's, what happened to the existing rows, the
    baseline from now on, and what changed (short phrases, for the log and the DDL text)."""

    columns: tuple[Column, ...]
    existing: ExistingRows
    baseline: Baseline | None
    notes: tuple[str, ...] = ()


def judge(
    old: TableSchema,
    baseline: Baseline | None,
    sent: Sequence[RelationColumn],
    built: Sequence[Column],
    now: TableAttributes | None,
) -> Judgement:
    """The effect of the Relation message (``sent``; ``built``: its columns as
    :class:`Column`) on ``old``'s rows, with the catalog ``now`` (module docstring)."""
    if now is None:
        columns = by_name(old, built)
        reason = (
            "the table is no longer in the catalog, so what the change did to its rows "
            "cannot be told"
        )
        return _answer(old, columns, [reason] if columns != old.columns else [], baseline, ())
    nums = _match(baseline, sent, now) if baseline is not None else None
    if baseline is None or nums is None:
        return _unmatched(old, baseline, sent, built, now)
    return _matched(old, baseline, sent, built, now, nums)


def _match(
    baseline: Baseline, sent: Sequence[RelationColumn], now: TableAttributes
) -> tuple[int, ...] | None:
    """The attnums of the Relation's columns, when only one reading fits (module docstring).

    Attnums only grow and a dropped attribute never comes back, so an attribute of the schema
    in force that is alive now was alive at the Relation's point, and the attributes added
    since that the Relation lists are the first ones added; names and types may have changed
    since the Relation's point, so they are not compared."""
    if baseline.attnums is None:
        return None
    state = {a.attnum: a for a in now.attributes}
    alive = [n for n in baseline.attnums if n in state and not state[n].dropped]
    later = [a for a in now.attributes if a.attnum > baseline.known]
    if len(sent) == len(alive):  # the alive ones only: nothing added before the point
        return tuple(alive)
    if len(alive) == len(baseline.attnums) and not any(a.dropped for a in later):
        extra = len(sent) - len(alive)
        if not 0 <= extra <= len(later):
            return None
        return tuple(alive + [a.attnum for a in later[:extra]])
    if not later and len(sent) == len(baseline.attnums):
        return baseline.attnums  # dropped after the Relation's point
    return None


def _matched(
    old: TableSchema,
    baseline: Baseline,
    sent: Sequence[RelationColumn],
    built: Sequence[Column],
    now: TableAttributes,
    nums: tuple[int, ...],
) -> Judgement:
    assert baseline.attnums is not None
    before = {n: i for i, n in enumerate(baseline.attnums)}
    then = {a.attnum: a for a in baseline.attributes.attributes}
    state = {a.attnum: a for a in now.attributes}
    touched = [a.name for a in now.attributes if _touched(a, then.get(a.attnum))]
    columns: list[Column] = []
    fill: dict[str, JSONValue] = {}
    copy: dict[str, str] = {}
    notes: list[str] = []
    reasons: list[str] = []
    if now.storage != baseline.attributes.storage and touched:
        reasons.append(
            f"the table was rewritten while column(s) {', '.join(touched)} changed (a type "
            "conversion or a volatile default), so its rows hold values no log holds"
        )
    for n, given, col in zip(nums, sent, built, strict=True):
        i = before.get(n)
        if i is None:  # added since
            attribute = state[n]
            columns.append(replace(col, nullable=not attribute.not_null))
            value, reason = _fill(attribute, col)
            shown = "" if value is None else f" (rows: {json.dumps(value, ensure_ascii=False)})"
            notes.append(f"{col.name} added{shown}")
            reasons.extend([reason] if reason else [])
            if value is not None:
                fill[col.name] = value
            continue
        was = old.columns[i]
        if given.name != was.name:
            copy[given.name] = was.name
            notes.append(f"{was.name} renamed to {given.name}")
        if _type(col) == _type(was):
            columns.append(replace(was, name=given.name))
            continue
        columns.append(replace(col, nullable=was.nullable))
        notes.append(f"{given.name} {describe(was)} to {describe(col)}")
        change = type_change(was, col)
        if change is not None:
            reasons.append(f"column {given.name}: {change}")
    notes.extend(f"{old.columns[i].name} dropped" for n, i in before.items() if n not in nums)
    added = [n for n in nums if n not in before]
    known = now.last() if reasons else max([baseline.known, *added])
    return _answer(old, tuple(columns), reasons, Baseline(now, nums, known), tuple(notes),
                   ExistingRows(fill=fill, copy=copy))  # fmt: skip


def _unmatched(
    old: TableSchema,
    baseline: Baseline | None,
    sent: Sequence[RelationColumn],
    built: Sequence[Column],
    now: TableAttributes,
) -> Judgement:
    """No exact match: the schema in force stands if the Relation shows it and the catalog
    did not change since the last read; else the table is read again."""
    columns = by_name(old, built)
    quiet = baseline is not None and _unchanged(baseline.attributes, now)
    reasons = [] if columns == old.columns and quiet else [
        "the catalog shows more changes to its columns than the log has reached, so which "
        "column holds which value cannot be told"
    ]  # fmt: skip
    live = now.live()
    view = [(a.name, a.type) for a in live] == [(c.name, _sent_type(c)) for c in sent]
    fresh = Baseline(now, tuple(a.attnum for a in live) if view else None, now.last())
    return _answer(old, columns, reasons, fresh, ())


def _answer(
    old: TableSchema,
    columns: tuple[Column, ...],
    reasons: list[str],
    baseline: Baseline | None,
    notes: tuple[str, ...],
    exact: ExistingRows | None = None,
) -> Judgement:
    if reasons:
        sentence = (
            f"{old.name}: " + "; ".join(reasons) + "; the pipeline reads the table again"
        )  # fmt: skip
        return Judgement(columns, ExistingRows(resnapshot=sentence), baseline, notes)
    return Judgement(columns, exact or ExistingRows(), baseline, notes)


def _fill(attribute: Attribute, col: Column) -> tuple[JSONValue, str | None]:
    """The value every row older than the added column holds (None: null), or why it cannot
    be given."""
    if attribute.unsure:
        return None, f"the partitions hold different values of the added column {col.name}"
    if attribute.missing is None:
        return None, None
    if not col.logical or array_element(col.logical) is not None:
        return None, f"the added column {col.name} has a default of a type that cannot fill rows"
    try:
        return json_value(attribute.missing, col.data_type, col.logical), None
    except (ValueError, OverflowError) as exc:
        return None, f"the default of the added column {col.name} cannot be read ({exc})"


def _touched(now: Attribute, then: Attribute | None) -> bool:
    """Whether a live column's definition changed (or it was added) since the last read; a
    column dropped since holds nothing the replica keeps."""
    return not now.dropped and (then is None or then.version != now.version)


def _unchanged(then: TableAttributes, now: TableAttributes) -> bool:
    before = {a.attnum: a for a in then.attributes}
    return then.storage == now.storage and not any(
        _touched(a, before.get(a.attnum)) for a in now.attributes
    )


def _sent_type(col: RelationColumn) -> tuple[int, int]:
    return col.type_oid, col.typmod


def _type(col: Column) -> Column:
    """The column without what is not its type (name, nullability)."""
    return replace(col, name="", nullable=True)


def by_name(old: TableSchema, built: Sequence[Column]) -> tuple[Column, ...]:
    """The Relation's columns, keeping the schema in force's description of each whose name
    and type are unchanged (its nullability, which the Relation message does not carry) or
    whose type cannot be resolved now (taken as unchanged)."""
    before = {c.name: c for c in old.columns}
    kept = (before.get(c.name) for c in built)
    return tuple(
        k if k is not None and (_type(k) == _type(c) or not c.logical) else c
        for k, c in zip(kept, built, strict=True)
    )
