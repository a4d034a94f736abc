"""An append-only file of JSON objects, one per line: the schema histories' storage.

Each record is appended with one ``write`` (finished if the kernel wrote it short) and
fsync'd, and the folder is fsync'd when the file is new, so a line is either whole or the torn
tail of a crash (``kill -9``). Reading takes only whole lines; a torn tail is cut off before the
next record is appended, so every record starts on a line of its own. Several processes may
read and append (the driver-side source process and a planner): each reads what the others
appended since its last look.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

Absorb = Callable[[dict[str, Any]], None]
"""Takes one record; raises ValueError, KeyError, TypeError or AttributeError for a line that
is no record of the file's (a torn line completed by a later append), which is passed over."""


class JsonLinesFile:
    """The file at ``path``, whose records go to ``absorb`` as they are read or appended. Hold
    :attr:`lock` around :meth:`refresh` and :meth:`append` and around reading what ``absorb``
    built."""

    def __init__(self, path: str | os.PathLike[str], absorb: Absorb) -> None:
        self.path = Path(path)
        self.lock = threading.Lock()
        self._absorb = absorb
        self._read_bytes = 0

    def refresh(self) -> None:
        """Absorb the whole lines appended since the last look (by this or another process)."""
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
            if not raw.strip():
                continue
            try:
                doc = json.loads(raw)
                if not isinstance(doc, dict):
                    raise TypeError("not an object")
                self._absorb(doc)
            except (ValueError, KeyError, TypeError, AttributeError):
                continue  # a line torn by a crash and completed by a later append
        self._read_bytes += end + 1

    def append(self, doc: Mapping[str, object]) -> None:
        """Write ``doc`` as the file's last line, durably, then absorb it."""
        data = (json.dumps(doc, separators=(",", ":"), sort_keys=True) + "\n").encode("utf-8")
        self.refresh()
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
        self._read_bytes += len(data)
        self._absorb(json.loads(data))  # as a reader will see it

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
