"""MySQL/MariaDB's ``source.heartbeat.action_query``: the statement run at each heartbeat on a
client connection of its own, e.g. Debezium users' ``INSERT INTO heartbeat (id, ts) VALUES
(1, NOW()) ON DUPLICATE KEY UPDATE ts = NOW()``. Its transaction is binlog traffic of the
server, so the log reader's position moves on even where nothing else is written."""

from __future__ import annotations

import pymysql

from sparkcdc.config.model import SourceConfig
from sparkcdc.core.errors import ConnectionFailed, SourceError
from sparkcdc.sources.heartbeat import run_action_query
from sparkcdc.sources.mysql.server.client import ServerConnection


class ActionQuery:
    """Runs the source's action query at each :meth:`run` (nothing when it has none); the
    connection opens at the first run, and again after it broke."""

    def __init__(self, source: SourceConfig) -> None:
        self.source = source
        self.sql = source.heartbeat.action_query
        self._conn: ServerConnection | None = None

    def run(self) -> None:
        if not self.sql:
            return
        try:
            where = f"{self.source.host}:{self.source.port}"
            run_action_query(self._query, self.sql, where, _server_words)
        except ConnectionFailed:
            self.close()  # a lost server: the replication stream reconnects, and so does this
            raise

    def _query(self, sql: str) -> None:
        if self._conn is None:
            self._conn = ServerConnection.of(self.source)
        self._conn.query(sql)

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


def _server_words(exc: SourceError) -> str:
    """The server's own message behind ``exc``, with its error code."""
    cause = exc.__cause__
    if isinstance(cause, pymysql.err.MySQLError) and len(cause.args) > 1:
        return f"error {cause.args[0]}: {cause.args[1]}"
    return str(exc)
