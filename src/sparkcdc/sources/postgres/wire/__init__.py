"""The PostgreSQL frontend/backend protocol (v3) spoken directly on sockets: login
(cleartext, MD5, SCRAM-SHA-256), simple queries, and logical replication streaming.

- :mod:`.lsn`: ``X/Y`` log sequence numbers.
- :mod:`.messages`: message framing through one receive buffer; builders and parsers.
- :mod:`.auth`: the password logins.
- :mod:`.errors`: ErrorResponse -> sparkcdc's one-sentence errors (one table).
- :mod:`.connection`: :class:`PgConnection`, a session (``replication=True``: a walsender).
- :mod:`.replication`: IDENTIFY_SYSTEM, slots, START_REPLICATION.
- :mod:`.stream`: :class:`ReplicationStream`, XLogData in batches, keepalives, status updates.
"""

from sparkcdc.sources.postgres.wire.connection import PgConnection
from sparkcdc.sources.postgres.wire.errors import PgError, pg_error
from sparkcdc.sources.postgres.wire.lsn import format_lsn, parse_lsn
from sparkcdc.sources.postgres.wire.replication import (
    CreatedSlot,
    SystemIdentity,
    create_logical_slot,
    drop_slot,
    identify_system,
    publication_names,
    start_logical,
)
from sparkcdc.sources.postgres.wire.stream import (
    XLOG_HEADER,
    ReplicationStream,
    unpack_xlog,
    xlog_start,
)

__all__ = [
    "XLOG_HEADER",
    "CreatedSlot",
    "PgConnection",
    "PgError",
    "ReplicationStream",
    "SystemIdentity",
    "create_logical_slot",
    "drop_slot",
    "format_lsn",
    "identify_system",
    "parse_lsn",
    "pg_error",
    "publication_names",
    "start_logical",
    "unpack_xlog",
    "xlog_start",
]
