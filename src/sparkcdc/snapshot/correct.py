"""Correcting a chunk with the log between its watermarks (Flink CDC 2.x, seed 003; DBLog, 002).

The chunk was read at some moment inside ``[low, high)``. Replaying every change of that window
whose chunk key lies in the split's range onto the chunk, in log order, gives the chunk exactly
as it was at ``high``: a change already visible to the SELECT is replayed onto its own result,
which is harmless for row images (an insert or update sets the whole row, a delete removes it).
Rows are matched by the table's key (the chunk key when the table has none); a key update
removes the old key from the chunk when it was inside, and adds the new one when it is.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

import pyarrow as pa

from sparkcdc.core.chunk import KeyValue
from sparkcdc.core.event import OP_DELETE, OP_UPDATE, Change

Within = Callable[[Sequence[KeyValue]], list[bool]]


def key_text(values: Sequence[object]) -> str:
    """The key JSON text as the log reader writes it."""
    return json.dumps(list(values), separators=(",", ":"), ensure_ascii=False)


class ChunkCorrector:
    """Applies window changes to one chunk; ``within`` tells which chunk keys are in range."""

    def __init__(self, row_key: Sequence[str], chunk_key: Sequence[str], within: Within) -> None:
        self.row_key = list(row_key)
        self.chunk_key = list(chunk_key)
        self.within = within

    def apply(self, chunk: pa.Table, changes: Sequence[Change]) -> pa.Table:
        """The chunk (``key``, ``after`` text columns) as of the window's end."""
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
        rows = self._rows(chunk)
        for old, new in zip(olds, news, strict=True):
            if old is not None and inside[key_text(old[1])]:
                rows.pop(old[0], None)
            if new is not None:
                if inside[key_text(new[1])]:
                    rows[new[0]] = new[2]
                else:
                    rows.pop(new[0], None)
        return _table(rows)

    @staticmethod
    def _rows(chunk: pa.Table) -> dict[str, str]:
        keys, afters = chunk.column("key").to_pylist(), chunk.column("after").to_pylist()
        return dict(zip(keys, afters, strict=True))

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
        rows = self._rows(chunk)
        for key in first:
            rows.pop(key, None)
        for value, keep in zip(present, inside, strict=True):
            if keep:
                rows[value[0]] = value[2]
        return _table(rows)

    def _keys(self, image: str) -> tuple[str, KeyValue, str]:
        row = json.loads(image)
        chunk_value = tuple(row.get(c) for c in self.chunk_key)
        names = self.row_key or self.chunk_key
        return key_text([row.get(c) for c in names]), chunk_value, image


CHUNK_SCHEMA = pa.schema([("key", pa.string()), ("after", pa.string())])


def _table(rows: dict[str, str]) -> pa.Table:
    return pa.table(
        [pa.array(list(rows), pa.string()), pa.array(list(rows.values()), pa.string())],
        schema=CHUNK_SCHEMA,
    )
