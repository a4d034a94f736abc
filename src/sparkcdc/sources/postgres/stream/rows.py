"""The changes of consecutive pgoutput row messages of one table as typed images in Arrow.

pgoutput sends each value as text; :class:`TextRows` keeps a run of one table's changes of one
kind as their texts (one list per row, None for NULL) and turns each column into Arrow at once
when the item is built (:func:`~sparkcdc.sources.postgres.pgoutput.values.to_arrow`), so no
Python object is made per value beyond the text pgoutput's decoding made.

An update may leave a TOASTed value out of the log (pgoutput's 'u'). Its after row is then a
:class:`MarkedRow` naming those columns; the reader sends such a change with a JSON after image
listing them under :data:`UNCHANGED_KEY` instead of their values, and the Delta sink fills them
from the key's change before in its micro-batch or from the replica
(:mod:`sparkcdc.sinks.changes.unchanged`).
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from sparkcdc.core.images import ColumnarRows
from sparkcdc.core.schema import Column
from sparkcdc.sources.postgres.pgoutput.values import to_arrow

TextRow = list[bytes | None]


class MarkedRow(list[bytes | None]):
    """An after row whose columns ``unchanged`` (indices) hold TOASTed values the change left
    out of the log: their texts here are None, which is no value; the row never goes typed."""

    __slots__ = ("unchanged",)

    def __init__(self, texts: TextRow, unchanged: tuple[int, ...]) -> None:
        super().__init__(texts)
        self.unchanged = unchanged


class TextRows(ColumnarRows):
    """Changes of one kind ``op`` of one table: key texts, before and after rows of texts
    (None where the change has no such image)."""

    __slots__ = ("op", "keys", "columns", "befores", "afters")

    def __init__(
        self,
        op: str,
        columns: tuple[Column, ...],
        keys: list[str | None] | None = None,
        befores: list[TextRow | None] | None = None,
        afters: list[TextRow | None] | None = None,
    ) -> None:
        self.op, self.columns = op, columns
        self.keys: list[str | None] = keys if keys is not None else []
        self.befores: list[TextRow | None] = befores if befores is not None else []
        self.afters: list[TextRow | None] = afters if afters is not None else []

    def add(self, key: str | None, before: TextRow | None, after: TextRow | None) -> None:
        self.keys.append(key)
        self.befores.append(before)
        self.afters.append(after)

    def __len__(self) -> int:
        return len(self.keys)

    def marked(self) -> list[int]:
        """The changes whose after row is a :class:`MarkedRow`."""
        return [i for i, row in enumerate(self.afters) if type(row) is MarkedRow]

    def part(self, lo: int, hi: int) -> TextRows:
        return TextRows(
            self.op, self.columns, self.keys[lo:hi], self.befores[lo:hi], self.afters[lo:hi]
        )

    def empty(self) -> TextRows:
        return TextRows(self.op, self.columns)

    def owned(self) -> TextRows:
        return self

    def extend(self, other: ColumnarRows) -> None:
        assert isinstance(other, TextRows)
        self.keys += other.keys
        self.befores += other.befores
        self.afters += other.afters

    @property
    def nbytes(self) -> int:
        return sum(len(v) for row in self.afters if row for v in row if v is not None) + sum(
            len(v) for row in self.befores if row for v in row if v is not None
        )

    def structs(self, fields: list[pa.Field]) -> tuple[pa.StructArray, pa.StructArray]:
        return _struct(self.befores, self.columns, fields), _struct(
            self.afters, self.columns, fields
        )


def _struct(
    rows: list[TextRow | None], columns: tuple[Column, ...], fields: list[pa.Field]
) -> pa.StructArray:
    """The rows as a struct of ``fields`` (a column these rows lack: nulls; no row: null)."""
    if rows.count(None) == len(rows):  # inserts' before images, most updates' too
        return _all_null(len(rows), fields)
    absent = [None] * len(columns)
    by_column = list(zip(*[absent if row is None else row for row in rows], strict=True))
    by_name = {c.name: i for i, c in enumerate(columns)}
    arrays = []
    for f in fields:
        i = by_name.get(f.name)
        if i is None or not by_column:
            arrays.append(pa.nulls(len(rows), f.type))
            continue
        values = to_arrow(by_column[i], columns[i])
        arrays.append(values if values.type == f.type else pc.cast(values, f.type))
    mask = pa.array([row is None for row in rows], pa.bool_())
    return pa.StructArray.from_arrays(arrays, fields=fields, mask=mask)


def _all_null(n: int, fields: list[pa.Field]) -> pa.StructArray:
    nulls = pa.nulls(n, pa.struct(fields))
    assert isinstance(nulls, pa.StructArray)
    return nulls
