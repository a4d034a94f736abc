"""The mark the sink leaves once a micro-batch's log changes are committed.

An incremental snapshot reads its next window's chunks while Spark runs the current micro-batch
(:mod:`.read_ahead`). Those reads cost CPU on the database and in the reader, and the part of
the micro-batch other tables wait for is everything up to the commit of their own changes; the
chunk's write after it is not. So the sink rewrites a small file, the *batch mark*, right after
the micro-batch's log changes are committed and before it writes snapshot chunks, and the reads
ahead start when the mark changes: they overlap the chunk's write and the next micro-batch's
planning, not the stream's own writes.

The mark is advisory: it only moves reads later in time, never changes what they return. Reads
start anyway after :data:`WAIT_LIMIT` (a sink that leaves no mark, a micro-batch that is slow).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from pathlib import Path

log = logging.getLogger("sparkcdc.sink")

WAIT_LIMIT = 1.0  # seconds the reads ahead wait for the mark at most
POLL = 0.005


class BatchMark:
    """One pipeline's batch mark, a file the sink rewrites and the stream reader watches."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._count = 0

    def touch(self) -> None:
        """The sink: the current micro-batch's log changes are committed. A mark that cannot be
        written only leaves the reads ahead to start after their wait."""
        self._count += 1
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
            tmp.write_text(f"{os.getpid()} {self._count} {time.time_ns()}")
            os.replace(tmp, self.path)
        except OSError as exc:
            log.debug("the batch mark %s was not written: %s", self.path, exc)

    def stamp(self) -> str:
        """The mark as it is now ('' when there is none)."""
        try:
            return self.path.read_text()
        except OSError:
            return ""

    def wait_past(self, stamp: str, stop: threading.Event, limit: float = WAIT_LIMIT) -> bool:
        """Wait until the mark differs from ``stamp``, ``stop`` is set or ``limit`` seconds
        passed; whether the mark moved."""
        deadline = time.monotonic() + limit
        while not stop.is_set() and time.monotonic() < deadline:
            if self.stamp() != stamp:
                return True
            time.sleep(POLL)
        return False
