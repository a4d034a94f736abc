"""``source.heartbeat`` in a log reader: when a beat is due, how many there were, and the
sentence for an action query the server refused.

A log reader (:class:`~sparkcdc.sources.log_thread.LogThread`) asks :meth:`Heartbeat.due`
whenever it has read everything received; once per interval the answer is yes, and the reader
beats: the source's own part (its action query on a connection of its own; PostgreSQL also
writes a logical message into the WAL), then the position it reached goes out as a progress
marker, so Spark commits an offset that moves while the captured tables are idle
(Debezium's ``heartbeat.interval.ms`` and ``heartbeat.action.query``). Heartbeats are counted
(the status file's ``heartbeats``, ``sparkcdc_source_heartbeats_total``), never written as
change-log rows.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from sparkcdc.config.model import HeartbeatConfig
from sparkcdc.core.errors import ConnectionFailed, SourceError

ACTION_QUERY_KEY = "source.heartbeat.action_query"


class Heartbeat:
    """The beats of one log reader at ``config.interval`` (never when it is 0)."""

    def __init__(self, config: HeartbeatConfig) -> None:
        self.interval = config.interval
        self.action_query = config.action_query
        self.count = 0
        self._last = time.monotonic()

    @property
    def enabled(self) -> bool:
        return self.interval > 0

    def due(self) -> bool:
        """Whether an interval passed since the last beat (the next one is timed from now)."""
        if not self.interval:
            return False
        now = time.monotonic()
        if now - self._last < self.interval:
            return False
        self._last = now
        return True

    def beaten(self) -> None:
        """A beat is done."""
        self.count += 1


def action_query_failed(where: str, words: str) -> SourceError:
    """The stream stops: the server at ``where`` refused the action query (its ``words``)."""
    return SourceError(
        f"{ACTION_QUERY_KEY} failed on {where} ({words}); fix the statement or the privileges "
        "it needs, or leave it out.",
        key=ACTION_QUERY_KEY,
    )


def run_action_query(
    query: Callable[[str], object], sql: str, where: str, words: Callable[[SourceError], str]
) -> None:
    """Run the action query ``sql`` with ``query``: a lost server (ConnectionFailed) raised as
    it is, for the caller to reconnect at the next beat; any other refusal as the sentence of
    :func:`action_query_failed`, with the server's own ``words`` for it."""
    try:
        query(sql)
    except ConnectionFailed:
        raise
    except SourceError as exc:
        # not chained: Spark's report of the stream's failure names the first error it shows
        raise action_query_failed(where, words(exc).rstrip(".")) from None
