"""The schema history of a PostgreSQL stream: each captured table's schema in force and its
catalog baseline (:class:`~.existing.TableState`), from which offset on.

A pipeline restarts from its committed offset, which may lie before schema changes the reader
had seen (their ``s`` rows not committed) or that were made while it was stopped. The catalog
then describes the table after them, the stream from that offset before them: the reader starts
from the state in force at the offset, so the Relation messages show those changes again and
the catalog's differences from the baseline judge them (:mod:`.existing`).

One JSON object per line, appended with one write and fsync'd; a torn last line (``kill -9``)
is ignored, and cut off before the next record::

    {"v": 1, "offset": {"lsn": "0/16B3F28", "skip": 4}, "table": ["public", "t"],
     "state": {"schema": {...}, "baseline": {...}}}

A record applies to a resume at or after its offset; of records at one offset the last one
written wins (a log read twice). The reader records a change inside a transaction at the offset
just past its item (:meth:`~sparkcdc.sources.postgres.offset.LsnOffset.with_skip` + 1), so a
resume at the change's own item reads it again.
"""

from __future__ import annotations

import os
from typing import Any

from sparkcdc.core.table_name import TableName
from sparkcdc.sources.json_lines import JsonLinesFile
from sparkcdc.sources.postgres.offset import LsnOffset
from sparkcdc.sources.postgres.stream.existing import TableState

VERSION = 1


class RelationHistory:
    """An append-only JSONL file of (offset, table, state) records (module docstring)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self._records: list[tuple[LsnOffset, TableName, TableState]] = []
        self._file = JsonLinesFile(path, self._absorb)
        self.path = self._file.path
        with self._file.lock:
            self._file.refresh()

    def record(self, offset: LsnOffset, name: TableName, state: TableState) -> None:
        """From ``offset`` on, ``state`` is ``name``'s."""
        doc = {"v": VERSION, "offset": offset.to_json(), "table": list(name),
               "state": state.to_json()}  # fmt: skip
        with self._file.lock:
            self._file.append(doc)

    def states_at(self, offset: LsnOffset) -> dict[TableName, TableState]:
        """Each table's state of the latest record at or before ``offset``."""
        with self._file.lock:
            self._file.refresh()
            best: dict[TableName, tuple[LsnOffset, TableState]] = {}
            for at, name, state in self._records:
                found = best.get(name)
                if at <= offset and (found is None or at >= found[0]):
                    best[name] = (at, state)
            return {name: state for name, (_, state) in best.items()}

    def first_states(self) -> dict[TableName, tuple[LsnOffset, TableState]]:
        """Each table's earliest record (the first written of those at its offset), with its
        offset: in a new pipeline's history, what its snapshot's first pin recorded."""
        with self._file.lock:
            self._file.refresh()
            first: dict[TableName, tuple[LsnOffset, TableState]] = {}
            for at, name, state in self._records:
                found = first.get(name)
                if found is None or at < found[0]:
                    first[name] = (at, state)
            return first

    def _absorb(self, doc: dict[str, Any]) -> None:
        if doc.get("v") != VERSION:
            return
        offset = LsnOffset.from_json(doc["offset"])
        db, table = doc["table"]
        self._records.append((offset, TableName(db, table), TableState.from_json(doc["state"])))
