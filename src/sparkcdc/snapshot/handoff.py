"""The hand-off from the snapshot splits to the log (Flink CDC 2.x, seed 003).

Every split was read exact as of its own high watermark. The log reader therefore starts at the
smallest high watermark, and until the largest one it lets a change through only when the change
lies at or past the high watermark of the split holding its key: anything earlier is already in
that split's rows. An update that moves a row to another key concerns two splits: when both need
it, it passes as it is; when only the old key's split does, it passes as a delete of the old key
(the new key's split holds the row already, perhaps newer); when only the new key's split does,
as an insert of the new key (Debezium, too, emits key changes as a delete and a create). Past
the largest high watermark, and for tables the snapshot did not cover, everything flows.

The hand-off is stored as JSON beside the split results, so a log reader restarted anywhere in
the hand-off range filters exactly as the first one did.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sparkcdc.core.chunk import KeyColumn, KeyValue
from sparkcdc.core.event import OP_CREATE, OP_DELETE, OP_UPDATE, Change
from sparkcdc.core.json_value import JSONObject, json_object
from sparkcdc.core.offset import Offset
from sparkcdc.core.table_name import TableName
from sparkcdc.snapshot.correct import key_text
from sparkcdc.snapshot.dialect import SnapshotDialect
from sparkcdc.snapshot.keyorder import KeyOrder


@dataclass
class TableHandoff:
    """One table: the chunk key, the lower bounds of splits 1..n and each split's high mark."""

    keys: list[KeyColumn]
    bounds: list[KeyValue]
    highs: list[Offset]
    row_key: list[str] = field(default_factory=list)  # the table's key, if not the chunk key

    def to_json(self) -> JSONObject:
        return {
            "keys": [json_object(k.to_json()) for k in self.keys],
            "row_key": [*self.row_key],
            "bounds": [list(b) for b in self.bounds],
            "highs": [h.to_json() for h in self.highs],
        }

    @classmethod
    def from_json(cls, value: dict[str, Any], offsets: type[Offset]) -> TableHandoff:
        return cls(
            [KeyColumn.from_json(k) for k in value["keys"]],
            [tuple(b) for b in value["bounds"]],
            [offsets.from_json(h) for h in value["highs"]],
            list(value.get("row_key", [])),
        )


@dataclass
class Handoff:
    tables: dict[str, TableHandoff] = field(default_factory=dict)

    @property
    def lowest(self) -> Offset | None:
        highs = [h for t in self.tables.values() for h in t.highs]
        return min(highs) if highs else None

    @property
    def highest(self) -> Offset | None:
        highs = [h for t in self.tables.values() for h in t.highs]
        return max(highs) if highs else None

    def save(self, path: str | Path) -> None:
        tmp = Path(f"{path}.tmp")
        tmp.write_text(json.dumps({t: h.to_json() for t, h in self.tables.items()}))
        os.replace(tmp, path)

    @classmethod
    def load(cls, path: str | Path, offsets: type[Offset]) -> Handoff | None:
        """The hand-off saved at ``path`` (None if there is none); ``offsets`` reads its
        watermarks."""
        p = Path(path)
        if not p.exists():
            return None
        raw = json.loads(p.read_text())
        return cls({t: TableHandoff.from_json(v, offsets) for t, v in raw.items()})


class HandoffFilter:
    """A log reader's change filter (:data:`sparkcdc.sources.port.ChangeFilter`): drops the
    changes the splits already hold."""

    def __init__(
        self,
        handoff: Handoff,
        dialect: Callable[[], SnapshotDialect],
    ) -> None:
        self.handoff = handoff
        self._dialect_factory = dialect
        self._dialect: SnapshotDialect | None = None
        self.until = handoff.highest
        self._orders: dict[str, KeyOrder] = {}
        self.dropped = 0

    def __call__(self, db: str, table: str, at: Offset, changes: list[Change]) -> list[Change]:
        """The changes of ``db.table`` in the log record at ``at`` that the splits lack."""
        if self.until is None or at >= self.until:
            return changes
        name = str(TableName(db, table))
        th = self.handoff.tables.get(name)
        if th is None:
            return changes
        order = self._order(name, th.keys)
        olds: list[KeyValue | None] = []
        news: list[KeyValue | None] = []
        for op, _key, before, after in changes:
            olds.append(_chunk_key(before, th.keys) if op in (OP_UPDATE, OP_DELETE) else None)
            news.append(_chunk_key(after, th.keys) if op != OP_DELETE else None)
        sides = olds + news
        probes = [v for v in sides if v is not None]
        where = iter(order.locate(probes, th.bounds))
        # per side: is this change at or past the high mark of the split holding that key?
        needed = [v is not None and at >= th.highs[next(where)] for v in sides]
        kept: list[Change] = []
        for i, change in enumerate(changes):
            need_old, need_new = needed[i], needed[len(changes) + i]
            if need_old and need_new:
                kept.append(change)
            elif need_old or need_new:
                kept.append(_one_side(change, th, keep_old=need_old))
        self.dropped += len(changes) - len(kept)
        return kept

    def _order(self, name: str, keys: Sequence[KeyColumn]) -> KeyOrder:
        order = self._orders.get(name)
        if order is None:
            numeric = all(k.numeric for k in keys)
            if not numeric and self._dialect is None:
                self._dialect = self._dialect_factory()
            order = self._orders[name] = KeyOrder(keys, None if numeric else self._dialect)
        return order

    def close(self) -> None:
        if self._dialect is not None:
            self._dialect.close()
            self._dialect = None


def _one_side(change: Change, th: TableHandoff, keep_old: bool) -> Change:
    """The part of a change one split needs: a key-moving update becomes the delete of the old
    key or the insert of the new one (other changes touch one key and pass whole)."""
    op, key, before, after = change
    if op != OP_UPDATE or before is None or after is None:
        return change
    names = th.row_key or [k.name for k in th.keys]
    old_row, new_row = json.loads(before), json.loads(after)
    old_key = [old_row.get(n) for n in names]
    if old_key == [new_row.get(n) for n in names]:
        return change  # the row keeps its key: only the chunk key moved
    if keep_old:
        return (OP_DELETE, key_text(old_key), before, None)
    return (OP_CREATE, key, None, after)


def _chunk_key(image: str | None, keys: Sequence[KeyColumn]) -> KeyValue | None:
    if image is None:
        return None
    row = json.loads(image)
    return tuple(row.get(k.name) for k in keys)
