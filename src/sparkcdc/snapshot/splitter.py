"""The chunk splitter: a table's key space cut into splits, one at a time (Flink CDC 2.x, seed 003).

Two ways to find the next chunk after ``lo`` (the previous chunk's ``hi``):

- **even**, by arithmetic, for a single integer key spread evenly enough: with
  ``factor = (max - min + 1) / rows`` between ``distribution_factor_lower`` and ``_upper``, each
  chunk spans ``chunk_size * factor`` key values (the *dynamic chunk size*). A chunk that still
  holds more than twice ``chunk_size`` rows (skew inside the bounds) is cut short the uneven way.
- **uneven**, by query: ``hi`` is the key ``chunk_size`` rows past ``lo`` in key order
  (:meth:`SnapshotDialect.key_after`), so every chunk holds ``chunk_size`` rows. Composite,
  string, temporal and skewed keys are cut this way; the database orders them.

Splits are made lazily, a micro-batch's worth at a time, and the state between calls is a small
frozen value, :class:`SplitterState` (it travels in the stream offset:
:mod:`sparkcdc.spark.offsets`). When the even walk passes the maximum key seen at the start, the
splitter goes on the uneven way from there, so rows inserted beyond it while the snapshot runs
fill bounded chunks; only when fewer than ``chunk_size`` rows remain does the last split stay
open-ended (``hi`` None). The first split has no lower bound, so keys inserted below the minimum
are covered too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from sparkcdc.config.model import SnapshotConfig
from sparkcdc.core.chunk import KeyColumn, KeyValue, Split
from sparkcdc.core.json_value import JSONObject
from sparkcdc.core.table_name import TableName
from sparkcdc.snapshot.dialect import SnapshotDialect


@dataclass(frozen=True)
class SplitterSettings:
    chunk_size: int
    distribution_factor_lower: float
    distribution_factor_upper: float

    @classmethod
    def of(cls, snapshot: SnapshotConfig) -> SplitterSettings:
        return cls(
            snapshot.chunk_size,
            snapshot.distribution_factor_lower,
            snapshot.distribution_factor_upper,
        )


Mode = Literal["even", "uneven"]


@dataclass(frozen=True)
class SplitterState:
    """Where the splitter of one table is: the next split's ``index`` and lower bound ``lo``,
    whether the last split was made, the way the next chunk is found (``even``: from ``min`` by
    ``step`` up to ``max``), and the table's row count and split estimate at the start."""

    index: int = 0
    lo: KeyValue | None = None
    done: bool = False
    mode: Mode = "uneven"
    rows: int = 0
    estimate: int = 1
    min: int | None = None
    max: int | None = None
    step: int | None = None

    def to_json(self) -> JSONObject:
        return {
            "index": self.index,
            "lo": None if self.lo is None else list(self.lo),
            "done": self.done,
            "mode": self.mode,
            "rows": self.rows,
            "estimate": self.estimate,
            "min": self.min,
            "max": self.max,
            "step": self.step,
        }

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> SplitterState:
        lo, mode = value.get("lo"), value.get("mode", "uneven")
        if mode not in ("even", "uneven"):
            raise ValueError(f"the splitter's mode {mode!r} is neither even nor uneven")
        return cls(
            index=int(value.get("index", 0)),
            lo=None if lo is None else tuple(lo),
            done=bool(value.get("done", False)),
            mode=mode,
            rows=int(value.get("rows", 0)),
            estimate=int(value.get("estimate", 1)),
            min=_int_or_none(value.get("min")),
            max=_int_or_none(value.get("max")),
            step=_int_or_none(value.get("step")),
        )


def _int_or_none(value: object) -> int | None:
    return None if value is None else int(str(value))


class ChunkSplitter:
    """Cuts one table ``db.table`` along ``keys``; :meth:`next` returns its splits in order.
    With ``upto`` (an incremental snapshot's maximum key) the keys past it are not counted, so
    the last split ends there."""

    def __init__(
        self,
        dialect: SnapshotDialect,
        table: str,
        keys: Sequence[KeyColumn],
        settings: SplitterSettings,
        state: SplitterState | None = None,
        upto: KeyValue | None = None,
    ) -> None:
        self.dialect = dialect
        self.upto = upto
        self.table = table
        self.db, self.name = TableName.parse(table)
        self.keys = list(keys)
        self.settings = settings
        self.state: SplitterState = state if state is not None else self._start()

    @property
    def done(self) -> bool:
        return self.state.done

    @property
    def estimated_splits(self) -> int:
        return self.state.estimate

    def _start(self) -> SplitterState:
        size = self.settings.chunk_size
        rows = self.dialect.row_count(self.db, self.name)
        state = SplitterState(rows=rows, estimate=max(1, -(-rows // size)))
        if len(self.keys) != 1 or not self.keys[0].integer or rows == 0:
            return state
        found = self.dialect.key_range(self.db, self.name, self.keys)
        if found is None:
            return state
        low, high = int(found[0][0]), int(found[1][0])
        factor = (high - low + 1) / rows
        s = self.settings
        if s.distribution_factor_lower <= factor <= s.distribution_factor_upper:
            return replace(state, mode="even", min=low, max=high, step=max(1, int(size * factor)))
        return state

    def next(self) -> Split:
        """The next split (the last one has ``hi`` None; afterwards :attr:`done` is true)."""
        if self.done:
            raise StopIteration(f"every split of {self.table} was made already")
        st = self.state
        lo = st.lo
        hi = self._even_hi(lo) if st.mode == "even" else None
        mode: Mode = st.mode
        if hi is None:
            mode = "uneven"
            hi = self._uneven_hi(lo)
        split = Split(self.table, st.index, lo, hi)
        hi_key = None if hi is None else tuple(hi)
        self.state = replace(st, index=st.index + 1, lo=hi_key, done=hi is None, mode=mode)
        return split

    def take(self, count: int) -> list[Split]:
        out: list[Split] = []
        while len(out) < count and not self.done:
            out.append(self.next())
        return out

    def _even_hi(self, lo: KeyValue | None) -> KeyValue | None:
        """``lo + step`` while below the starting maximum, unless that chunk is overfull."""
        st = self.state
        if st.min is None or st.max is None or st.step is None:
            return None  # no even walk planned: the uneven way
        start = st.min if lo is None else int(lo[0])
        end = start + st.step
        if end > st.max:
            return None  # past the maximum seen at the start: go on the uneven way
        limit = 2 * self.settings.chunk_size
        rows = self.dialect.count_between(self.db, self.name, self.keys, lo, (end,), limit + 1)
        if rows > limit:
            return self._uneven_hi(lo)
        return (end,)

    def _uneven_hi(self, lo: KeyValue | None) -> KeyValue | None:
        """The key ``chunk_size`` rows past ``lo``; a run of equal keys (a chunk key that is not
        unique) is skipped whole, so no chunk is empty and the walk always moves."""
        offset = self.settings.chunk_size
        while True:
            hi = self.dialect.key_after(self.db, self.name, self.keys, lo, offset, self.upto)
            if hi is None or lo is None or list(hi) != list(lo):
                return hi
            offset *= 2
