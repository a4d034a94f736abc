"""What a schema change is, by kind, and what ``pipeline.schema_changes`` says to do with it.

The policies are Flink CDC's ``schema.change.behavior``, with its names:

==========  ===========================================================================
exception   any schema change of a captured table stops the stream before its micro-batch
            is written (a new table is not a change: it is created)
evolve      the replica follows the source: columns added, dropped, renamed and retyped
            as the source did; a change the sink cannot make stops the stream
try_evolve  as ``evolve``, but a change the sink cannot make (existing values the new type
            cannot hold) is taken as ``lenient`` takes it, with a warning
lenient     nothing the replica holds is lost: added columns are added, dropped or renamed
            ones stay (null in later rows), a type is widened where the new one holds more,
            kept where it holds less (the default)
ignore      the replica's columns stay as they were created: new columns' values are left
            out, types stay (a value that does not fit stops the stream), a TRUNCATE or DROP
            TABLE leaves the replica's rows
==========  ===========================================================================

A per-kind override (``{add_column: evolve, drop_column: ignore}``) sets the policy of one kind
of change (:data:`CHANGE_KINDS`, Flink's event types). :func:`column_changes` says which kinds
one schema row holds, from the table's schema before and after it and the renames the source
saw (``existing.copy``); a change of a column's default, an index or a table option changes
nothing the replica holds and is no change here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from sparkcdc.core.existing_rows import ExistingRows
from sparkcdc.core.schema import Column, TableSchema

POLICIES = ("exception", "evolve", "try_evolve", "lenient", "ignore")
DEFAULT_POLICY = "lenient"
CHANGE_KINDS = (
    "add_column",
    "drop_column",
    "rename_column",
    "alter_column_type",
    "alter_column_nullability",
    "alter_primary_key",
    "truncate_table",
    "drop_table",
    "rename_table",
)
FOLLOWING = ("evolve", "try_evolve")  # the policies under which the replica follows the source

# the ``s`` row's change kinds (``after.kind``) that are table-level changes
TABLE_KINDS = {"truncate": "truncate_table", "drop": "drop_table", "rename": "rename_table"}


@dataclass(frozen=True)
class SchemaPolicy:
    """``pipeline.schema_changes``: the policy of every kind not in ``kinds``, and those."""

    default: str = DEFAULT_POLICY
    kinds: Mapping[str, str] = field(default_factory=dict)

    def of(self, kind: str) -> str:
        """The policy for a change of ``kind`` (one of :data:`CHANGE_KINDS`)."""
        return self.kinds.get(kind, self.default)

    def setting(self, kind: str) -> str:
        """The setting that decides ``kind``, as a user writes it."""
        if kind in self.kinds:
            return f"pipeline.schema_changes.{kind}: {self.kinds[kind]}"
        return f"pipeline.schema_changes: {self.default}"


@dataclass(frozen=True)
class SchemaChange:
    """One change of a table's schema: its ``kind`` (:data:`CHANGE_KINDS`), the column it is
    about (empty for a table-level one; a rename's new name, ``renamed_from`` its old one) and
    what it did, in words."""

    kind: str
    column: str = ""
    what: str = ""
    renamed_from: str = ""


def column_changes(
    old: TableSchema | None, new: TableSchema, existing: ExistingRows
) -> list[SchemaChange]:
    """The changes from ``old`` to ``new`` (none when ``old`` is unknown: a new table), a
    ``copy`` of ``existing`` being a rename (new name -> old name)."""
    if old is None:
        return []
    before = {c.name.lower(): c for c in old.columns}
    after = {c.name.lower(): c for c in new.columns}
    renamed = {n.lower(): o.lower() for n, o in existing.copy.items() if o.lower() in before}
    found: list[SchemaChange] = []
    for name, column in after.items():
        source = renamed.get(name)
        if source is not None:
            old_name = before[source].name
            what = f"column {old_name} renamed to {column.name}"
            found.append(SchemaChange("rename_column", column.name, what, old_name))
            found += _altered(before[source], column)
        elif name not in before:
            found.append(SchemaChange("add_column", column.name, f"column {column.name} added"))
        else:
            found += _altered(before[name], column)
    moved = set(renamed.values()) - set(after)
    for name, column in before.items():
        if name not in after and name not in moved:
            found.append(SchemaChange("drop_column", column.name, f"column {column.name} dropped"))
    if tuple(k.lower() for k in old.primary_key) != tuple(k.lower() for k in new.primary_key):
        keys = ", ".join(new.primary_key) or "none"
        found.append(SchemaChange("alter_primary_key", "", f"primary key now ({keys})"))
    return found


def _altered(old: Column, new: Column) -> list[SchemaChange]:
    found = []
    if _type_text(old) != _type_text(new):
        what = f"column {new.name}: {_type_text(old)} to {_type_text(new)}"
        found.append(SchemaChange("alter_column_type", new.name, what))
    if old.nullable != new.nullable:
        now = "nullable" if new.nullable else "NOT NULL"
        found.append(SchemaChange("alter_column_nullability", new.name,
                                  f"column {new.name} made {now}"))  # fmt: skip
    return found


def _type_text(c: Column) -> str:
    """The column's type as the source declares it, for comparing and for messages."""
    args = [str(a) for a in (c.precision if c.precision is not None else c.length, c.scale)
            if a is not None]  # fmt: skip
    text = c.data_type + (f"({','.join(args)})" if args else "")
    if c.fsp:
        text += f"({c.fsp})"
    if c.unsigned:
        text += " unsigned"
    if c.values:
        text += "(" + ",".join(c.values) + ")"
    if c.charset:
        text += f" {c.charset}"
    return text
