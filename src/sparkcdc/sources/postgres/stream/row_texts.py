"""The row texts and JSON images of pgoutput's row messages: each value's text as sent, a
TOASTed value an update left out taken from the old row or marked for the sink to fill
(:data:`~sparkcdc.core.images.UNCHANGED_KEY`), the key's JSON, and JSON row images byte for
byte the chunk reads' (:mod:`sparkcdc.sources.postgres.chunks.images`)."""

from __future__ import annotations

import json
from typing import cast

from sparkcdc.core.errors import SourceError
from sparkcdc.core.event import Change
from sparkcdc.core.images import UNCHANGED_KEY
from sparkcdc.core.schema import TableSchema
from sparkcdc.sources.postgres.pgoutput import messages as pm
from sparkcdc.sources.postgres.pgoutput.values import json_value
from sparkcdc.sources.postgres.stream.rows import MarkedRow, TextRow, TextRows
from sparkcdc.sources.postgres.stream.tables import Captured


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def row_texts(
    message: pm.Insert | pm.Update | pm.Delete, found: Captured
) -> tuple[TextRow | None, TextRow | None]:
    """The before and after rows of texts. A TOASTed value an update left alone and out of
    its new row comes from the old row where that holds it (REPLICA IDENTITY FULL, or a key
    column); else the after row is a :class:`~.rows.MarkedRow` naming it, for the sink to
    fill from the replica."""
    old = None if isinstance(message, pm.Insert) else message.old
    new = None if isinstance(message, pm.Delete) else message.new
    width = len(found.schema.columns)
    for row in (old, new):
        if row is not None and len(row) != width:
            raise SourceError(
                f"pgoutput sent {len(row)} values for the {width} columns of "
                f"{found.schema.name}; the stream stops rather than guess which is which."
            )
    before = None if old is None else _texts(old, found)
    if new is None:
        return before, None
    if _plain(new):
        return before, cast(TextRow, new)
    after: TextRow = []
    left: list[int] = []
    for i, value in enumerate(new):
        if value is pm.UNCHANGED:
            value = _held(old, i)
            if value is None:
                left.append(i)
        after.append(_text(value, found, i))
    return before, (MarkedRow(after, tuple(left)) if left else after)


def _plain(row: list[pm.TupleValue]) -> bool:
    """Whether every value of ``row`` is known to be a text or NULL (decoding found it so;
    other rows are looked at value by value)."""
    return type(row) is pm.TextTuple


def _texts(row: list[pm.TupleValue], found: Captured) -> TextRow:
    if _plain(row):
        return cast(TextRow, row)
    return [_text(v, found, i) for i, v in enumerate(row)]


def _text(value: pm.TupleValue, found: Captured, i: int) -> bytes | None:
    """A value's text as sent (None: NULL); a value without one stops the stream."""
    if value is None or isinstance(value, bytes):
        return value
    column = found.schema.columns[i].name
    if value is pm.UNCHANGED:  # PostgreSQL logs an old row's TOASTed values whole
        sent = "without its value in an old row, which PostgreSQL never sends"
    else:
        sent = "in binary, which sparkcdc never asks for"
    raise SourceError(
        f"pgoutput sent column {column} of {found.schema.name} {sent}; the stream stops rather "
        "than guess."
    )


def _held(old: list[pm.TupleValue] | None, i: int) -> bytes | None:
    """The old row's text of column ``i`` where it holds one: REPLICA IDENTITY FULL logs the
    whole old row, and a key column's value is logged when the key is TOASTed."""
    value = None if old is None else old[i]
    return value if isinstance(value, bytes) else None


def stretches(n: int, marked: list[int]) -> list[tuple[int, int, bool]]:
    """Changes ``0 .. n - 1`` as consecutive stretches ``(lo, hi, marked)`` of changes all in
    ``marked`` or all not."""
    if not marked:
        return [(0, n, False)]
    inside = set(marked)
    out, lo = [], 0
    for i in range(1, n + 1):
        if i == n or (i in inside) != (lo in inside):
            out.append((lo, i, lo in inside))
            lo = i
    return out


def json_changes(rows: TextRows, schema: TableSchema) -> list[Change]:
    """The changes of ``rows`` with JSON row images."""
    return [
        (rows.op, key, json_image(b, schema), json_image(a, schema))
        for key, b, a in zip(rows.keys, rows.befores, rows.afters, strict=True)
    ]


def key_text(row: TextRow, found: Captured) -> str:
    """The JSON array of the row's key values (integers: their text as it came)."""
    if found.integer_key:
        texts = [row[i] for i in found.key_index]
        if None not in texts:
            return "[" + b",".join(texts).decode() + "]"  # type: ignore[arg-type]
    columns = found.schema.columns
    return _json(
        [
            json_value(None if row[i] is None else row[i].decode(), columns[i].data_type,  # type: ignore[union-attr]
                       columns[i].logical)
            for i in found.key_index
        ]
    )  # fmt: skip


def json_image(row: TextRow | None, schema: TableSchema) -> str | None:
    """A row of texts as its JSON row image (:mod:`sparkcdc.core.types`); a
    :class:`~.rows.MarkedRow`'s lists the columns it lacks under :data:`~.rows.UNCHANGED_KEY`."""
    if row is None:
        return None
    image: dict[str, object] = {
        c.name: json_value(None if v is None else v.decode(), c.data_type, c.logical)
        for c, v in zip(schema.columns, row, strict=True)
    }
    if type(row) is MarkedRow:  # the columns left out, listed first, and no value of theirs
        left = [schema.columns[i].name for i in row.unchanged]
        image = {UNCHANGED_KEY: left, **{k: v for k, v in image.items() if k not in left}}
    return _json(image)
