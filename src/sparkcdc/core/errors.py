"""The one exception tree of sparkcdc. Every message is one sentence saying what is wrong and
what to do; structured fields ride along, and every class pickles across Spark workers.

    SparkCDCError
    ├── ConfigError            a configuration value is wrong (names the key)
    │   └── NoTablesMatched    a source.tables pattern matches no table on the server
    ├── SourceError            the source database refuses or lacks something
    │   ├── ConnectionFailed   unreachable host/port or wrong credentials
    │   ├── MissingPrivilege   the user lacks a privilege CDC needs
    │   ├── LogNotReady        the server's log is not set up for change data capture
    │   │                      (binlog off or not ROW/FULL; wal_level not logical)
    │   ├── LogPositionGone    the start position is no longer in the server's log (a
    │   │                      purged binlog file, removed WAL)
    │   ├── TableWithoutKey    a captured table has no primary key and no key column configured
    │   └── DecodeError        an event of the log (binlog event, pgoutput message) cannot be
    │                          decoded: truncated, damaged or oversized; names its kind and place
    ├── SinkError              writing a sink failed
    │   └── StoreUnavailable   the lake's object storage kept answering 5xx past the retries
    ├── CheckpointTorn         a file of Spark's checkpoint is cut short and cannot be repaired
    └── StoreClosed            the event store was closed (the log reader stopped)
"""

from __future__ import annotations


class SparkCDCError(Exception):
    """Base of every sparkcdc error; ``str(err)`` is the sentence for the user."""

    def __init__(self, message: str, **fields: object) -> None:
        super().__init__(message)
        self.message = message
        self.fields = fields

    def __reduce__(self) -> tuple[object, ...]:
        return (_rebuild, (type(self), self.message, self.fields))

    def __str__(self) -> str:
        return self.message


def _rebuild(cls: type[SparkCDCError], message: str, fields: dict[str, object]) -> SparkCDCError:
    err = cls.__new__(cls)
    SparkCDCError.__init__(err, message, **fields)
    return err


class ConfigError(SparkCDCError):
    """A configuration value is wrong; ``fields['key']`` names it."""


class NotShipped(SparkCDCError):
    """sparkcdc is not importable in a Python process Spark started (raised there as
    :class:`sparkcdc.spark.shipping.NotShipped`, which imports nothing of sparkcdc)."""


class SourceError(SparkCDCError):
    """The source database refuses or lacks something CDC needs."""


class ConnectionFailed(SourceError):
    pass


class MissingPrivilege(SourceError):
    pass


class LogNotReady(SourceError):
    pass


class LogPositionGone(SourceError):
    pass


class NoTablesMatched(ConfigError):
    """A ``source.tables`` pattern (or all of them) matches no table: the file is at fault,
    whatever the server holds, so the exit status is a configuration error's."""


class TableWithoutKey(SourceError):
    pass


class DecodeError(SourceError):
    """An event of the source's log cannot be decoded; ``fields`` name its ``event`` kind and
    its place (``file`` and ``pos``, or ``lsn``). The log readers raise it, once, where an event
    is decoded, for whatever went wrong inside (:mod:`sparkcdc.sources.decode_errors`)."""


class SinkError(SparkCDCError):
    pass


class StoreUnavailable(SinkError):
    """The lake's object storage kept failing (5xx, SlowDown) past the sink's retries
    (:mod:`sparkcdc.sinks.store_retry`); ``fields['store']`` names it."""


class CheckpointTorn(SparkCDCError):
    """A file of Spark's checkpoint is cut short or unreadable, and removing it could lose or
    duplicate a batch; the sentence names the file and the way out."""


class StoreClosed(SparkCDCError):
    """The event store was closed; nothing more can be put into it."""


def as_public(err: SparkCDCError) -> SparkCDCError:
    """``err`` as its nearest class of this module (a source's own subclass, such as
    PostgreSQL's ``PgError``, becomes its ``SourceError``), with the same sentence and fields:
    what Spark reports of an error raised in its Python process names the class by its module,
    and ``sparkcdc run`` finds this module's classes there."""
    cls = next(c for c in type(err).__mro__ if c.__module__ == __name__)
    if cls is type(err):
        return err
    return _rebuild(cls, err.message, err.fields)
