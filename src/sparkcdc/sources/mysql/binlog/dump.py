"""Opening a binlog dump the way a replica of each flavour does.

A dump starts either at a file/position (``COM_BINLOG_DUMP`` with the file name) or at a GTID
position. MariaDB: ``SET @slave_connect_state='d-s-n,…'`` and an empty file name, after which
the server finds the file itself and sends an artificial GTID_LIST whose ``next_pos`` is where
the requested position ends. MySQL: ``COM_BINLOG_DUMP_GTID`` with the GTID set, after which the
server skips every transaction in the set. Either way the stream opens with a fake ROTATE
naming the file, then the file's FORMAT_DESCRIPTION. Heartbeats (``@master_heartbeat_period``,
MySQL 8 also ``@source_heartbeat_period``) arrive whenever the stream is idle, so a silent server
is told apart from a dead connection and idleness is noticed.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator

from sparkcdc.config.model import SourceConfig
from sparkcdc.core.errors import ConfigError
from sparkcdc.sources.mysql.binlog.gtid import GtidSet, check_gtid, is_mysql_gtid
from sparkcdc.sources.mysql.binlog.protocol import ReplicationConnection
from sparkcdc.sources.mysql.server.flavour import is_mariadb
from sparkcdc.sources.mysql.settings import MySQLSettings

HEARTBEAT_SECONDS = 1.0


def open_dump(
    source: SourceConfig,
    server_id: int,
    file: str,
    pos: int,
    gtid: str = "",
    heartbeat: float = HEARTBEAT_SECONDS,
    idle: Callable[[], None] | None = None,
) -> tuple[ReplicationConnection, Iterator[list[bytes]]]:
    """A connected replication session and the iterator of raw events from ``file:pos``
    (or from GTID position ``gtid`` when ``file`` is empty), in lists of the events received
    whole; ``idle`` is called whenever no complete event is buffered (see
    :meth:`ReplicationConnection.dump`)."""
    conn = ReplicationConnection(source)
    try:
        mariadb = is_mariadb(conn.server_version)
        period = int(heartbeat * 1e9)
        conn.query("SET @master_binlog_checksum=@@global.binlog_checksum")
        conn.query(f"SET @master_heartbeat_period={period}")
        gtid_set = None
        if not file:
            gtid = _flavoured_gtid(gtid, mariadb, conn.server_version)
        if mariadb:
            conn.query("SET @mariadb_slave_capability=4")
            if not file:
                conn.query(f"SET @slave_connect_state='{gtid}'")
                conn.query("SET @slave_gtid_strict_mode=0")
        else:  # MySQL 8.0.26+ reads the source_ names, older ones the master_ names
            conn.query("SET @source_binlog_checksum=@@global.binlog_checksum")
            conn.query(f"SET @source_heartbeat_period={period}")
            if not file:
                gtid_set = GtidSet.parse(gtid).encoded()
        events = conn.dump(server_id, file, pos, idle, gtid_set)
        return conn, _with_read_timeout(conn, events, heartbeat)
    except BaseException:
        conn.close()
        raise


def _flavoured_gtid(gtid: str, mariadb: bool, version: str) -> str:
    """``gtid`` checked, and written the way the server's flavour writes GTID positions (a
    tagged MySQL GTID set only to MySQL 8.3+, the first to know tags)."""
    text = check_gtid(gtid)
    if text and is_mysql_gtid(text) == mariadb:
        server, form = (
            ("MariaDB", "domain-server-sequence, e.g. 0-1-42")
            if mariadb
            else ("MySQL", "a GTID set, e.g. 3e11fa47-71ca-11e1-9e33-c80aa9429562:1-77")
        )
        raise ConfigError(
            f"source.startup gtid:{gtid} is not a {server} GTID position, and the server is "
            f"{server} {version}; write {form}.",
            key="source.startup",
        )
    if text and not mariadb and GtidSet.parse(text).tagged and _release(version) < (8, 3):
        raise ConfigError(
            f"source.startup gtid:{gtid} holds tagged GTIDs (uuid:tag:n), which MySQL "
            f"{version} does not know (tags came with MySQL 8.3); write the set the server's "
            "@@gtid_executed shows.",
            key="source.startup",
        )
    return text


def _release(version: str) -> tuple[int, int]:
    """(major, minor) of a server version text (``8.4.3-log`` -> (8, 4))."""
    parts = [int("".join(c for c in x if c.isdigit()) or 0) for x in version.split(".")[:2]]
    major, minor = (*parts, 0, 0)[:2]
    return major, minor


def _with_read_timeout(
    conn: ReplicationConnection, events: Iterator[list[bytes]], heartbeat: float
) -> Iterator[list[bytes]]:
    """The dump's events; once streaming, a read waiting 10 heartbeats means a dead link."""
    for data in events:
        conn.set_timeout(max(10.0, heartbeat * 10))
        yield data
        break
    yield from events


def probe_server_id(source: SourceConfig) -> int:
    """A server id for short look-ups that never collides with the reader's own dump (the
    server drops an older dump connection that registers with the same id)."""
    server_id = MySQLSettings.of(source).server_id
    return 0x40000000 + (server_id * 7919 + random.randrange(1 << 20)) % (1 << 29)
