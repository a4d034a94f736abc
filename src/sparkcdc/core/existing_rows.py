"""What a schema change does to the rows a table already holds, as the source saw it.

Some DDL changes values of existing rows at the source without writing a row change to the log:
``ADD COLUMN … DEFAULT 7`` gives every existing row 7, ``RENAME COLUMN a TO b`` moves the values
to ``b``, ``MODIFY m DECIMAL(10,1)`` rounds them, a volatile default (``now()``) gives each row its
own value. A source that sees such a change says so in the ``s`` row's change JSON under
``"existing"``, so the replica can follow without a row event:

========== ===================================================================================
fill       ``{column: value}``: every row that existed at the DDL holds ``value`` (the source's
           JSON row-image value of the new schema's column, as :mod:`sparkcdc.core.types`
           writes it) in that column: a constant default, or a NOT NULL column's implicit one
copy       ``{new column: old column}``: every such row holds the old column's value in the new
           one (a rename); the old column's value is the one before the DDL
nulls      ``{column: value}``: every such row whose column is null holds ``value`` (MySQL
           outside strict mode turns the NULLs of a column made NOT NULL into its implicit
           default); applied after ``copy``
resnapshot a sentence: the values cannot be computed from the log (a volatile or expression
           default, a conversion that rounds or truncates, a charset change, a generated
           column); the pipeline reads the table again with an incremental snapshot while the
           stream goes on
========== ===================================================================================

An empty :class:`ExistingRows` (the default) means the DDL leaves existing values as they are.
A column new to the table's schema that neither ``fill`` nor ``copy`` names is null in every
existing row (a sink clears what it may still hold of an earlier column of that name). Fill values
are scalars: a source says ``resnapshot`` for an array default.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sparkcdc.core.json_value import JSONObject, JSONValue

"""A column's value in a JSON row image (:mod:`sparkcdc.core.types`, last column)."""


@dataclass(frozen=True)
class ExistingRows:
    """How a schema change rewrites the values of the rows that existed before it."""

    fill: dict[str, JSONValue] = field(default_factory=dict)
    copy: dict[str, str] = field(default_factory=dict)
    resnapshot: str | None = None
    nulls: dict[str, JSONValue] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.fill or self.copy or self.resnapshot or self.nulls)

    def to_json(self) -> JSONObject:
        out: JSONObject = {}
        if self.fill:
            out["fill"] = dict(self.fill)
        if self.copy:
            copy: JSONObject = {**self.copy}
            out["copy"] = copy
        if self.resnapshot:
            out["resnapshot"] = self.resnapshot
        if self.nulls:
            out["nulls"] = dict(self.nulls)
        return out

    @classmethod
    def from_json(cls, value: dict[str, Any] | None) -> ExistingRows:
        if not value:
            return cls()
        return cls(
            fill=dict(value.get("fill", {})),
            copy={str(k): str(v) for k, v in value.get("copy", {}).items()},
            resnapshot=value.get("resnapshot") or None,
            nulls=dict(value.get("nulls", {})),
        )

    @classmethod
    def of_change(cls, change: dict[str, Any]) -> ExistingRows:
        """The existing-rows effect carried by an ``s`` row's change JSON (``after``)."""
        return cls.from_json(change.get("existing"))
