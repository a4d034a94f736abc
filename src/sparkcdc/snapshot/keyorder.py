"""Which chunk holds a key: numeric keys are ordered in Python, all others by the database.

Integer and DECIMAL keys order the same way everywhere, so bisecting the chunk bounds in Python
is exact. Strings follow the column's collation (``'abc' = 'ABC'`` under ``_ci``), binary and
temporal keys their own rules: those are located by asking the database
(:meth:`SnapshotDialect.locate`), never by comparing in Python.
"""

from __future__ import annotations

import bisect
import json
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

from sparkcdc.core.chunk import KeyColumn, KeyValue, Split
from sparkcdc.snapshot.dialect import SnapshotDialect


class KeyOrder:
    """Locates chunk-key values among ascending split bounds."""

    def __init__(self, keys: Sequence[KeyColumn], dialect: SnapshotDialect | None) -> None:
        self.keys = list(keys)
        self.dialect = dialect
        self.numeric = all(k.numeric for k in self.keys)
        if not self.numeric and dialect is None:
            raise ValueError("non-numeric chunk keys are compared by the database: give a dialect")

    def _py(self, value: KeyValue) -> tuple[Any, ...]:
        return tuple(
            None if v is None else int(v) if k.integer else Decimal(v)
            for k, v in zip(self.keys, value, strict=True)
        )

    def locate(self, values: Sequence[KeyValue], bounds: Sequence[KeyValue]) -> list[int]:
        """For each value, how many of the ascending ``bounds`` are ``<=`` it."""
        if not values:
            return []
        if not bounds:
            return [0] * len(values)
        if self.numeric:
            ordered = [self._py(b) for b in bounds]
            return [bisect.bisect_right(ordered, self._py(v)) for v in values]
        assert self.dialect is not None
        unique = list({_text(v): v for v in values}.values())
        located = self.dialect.locate(self.keys, unique, bounds)
        found = dict(zip(map(_text, unique), located, strict=True))
        return [found[_text(v)] for v in values]

    def within(self, split: Split, values: Sequence[KeyValue]) -> list[bool]:
        """Whether each value lies in ``split.lo <= value < split.hi``."""
        bounds = [b for b in (split.lo, split.hi) if b is not None]
        want = 0 if split.lo is None else 1
        return [n == want for n in self.locate(values, bounds)]


def _text(value: KeyValue) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
