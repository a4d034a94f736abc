"""PostgreSQL's part of a ``source.heartbeat`` beat: a logical message written into the captured
database's WAL, then ``source.heartbeat.action_query`` if set, on a connection of its own.

The slot follows the server's WAL on its own while idle (keepalive positions become progress
markers the pipeline acknowledges), but only as far as the walsender has decoded WAL of this
database. A database where nothing is written for hours gives it nothing to decode, and a server
older than PostgreSQL 15 sends keepalives only now and then. A non-transactional logical message
(``pg_logical_emit_message``, executable by every role) is WAL of this database that no table
holds: pgoutput sends nothing for it, the walsender passes it, and the slot follows.
"""

from __future__ import annotations

import logging

from sparkcdc.config.model import SourceConfig
from sparkcdc.core.errors import ConnectionFailed, SourceError
from sparkcdc.sources.heartbeat import run_action_query
from sparkcdc.sources.postgres.server.connect import Session

log = logging.getLogger("sparkcdc.source")

PREFIX = "sparkcdc_heartbeat"
_EMIT_SQL = "SELECT pg_logical_emit_message(false, %s, '')::text"


class WalHeartbeat:
    """Writes a heartbeat into ``database``'s WAL at each :meth:`beat` (the log reader times
    them), and runs the source's action query after it."""

    def __init__(self, source: SourceConfig, database: str) -> None:
        self.source, self.database = source, database
        self.action_query = source.heartbeat.action_query
        self._session: Session | None = None

    def beat(self) -> None:
        try:
            if self._session is None:
                self._session = Session(self.source, self.database)
            [(at,)] = self._session.query(_EMIT_SQL, (PREFIX,))
            log.debug("heartbeat written at %s", at)
            if self.action_query:
                session = self._session
                run_action_query(session.query, self.action_query, session.address, _words)
        except ConnectionFailed:
            self.close()  # opened again at the next beat
            raise

    def close(self) -> None:
        if self._session is not None:
            self._session.close()
            self._session = None


def _words(exc: SourceError) -> str:
    """The server's own message behind ``exc``."""
    diag = getattr(exc.__cause__, "diag", None)
    return getattr(diag, "message_primary", None) or str(exc)
