"""The Streaming Replication Protocol's commands on a logical replication connection
(:class:`.PgConnection` with ``replication=True``; PostgreSQL docs, "Streaming Replication
Protocol"): IDENTIFY_SYSTEM, CREATE_REPLICATION_SLOT ... LOGICAL, DROP_REPLICATION_SLOT and
START_REPLICATION SLOT ... LOGICAL, whose options are the output plugin's ("Logical Streaming
Replication Parameters": pgoutput's ``proto_version``, ``publication_names``, ...).

Errors come out as sparkcdc's sentences naming the slot (:func:`.errors.pg_error`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal, NamedTuple

from sparkcdc.sources.postgres.wire import messages as m
from sparkcdc.sources.postgres.wire.connection import PgConnection, Row
from sparkcdc.sources.postgres.wire.lsn import format_lsn, parse_lsn
from sparkcdc.sources.postgres.wire.stream import ReplicationStream

Snapshot = Literal["export", "use", "nothing"]
_OLD_SNAPSHOT = {"export": "EXPORT_SNAPSHOT", "use": "USE_SNAPSHOT", "nothing": "NOEXPORT_SNAPSHOT"}
NEW_SLOT_SYNTAX = 150000  # PostgreSQL 15 takes CREATE_REPLICATION_SLOT's options in parentheses


class SystemIdentity(NamedTuple):
    """IDENTIFY_SYSTEM's row."""

    systemid: str
    timeline: int
    xlogpos: int
    dbname: str | None


class CreatedSlot(NamedTuple):
    """CREATE_REPLICATION_SLOT's row: the slot is consistent from ``consistent_point``; with
    ``snapshot="export"`` the snapshot ``snapshot_name`` shows the data as of that point."""

    slot_name: str
    consistent_point: int
    snapshot_name: str | None
    plugin: str


def quote_ident(name: str) -> str:
    """``name`` as a double-quoted identifier."""
    return '"' + name.replace('"', '""') + '"'


def quote_literal(value: str) -> str:
    """``value`` as a single-quoted string literal."""
    return "'" + value.replace("'", "''") + "'"


def publication_names(*names: str) -> str:
    """pgoutput's ``publication_names`` value: the names, each quoted, comma-separated."""
    return ",".join(quote_ident(name) for name in names)


def _command(conn: PgConnection, sql: str, slot: str = "") -> list[Row]:
    """Run a replication command; its error as a sentence naming ``slot``."""
    if not conn.replication:
        raise ValueError(f"{sql.split()[0]} needs a connection opened with replication=True")
    conn.send(m.query_message(sql))
    rows, error = conn.results()
    if error is not None:
        raise conn.error(error, slot=slot, statement=sql)
    return rows


def identify_system(conn: PgConnection) -> SystemIdentity:
    """IDENTIFY_SYSTEM: (system id, timeline, the current WAL flush position, database)."""
    systemid, timeline, xlogpos, dbname = _command(conn, "IDENTIFY_SYSTEM")[0]
    return SystemIdentity(str(systemid), int(timeline or 0), parse_lsn(xlogpos or "0/0"), dbname)


def slot_command(
    name: str, plugin: str, snapshot: Snapshot, temporary: bool, server_version_num: int
) -> str:
    """CREATE_REPLICATION_SLOT as the server's version writes it: ``(SNAPSHOT '...')`` from
    PostgreSQL 15 on, ``EXPORT_SNAPSHOT`` / ``USE_SNAPSHOT`` / ``NOEXPORT_SNAPSHOT`` before."""
    sql = f"CREATE_REPLICATION_SLOT {quote_ident(name)}"
    if temporary:
        sql += " TEMPORARY"
    sql += f" LOGICAL {quote_ident(plugin)}"
    if server_version_num >= NEW_SLOT_SYNTAX:
        return f"{sql} (SNAPSHOT {quote_literal(snapshot)})"
    return f"{sql} {_OLD_SNAPSHOT[snapshot]}"


def create_logical_slot(
    conn: PgConnection,
    name: str,
    plugin: str = "pgoutput",
    snapshot: Snapshot = "export",
    temporary: bool = False,
) -> CreatedSlot:
    """Create a logical replication slot. ``snapshot``: ``export`` names a snapshot other
    sessions may take (``SET TRANSACTION SNAPSHOT``) until this connection runs its next
    command; ``use`` makes it this session's (the command must then run in a REPEATABLE READ
    transaction begun on it); ``nothing`` makes none."""
    sql = slot_command(name, plugin, snapshot, temporary, conn.server_version_num)
    slot_name, point, snapshot_name, output = _command(conn, sql, slot=name)[0]
    return CreatedSlot(str(slot_name), parse_lsn(point or "0/0"), snapshot_name, str(output))


def drop_slot(conn: PgConnection, name: str, wait: bool = True) -> None:
    """DROP_REPLICATION_SLOT; ``wait``: wait until a process holding it lets it go rather than
    fail."""
    _command(conn, f"DROP_REPLICATION_SLOT {quote_ident(name)}{' WAIT' if wait else ''}", name)


def start_logical(
    conn: PgConnection,
    slot: str,
    start_lsn: int,
    options: Mapping[str, str],
    *,
    status_interval: float = 10.0,
    dead_after: float = 60.0,
    confirmed: int | None = None,
) -> ReplicationStream:
    """START_REPLICATION SLOT ``slot`` LOGICAL ``start_lsn`` with the output plugin's
    ``options`` (e.g. ``{"proto_version": "1", "publication_names": publication_names("p")}``)
    and enter CopyBoth mode. ``start_lsn`` 0 starts where the slot's confirmed position is;
    the stream reports ``start_lsn`` (or ``confirmed``, if lower) as confirmed until
    :meth:`ReplicationStream.confirm` says more."""
    sql = f"START_REPLICATION SLOT {quote_ident(slot)} LOGICAL {format_lsn(start_lsn)}"
    if options:
        pairs = ", ".join(f"{quote_ident(k)} {quote_literal(v)}" for k, v in options.items())
        sql += f" ({pairs})"
    if not conn.replication:
        raise ValueError("START_REPLICATION needs a connection opened with replication=True")
    conn.send(m.query_message(sql))
    while True:
        kind, body = conn.reader.read()
        if kind == m.COPY_BOTH:
            return ReplicationStream(
                conn, slot, start_lsn, status_interval=status_interval, dead_after=dead_after,
                confirmed=confirmed,
            )  # fmt: skip
        if kind == m.ERROR_RESPONSE:
            error = m.parse_error(body)
            if error.severity not in ("FATAL", "PANIC"):
                conn.results()  # up to ReadyForQuery: the session takes commands again
            raise conn.error(error, slot=slot, statement=sql)
