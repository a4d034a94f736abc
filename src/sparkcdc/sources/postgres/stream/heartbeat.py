"""``source.heartbeat_interval``: a heartbeat written into the captured database's WAL while
nothing arrives on the stream (Debezium's ``heartbeat.interval.ms`` with its action query).

The slot follows the server's WAL on its own while idle (keepalive positions become progress
markers the pipeline acknowledges), but only as far as the walsender has decoded WAL of this
database. A database where nothing is written for hours gives it nothing to decode, and a server
older than PostgreSQL 15 sends keepalives only now and then. A non-transactional logical message
(``pg_logical_emit_message``, executable by every role) is WAL of this database that no table
holds: pgoutput sends nothing for it, the walsender passes it, and the slot follows.
"""

from __future__ import annotations

import logging
import time

from sparkcdc.config.model import SourceConfig
from sparkcdc.sources.postgres.server.connect import Session

log = logging.getLogger("sparkcdc.source")

PREFIX = "sparkcdc_heartbeat"
_EMIT_SQL = "SELECT pg_logical_emit_message(false, %s, '')::text"


class WalHeartbeat:
    """Writes a heartbeat on a connection of its own at most every ``every`` seconds while
    :meth:`beat` is called (by the reader when the stream is quiet); ``every`` 0: never."""

    def __init__(self, source: SourceConfig, database: str, every: float) -> None:
        self.source, self.database, self.every = source, database, every
        self._session: Session | None = None
        self._last = time.monotonic()

    def beat(self) -> None:
        if not self.every or time.monotonic() - self._last < self.every:
            return
        self._last = time.monotonic()
        if self._session is None:
            self._session = Session(self.source, self.database)
        [(at,)] = self._session.query(_EMIT_SQL, (PREFIX,))
        log.debug("heartbeat written at %s", at)

    def close(self) -> None:
        if self._session is not None:
            self._session.close()
            self._session = None
