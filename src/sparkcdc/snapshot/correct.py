"""Correcting a chunk with the log between its watermarks (Flink CDC 2.x, seed 003; DBLog, 002).

The chunk was read at some moment inside ``[low, high)``. Replaying every change of that window
whose chunk key lies in the split's range onto the chunk, in log order, gives the chunk exactly
as it was at ``high``: a change already visible to the SELECT is replayed onto its own result,
which is harmless for row images (an insert or update sets the whole row, a delete removes it).
Rows are matched by the table's key (the chunk key when the table has none); a key update
removes the old key from the chunk when it was inside, and adds the new one when it is.

A chunk is an Arrow table whose ``key`` column holds the key JSON text of each row; its other
columns are either the row image (``after``, JSON text: :data:`CHUNK_SCHEMA`) or the table's
typed columns. The corrector only decides, per key the window touched, whether the key ends up
absent or with which row image; ``rows_of`` turns those images into rows of the chunk's shape
(:func:`image_rows` or :func:`typed_rows`), so the chunk itself is never taken apart row by row.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from sparkcdc.core.chunk import KeyValue
from sparkcdc.core.convert import arrow_schema, decode_images
from sparkcdc.core.event import OP_DELETE, OP_UPDATE, Change
from sparkcdc.core.schema import TableSchema

Within = Callable[[Sequence[KeyValue]], list[bool]]
RowsOf = Callable[[list[str], list[str]], pa.Table]
"""(key texts, row images) -> rows in the chunk's shape."""
CHUNK_SCHEMA = pa.schema([("key", pa.string()), ("after", pa.string())])


def image_rows(keys: list[str], images: list[str]) -> pa.Table:
    """Rows of a :data:`CHUNK_SCHEMA` chunk (key and image texts)."""
    return pa.table([pa.array(keys, pa.string()), pa.array(images, pa.string())], CHUNK_SCHEMA)


def typed_chunk_schema(schema: TableSchema) -> pa.Schema:
    """The shape of a typed chunk: ``key`` (JSON text), then every column of ``schema`` in the
    Arrow type of its logical type."""
    return pa.schema([("key", pa.string()), *arrow_schema(schema)])


def typed_rows(schema: TableSchema) -> RowsOf:
    """Rows of a typed chunk: ``key`` and the table's columns, decoded as the sink decodes."""

    def rows_of(keys: list[str], images: list[str]) -> pa.Table:
        typed = decode_images(pa.array(images, pa.string()), schema)
        names = ["key", *(c.name for c in schema.columns)]
        return pa.Table.from_arrays([pa.array(keys, pa.string()), *typed.flatten()], names)

    return rows_of


def key_text(values: Sequence[object]) -> str:
    """The key JSON text as the log reader writes it."""
    return json.dumps(list(values), separators=(",", ":"), ensure_ascii=False)


class ChunkCorrector:
    """Applies window changes to one chunk; ``within`` tells which chunk keys are in range,
    ``rows_of`` builds chunk rows from images (default: :func:`image_rows`)."""

    def __init__(
        self,
        row_key: Sequence[str],
        chunk_key: Sequence[str],
        within: Within,
        rows_of: RowsOf = image_rows,
    ) -> None:
        self.row_key = list(row_key)
        self.chunk_key = list(chunk_key)
        self.within = within
        self.rows_of = rows_of

    def apply(self, chunk: pa.Table, changes: Sequence[Change]) -> pa.Table:
        """The chunk as of the window's end."""
        if not changes:
            return chunk
        # per change: (row key, chunk key, image) of the old and of the new row
        olds: list[tuple[str, KeyValue, str] | None] = []
        news: list[tuple[str, KeyValue, str] | None] = []
        for op, _key, before, after in changes:
            old = new = None
            if op in (OP_UPDATE, OP_DELETE) and before is not None:
                old = self._keys(before)
            if op != OP_DELETE and after is not None:
                new = self._keys(after)
            olds.append(old)
            news.append(new)
        probes = [x[1] for x in olds + news if x is not None]
        inside = dict(zip(map(key_text, probes), self.within(probes), strict=True))
        final: dict[str, str | None] = {}  # key -> its image at the end, None: not in the chunk
        for old, new in zip(olds, news, strict=True):
            if old is not None and inside[key_text(old[1])]:
                final[old[0]] = None
            if new is not None:
                final[new[0]] = new[2] if inside[key_text(new[1])] else None
        return self._settle(chunk, final)

    def _settle(self, chunk: pa.Table, final: dict[str, str | None]) -> pa.Table:
        """``chunk`` without the keys in ``final``, plus those whose final image is a row."""
        touched = pa.array(list(final), pa.string())
        kept = chunk.filter(pc.invert(pc.is_in(chunk.column("key"), touched)))
        present = [(k, image) for k, image in final.items() if image is not None]
        if not present:
            return kept
        added = self.rows_of([k for k, _ in present], [image for _, image in present])
        return pa.concat_tables([kept, added.cast(kept.schema)])

    def rewind(self, chunk: pa.Table, changes: Sequence[Change]) -> pa.Table:
        """The chunk as of the window's start (see the module docstring)."""
        if not changes:
            return chunk
        first: dict[str, tuple[str, KeyValue, str] | None] = {}
        for op, _key, before, after in changes:
            if op in (OP_UPDATE, OP_DELETE) and before is not None:
                old = self._keys(before)
                first.setdefault(old[0], old)
            if op != OP_DELETE and after is not None:
                first.setdefault(self._keys(after)[0], None)
        present = [v for v in first.values() if v is not None]
        inside = self.within([v[1] for v in present])
        final: dict[str, str | None] = dict.fromkeys(first)
        for value, keep in zip(present, inside, strict=True):
            if keep:
                final[value[0]] = value[2]
        return self._settle(chunk, final)

    def _keys(self, image: str) -> tuple[str, KeyValue, str]:
        row = json.loads(image)
        chunk_value = tuple(row.get(c) for c in self.chunk_key)
        names = self.row_key or self.chunk_key
        return key_text([row.get(c) for c in names]), chunk_value, image
