"""What one schema row does to a replica's columns under ``pipeline.schema_changes``
(:mod:`sparkcdc.core.schema_policy`), written once for every table format.

The plan is a function of the replica's columns as they are and the source's schema after the
change, so a micro-batch replayed after a crash plans nothing new for what it applied already:

- a column of the new schema the replica lacks is added (a new column, or a rename's new name,
  whose values the ``copy`` effect fills), unless its kind's policy is ``ignore``;
- a column whose replica type differs from the new schema's gets the type :func:`type_target`
  decides (widening through the table format, :meth:`.lake.TableFormat.retype`);
- a column the source dropped or renamed away is dropped from the replica at the end of the
  micro-batch (after the effects read it) where the kind's policy is ``evolve`` or
  ``try_evolve``, else kept, null in later rows.

Type widening is the one Delta and Iceberg define (:func:`widens`): integers to wider integers,
float to double, integers to a decimal or double that holds them, a decimal's precision up
without losing integer digits or scale, date to timestamp.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from sparkcdc.core.convert import arrow_schema, decimal_shape
from sparkcdc.core.schema import TableSchema
from sparkcdc.core.schema_policy import FOLLOWING, SchemaChange, SchemaPolicy


class ChangeRefused(ValueError):
    """A schema change its policy does not let through; the text is the sentence."""


@dataclass(frozen=True)
class ReplicaPlan:
    """A schema row's effect on the replica's columns: ``columns`` to have (the current ones
    retyped, the added ones last), ``retyped`` (new types of existing columns, with whether
    ``try_evolve`` decided them: such a one that cannot hold the values is kept instead) and
    ``dropped`` at the end of the micro-batch."""

    columns: tuple[pa.Field, ...]
    retyped: tuple[tuple[pa.Field, bool], ...] = ()
    dropped: tuple[str, ...] = ()


def refuse_changes(table: str, changes: list[SchemaChange], policy: SchemaPolicy, ddl: str) -> None:
    """ChangeRefused naming the first change whose policy is ``exception``."""
    for change in changes:
        if policy.of(change.kind) == "exception":
            raise ChangeRefused(
                f"a schema change of {table} ({change.kind}: {change.what or ddl}) is refused "
                f"by {policy.setting(change.kind)}; the stream stopped before it: to take "
                f"it, set pipeline.schema_changes (or its {change.kind}) to evolve, "
                "try_evolve, lenient or ignore and start the pipeline again"
            )


def plan_replica(
    replica: list[pa.Field], new: TableSchema, changes: list[SchemaChange], policy: SchemaPolicy
) -> ReplicaPlan:
    """The replica's columns after ``changes`` (the schema row's, ``new`` the schema after it)."""
    have = {f.name.lower(): f for f in replica}
    renamed_to = {c.column.lower() for c in changes if c.kind == "rename_column"}
    columns = {f.name.lower(): f for f in replica}
    retyped: list[tuple[pa.Field, bool]] = []
    added: list[pa.Field] = []
    for f in arrow_schema(new):
        found = have.get(f.name.lower())
        if found is None:
            kind = "rename_column" if f.name.lower() in renamed_to else "add_column"
            if policy.of(kind) != "ignore":
                added.append(f)
            continue
        target = type_target(found.type, f.type, policy.of("alter_column_type"))
        if target is None:
            raise ChangeRefused(
                f"column {f.name} of {new.name} changed from {found.type} to {f.type}, and no "
                f"type holds both; {policy.setting('alter_column_type')} keeps the replica's "
                "values: set pipeline.schema_changes.alter_column_type to evolve to convert them"
            )
        if target != found.type:
            field_now = pa.field(found.name, target)
            columns[f.name.lower()] = field_now
            retyped.append((field_now, policy.of("alter_column_type") == "try_evolve"))
    dropped = [
        c.renamed_from or c.column
        for c in changes
        if c.kind in ("drop_column", "rename_column") and policy.of(c.kind) in FOLLOWING
    ]
    new_names = {f.name.lower() for f in arrow_schema(new)}
    gone = tuple(
        have[n.lower()].name for n in dropped if n.lower() in have and n.lower() not in new_names
    )
    kept = tuple(columns.values()) + tuple(added)
    _check_key(new, {f.name.lower() for f in kept}, renamed_to, policy)
    return ReplicaPlan(kept, tuple(retyped), gone)


def _check_key(
    new: TableSchema, kept: set[str], renamed_to: set[str], policy: SchemaPolicy
) -> None:
    """ChangeRefused when a key column of ``new`` is not among the replica's ``kept`` columns:
    the replica merges by the key."""
    for name in new.key:
        if name.lower() not in kept:
            kind = "rename_column" if name.lower() in renamed_to else "add_column"
            raise ChangeRefused(
                f"the key of {new.name} is now ({', '.join(new.key)}), and {policy.setting(kind)} "
                f"leaves column {name} out of its replica, which merges changes by that key; "
                f"set pipeline.schema_changes.{kind} to lenient or evolve"
            )


def type_target(have: pa.DataType, new: pa.DataType, policy: str) -> pa.DataType | None:
    """The replica column's type when the source's becomes ``new`` (the replica's is ``have``)
    under ``policy``; None: no type holds both (``lenient`` stops)."""
    if have == new or policy == "ignore" or policy == "exception":
        return have
    if widens(have, new):
        return new
    if policy in FOLLOWING:
        return new
    if widens(new, have):
        return have  # lenient: the replica's type holds every new value
    return common_type(have, new)


def common_type(a: pa.DataType, b: pa.DataType) -> pa.DataType | None:
    """The least type holding the values of both (lenient's retype): text where either is text,
    a decimal holding both numbers' integer digits and scale; None if there is none (an array
    and a scalar)."""
    if any(pa.types.is_nested(t) for t in (a, b)):
        return None
    if pa.types.is_string(a) or pa.types.is_string(b):
        return pa.string()
    digits = [decimal_shape(t) for t in (a, b)]
    if digits[0] is None or digits[1] is None:
        return None
    whole = max(d[0] for d in digits if d is not None)
    scale = max(d[1] for d in digits if d is not None)
    return pa.decimal128(whole + scale, scale) if whole + scale <= 38 else None


def widens(old: pa.DataType, new: pa.DataType) -> bool:
    """Whether every value of ``old`` is a value of ``new`` (Delta's and Iceberg's type
    widening, module docstring)."""
    if pa.types.is_integer(old) and pa.types.is_integer(new):
        if pa.types.is_signed_integer(old) and pa.types.is_unsigned_integer(new):
            return False
        bits = int(old.bit_width) + (1 if pa.types.is_unsigned_integer(old) and
                                pa.types.is_signed_integer(new) else 0)  # fmt: skip
        return bits <= int(new.bit_width)
    if pa.types.is_integer(old) and pa.types.is_decimal(new):
        digits = decimal_shape(old)
        return digits is not None and int(new.precision - new.scale) >= digits[0]
    if pa.types.is_integer(old) and pa.types.is_float64(new):
        return int(old.bit_width) <= 32
    if pa.types.is_float32(old) and pa.types.is_float64(new):
        return True
    if pa.types.is_decimal(old) and pa.types.is_decimal(new):
        whole = int(new.precision - new.scale) >= int(old.precision - old.scale)
        return whole and int(new.scale) >= int(old.scale)
    if pa.types.is_date(old) and pa.types.is_timestamp(new):
        return bool(new.tz is None)
    return False
