"""What one ALTER TABLE does to the rows a MySQL/MariaDB table already holds.

:class:`RowEffects` follows the statement clause by clause (the server applies them in order:
``RENAME COLUMN a TO b, ADD COLUMN a …`` swaps), keeping for every column where an existing
row's value comes from after it: an old column (kept, renamed, retyped), a constant (an added
column's DEFAULT literal or implicit default), or nothing that can be computed. At the end each
column of the new schema is judged against the old (:meth:`RowEffects.result`):

=======================================  =================================================
ADD COLUMN … DEFAULT <literal>           fill with the literal (:mod:`.defaults`)
ADD COLUMN … NOT NULL, no DEFAULT        fill with the implicit default (0, '', the first
                                         ENUM member …)
ADD COLUMN nullable, or DEFAULT NULL     nothing (the column is null in every row)
DEFAULT CURRENT_TIMESTAMP, (expr),       resnapshot
uuid(); AUTO_INCREMENT; a generated
column; TIMESTAMP without NULL/DEFAULT
RENAME COLUMN, CHANGE a b <type>         copy (the type change judged as below)
MODIFY/CHANGE/CONVERT TO a type that     nothing (:func:`~sparkcdc.core.type_change.
keeps every value                        type_change`)
… that may round, truncate or convert    resnapshot
NULL -> NOT NULL                         nulls: the implicit default (outside strict mode
                                         the server turns NULLs into it)
=======================================  =================================================

A column first made AUTO_INCREMENT by MODIFY keeps its values here, though the server numbers
rows holding 0 or NULL in it (the key column being rarely such).
"""

from __future__ import annotations

from dataclasses import dataclass

from sparkcdc.core.existing_rows import ExistingRows
from sparkcdc.core.json_value import JSONValue
from sparkcdc.core.schema import Column, TableSchema
from sparkcdc.core.type_change import type_change
from sparkcdc.sources.mysql.ddl.statements import ColumnDef
from sparkcdc.sources.mysql.schema.defaults import NotExact, implicit_value, literal_value


@dataclass(frozen=True)
class Origin:
    """Where an existing row's value of one column comes from: the ``old`` column (as it was
    before the statement), else the ``value`` of a column ``added`` by the statement, else
    nothing that can be computed (``reason``)."""

    old: Column | None = None
    added: Column | None = None
    value: JSONValue = None
    reason: str | None = None


class RowEffects:
    """The existing-rows effect of one ALTER TABLE on ``old`` (see the module docstring)."""

    def __init__(self, old: TableSchema) -> None:
        self.old = old
        self.origins = {c.name.lower(): Origin(old=c) for c in old.columns}

    def added(self, d: ColumnDef, col: Column) -> None:
        self.origins[col.name.lower()] = _new_column(d, col)

    def redefined(self, old_name: str, d: ColumnDef, col: Column) -> None:
        """MODIFY / CHANGE ``old_name`` into ``col`` (declared as ``d``)."""
        origin = self.origins.pop(old_name.lower(), Origin())
        if d.generated:
            origin = Origin(reason=f"column {col.name} is generated: every row is computed again")
        self.origins[col.name.lower()] = origin

    def dropped(self, name: str) -> None:
        self.origins.pop(name.lower(), None)

    def renamed(self, old_name: str, new_name: str) -> None:
        self.origins[new_name.lower()] = self.origins.pop(old_name.lower(), Origin())

    def result(self, new: TableSchema) -> ExistingRows:
        """What the statement did to the existing rows, column by column of ``new``."""
        fill: dict[str, JSONValue] = {}
        copy: dict[str, str] = {}
        nulls: dict[str, JSONValue] = {}
        reasons: list[str] = []
        for col in new.columns:
            origin = self.origins.get(col.name.lower(), Origin())
            was = origin.old or origin.added
            why = origin.reason or (None if was is None else type_change(was, col))
            if why is not None:
                reasons.append(why if origin.reason else f"column {col.name}: {why}")
            elif origin.added is not None and origin.value is not None:
                fill[col.name] = origin.value
            elif origin.old is not None:
                if origin.old.name.lower() != col.name.lower():
                    copy[col.name] = origin.old.name
                if origin.old.nullable and not col.nullable:
                    try:
                        value = implicit_value(col, added=False)
                    except NotExact as exc:
                        reasons.append(f"column {col.name} made NOT NULL: {exc}")
                        continue
                    if value is not None:
                        nulls[col.name] = value
        resnapshot = "; ".join(reasons) if reasons else None
        return ExistingRows(fill=fill, copy=copy, resnapshot=resnapshot, nulls=nulls)


def _new_column(d: ColumnDef, col: Column) -> Origin:
    """Where the values of column ``col`` (declared as ``d``) added to existing rows come from."""
    name = col.name
    if d.generated:
        return Origin(reason=f"column {name} is generated: its value is computed for every row")
    if d.auto_increment or d.type_name == "serial":
        return Origin(reason=f"column {name} is AUTO_INCREMENT: every row is numbered")
    try:
        if d.default is not None:
            return Origin(added=col, value=literal_value(col, d.default))
        if not col.nullable:
            return Origin(added=col, value=implicit_value(col, added=True))
    except NotExact as exc:
        return Origin(reason=f"column {name}: {exc}")
    if col.data_type == "timestamp" and d.nullable is None:
        return Origin(reason=f"column {name} is a TIMESTAMP without NULL or DEFAULT, whose value "
                      "depends on explicit_defaults_for_timestamp")  # fmt: skip
    return Origin(added=col)
