"""Finished splits, kept beside the checkpoint: what makes a snapshot resumable and replays exact.

A split task writes its corrected chunk and its watermarks here before it hands the rows to
Spark, and a task that finds its split here already returns the stored rows instead of reading
again. So a micro-batch that Spark replays after a crash carries exactly the rows (and high
watermarks) of its first attempt, whatever the source did since; and the splits of batches
committed earlier are never read again (the stream offset has moved past them).

Layout, per split ``<db.table>/<index>``::

    splits/<db.table>/<index>.arrow   the rows (Arrow IPC file: ``key`` text, then the ``after``
                                      text or the table's typed columns)
    splits/<db.table>/<index>.json    split, low and high watermark, rows, task timing
    splits/<db.table>/<index>.*       further files of the rows (:meth:`SplitStore.data_path`)

The ``.json`` is written last (both by rename), so its presence means the split is finished.
Row files of committed batches are deleted; the ``.json`` files stay for the hand-off.
"""

from __future__ import annotations

import json
import os
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import NotRequired, TypedDict, cast

import pyarrow as pa

from sparkcdc.core.chunk import KeyColumnJSON, Split, SplitJSON
from sparkcdc.core.offset import Offset, OffsetJSON


class SplitMeta(TypedDict):
    """A finished split's ``.json``: the split, its watermarks (the source's offsets), its row
    count and the task's timing, the chunk key columns and the table's key columns. Files of
    older versions may lack the keys marked NotRequired (read as their defaults)."""

    split: SplitJSON
    low: OffsetJSON
    high: OffsetJSON
    rows: int
    started: NotRequired[float]  # wall time, seconds
    ended: NotRequired[float]
    window_changes: NotRequired[int]  # changes between the watermarks, corrected in the chunk
    task: NotRequired[str]
    keys: NotRequired[list[KeyColumnJSON]]
    row_key: NotRequired[list[str]]


@dataclass
class SplitResult:
    split: Split
    rows: pa.Table  # key, then after or the typed columns
    low: Offset
    high: Offset
    started: float = 0.0
    ended: float = 0.0
    window_changes: int = 0
    task: str = ""
    keys: list[KeyColumnJSON] = field(default_factory=list)  # the chunk key columns
    row_key: list[str] = field(default_factory=list)  # the table's key columns

    def meta(self) -> SplitMeta:
        return {
            "split": self.split.to_json(),
            "low": self.low.to_json(),
            "high": self.high.to_json(),
            "rows": self.rows.num_rows,
            "started": self.started,
            "ended": self.ended,
            "window_changes": self.window_changes,
            "task": self.task,
            "keys": self.keys,
            "row_key": self.row_key,
        }


class SplitStore:
    """The finished splits of one pipeline under ``root``; ``offsets`` reads their
    watermarks."""

    def __init__(self, root: str | Path, offsets: type[Offset]) -> None:
        self.root = Path(root)
        self.offsets = offsets

    def _base(self, split: Split) -> Path:
        return self.root / "splits" / split.table / str(split.index)

    def data_path(self, split: Split, suffix: str) -> Path:
        """A further file of a finished split's data (released with its rows); its folder is
        made here."""
        base = self._base(split)
        base.parent.mkdir(parents=True, exist_ok=True)
        return base.with_name(f"{split.index}{suffix}")

    def rows_path(self, split: Split) -> Path:
        """The Arrow IPC file of a finished split's rows (until it is released)."""
        return self._base(split).with_suffix(".arrow")

    def put(self, result: SplitResult) -> None:
        base = self._base(result.split)
        base.parent.mkdir(parents=True, exist_ok=True)
        tmp = base.with_suffix(".arrow.tmp")
        with pa.OSFile(str(tmp), "wb") as sink, pa.ipc.new_file(sink, result.rows.schema) as w:
            w.write_table(result.rows)
        os.replace(tmp, base.with_suffix(".arrow"))
        tmp = base.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(result.meta()))
        os.replace(tmp, base.with_suffix(".json"))

    def get(self, split: Split) -> SplitResult | None:
        base = self._base(split)
        meta = self._meta(base.with_suffix(".json"))
        data = base.with_suffix(".arrow")
        if meta is None or not data.exists():
            return None
        with pa.memory_map(str(data)) as source:
            rows = pa.ipc.open_file(source).read_all()
        return SplitResult(
            split,
            rows,
            self.offsets.from_json(meta["low"]),
            self.offsets.from_json(meta["high"]),
            meta.get("started", 0.0),
            meta.get("ended", 0.0),
            meta.get("window_changes", 0),
            meta.get("task", ""),
            meta.get("keys", []),
            meta.get("row_key", []),
        )

    @staticmethod
    def _meta(path: Path) -> SplitMeta | None:
        """A split's metadata (None: not finished, or its file half written by a crash)."""
        try:
            value = json.loads(path.read_text())
        except (FileNotFoundError, json.JSONDecodeError):
            return None
        return cast(SplitMeta, value) if isinstance(value, dict) else None

    def finished(self, table: str, known: Collection[int] = ()) -> list[SplitMeta]:
        """The metadata of ``table``'s finished splits, by index; splits whose index is in
        ``known`` are left out without reading their files."""
        folder = self.root / "splits" / table
        paths = [p for p in folder.glob("*.json") if p.stem.isdigit() and int(p.stem) not in known]
        metas = [m for p in paths if (m := self._meta(p)) is not None]
        return sorted(metas, key=lambda m: int(m["split"]["index"]))

    def release(self, split: Split) -> None:
        """Forget the rows of a split whose batch was committed (its metadata stays)."""
        base = self._base(split)
        for path in base.parent.glob(f"{split.index}.*"):
            if path.name != f"{split.index}.json":
                path.unlink(missing_ok=True)
