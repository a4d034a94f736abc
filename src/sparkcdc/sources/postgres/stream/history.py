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

import json
import os
import threading
from pathlib import Path

from sparkcdc.sources.port import TableName
from sparkcdc.sources.postgres.offset import LsnOffset
from sparkcdc.sources.postgres.stream.existing import TableState

VERSION = 1


class RelationHistory:
    """An append-only JSONL file of (offset, table, state) records (module docstring)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._records: list[tuple[LsnOffset, TableName, TableState]] = []
        self._read_bytes = 0
        self._refresh()

    def record(self, offset: LsnOffset, name: TableName, state: TableState) -> None:
        """From ``offset`` on, ``state`` is ``name``'s."""
        line = json.dumps(
            {"v": VERSION, "offset": offset.to_json(), "table": list(name),
             "state": state.to_json()},
            separators=(",", ":"), sort_keys=True,
        )  # fmt: skip
        data = (line + "\n").encode("utf-8")
        with self._lock:
            self._refresh()
            self._cut_torn_tail()
            created = not self.path.exists()
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                written = 0
                while written < len(data):  # a short write: finish the line
                    written += os.write(fd, data[written:])
                os.fsync(fd)
            finally:
                os.close(fd)
            if created:  # the new file's name made durable too
                folder = os.open(self.path.parent, os.O_RDONLY)
                try:
                    os.fsync(folder)
                finally:
                    os.close(folder)
            self._records.append((offset, name, state))
            self._read_bytes += len(data)

    def states_at(self, offset: LsnOffset) -> dict[TableName, TableState]:
        """Each table's state of the latest record at or before ``offset``."""
        with self._lock:
            self._refresh()
            best: dict[TableName, tuple[LsnOffset, TableState]] = {}
            for at, name, state in self._records:
                found = best.get(name)
                if at <= offset and (found is None or at >= found[0]):
                    best[name] = (at, state)
            return {name: state for name, (_, state) in best.items()}

    def first_states(self) -> dict[TableName, tuple[LsnOffset, TableState]]:
        """Each table's earliest record (the first written of those at its offset), with its
        offset: in a new pipeline's history, what its snapshot's first pin recorded."""
        with self._lock:
            self._refresh()
            first: dict[TableName, tuple[LsnOffset, TableState]] = {}
            for at, name, state in self._records:
                found = first.get(name)
                if found is None or at < found[0]:
                    first[name] = (at, state)
            return first

    def _refresh(self) -> None:
        """Read the whole lines appended since the last look."""
        try:
            with open(self.path, "rb") as f:
                f.seek(self._read_bytes)
                tail = f.read()
        except FileNotFoundError:
            return
        end = tail.rfind(b"\n")
        if end < 0:
            return
        for raw in tail[: end + 1].splitlines():
            try:
                doc = json.loads(raw)
                if doc.get("v") != VERSION:
                    continue
                offset = LsnOffset.from_json(doc["offset"])
                db, table = doc["table"]
                self._records.append((offset, (db, table), TableState.from_json(doc["state"])))
            except (ValueError, KeyError, TypeError, AttributeError):
                continue  # a line torn by a crash and completed by a later append
        self._read_bytes += end + 1

    def _cut_torn_tail(self) -> None:
        """Drop an unfinished last line, so the next record starts on a line of its own."""
        try:
            size = self.path.stat().st_size
        except FileNotFoundError:
            return
        if size > self._read_bytes:
            with open(self.path, "r+b") as f:
                f.truncate(self._read_bytes)
                f.flush()
                os.fsync(f.fileno())
