"""A new stream's first offset, resolved once.

Spark asks a new stream's source for its initial offset more than once: while it plans the
first micro-batch, again when it runs it (as that batch's start), and again after a restart
that came before the first batch committed. Resolved anew each time, ``startup: latest`` (the
log's end) or an initial snapshot's table list would move between the calls: the first
micro-batch would start after its own end, and on PostgreSQL the log reader opened at the
later position would confirm the slot past changes the next micro-batch still has to read.
So the first answer is kept, in this process and, where the stream has a file for it, in the
checkpoint, and every later call returns it for as long as ``startup`` is the same.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

from sparkcdc.core.offset import OffsetJSON


class FirstOffset:
    """The first offset of a stream started with ``startup``, kept in ``path`` if given."""

    def __init__(self, startup: str, path: str | None) -> None:
        self.startup = startup
        self.path = Path(path) if path else None
        self._offset: OffsetJSON | None = None

    def get(self, resolve: Callable[[], OffsetJSON]) -> OffsetJSON:
        """The kept offset, else ``resolve()``'s, kept from now on."""
        if self._offset is None:
            self._offset = self._read()
        if self._offset is None:
            self._offset = resolve()
            self._write(self._offset)
        return self._offset

    def _read(self) -> OffsetJSON | None:
        if self.path is None:
            return None
        try:
            kept = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return None  # none yet, or torn by a kill before its rename: resolve again
        if not isinstance(kept, dict) or kept.get("startup") != self.startup:
            return None  # another startup asked for since: it applies
        offset = kept.get("offset")
        return offset if isinstance(offset, dict) else None

    def _write(self, offset: OffsetJSON) -> None:
        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_text(json.dumps({"startup": self.startup, "offset": offset}))
        os.replace(tmp, self.path)
