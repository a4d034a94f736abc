"""Which captured tables keep a history table (``sink.history``), and which of their columns
open a new version when they change.

``sink.history`` is ``true`` (every captured table, every column tracked), a list of ``db.table``
names, or a mapping of names to ``{track: [col, ...]}`` or ``{except: [col, ...]}``
(:mod:`sparkcdc.config.history` reads it). A change to an untracked column updates the open
version in place, as Databricks' ``track_history_column_list`` /
``track_history_except_column_list`` do.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from sparkcdc.core.table_name import TableName


@dataclass(frozen=True)
class TableHistory:
    """One table's history: the columns tracked (``track``; None: all) but ``untracked``."""

    track: tuple[str, ...] | None = None
    untracked: tuple[str, ...] = ()

    def tracked(self, columns: Sequence[str]) -> list[str]:
        """The names among ``columns`` whose change opens a new version (case-insensitive)."""
        wanted = None if self.track is None else {c.lower() for c in self.track}
        skipped = {c.lower() for c in self.untracked}
        return [
            c
            for c in columns
            if (wanted is None or c.lower() in wanted) and c.lower() not in skipped
        ]

    def unknown(self, columns: Sequence[str]) -> list[str]:
        """The named columns (``track`` or ``untracked``) that ``columns`` lack."""
        have = {c.lower() for c in columns}
        return [c for c in (*(self.track or ()), *self.untracked) if c.lower() not in have]


@dataclass(frozen=True)
class HistorySpec:
    """``sink.history``: every table (``every``) or the tables named in ``tables``."""

    every: bool = False
    tables: Mapping[str, TableHistory] = field(default_factory=dict)  # "db.table" -> its own

    @property
    def on(self) -> bool:
        return self.every or bool(self.tables)

    def of(self, name: TableName) -> TableHistory | None:
        """The history of ``name``; None where it keeps none."""
        found = self.tables.get(str(name))
        if found is not None:
            return found
        return TableHistory() if self.every else None
