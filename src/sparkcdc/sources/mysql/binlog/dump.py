"""Opening a binlog dump the way a MariaDB replica does, and the GTID position arithmetic.

A dump starts either at a file/position (``COM_BINLOG_DUMP`` with the file name) or at a GTID
position: ``SET @slave_connect_state='d-s-n,…'`` and an empty file name, after which the server
finds the file itself. Either way the stream opens with a fake ROTATE naming the file, then the
file's FORMAT_DESCRIPTION; in GTID mode an artificial GTID_LIST follows whose ``next_pos`` is the
byte position where the requested GTID position ends (used to resolve a GTID to file/pos).
Heartbeats (``@master_heartbeat_period``) arrive whenever the stream is idle, so a silent server
is told apart from a dead connection and idleness is noticed.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator

from sparkcdc.config.model import SourceConfig
from sparkcdc.core.errors import ConfigError
from sparkcdc.sources.mysql.binlog.protocol import ReplicationConnection
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
        conn.query("SET @master_binlog_checksum=@@global.binlog_checksum")
        conn.query("SET @mariadb_slave_capability=4")
        conn.query(f"SET @master_heartbeat_period={int(heartbeat * 1e9)}")
        if not file:
            conn.query(f"SET @slave_connect_state='{check_gtid(gtid)}'")
            conn.query("SET @slave_gtid_strict_mode=0")
        return conn, _with_read_timeout(conn, conn.dump(server_id, file, pos, idle), heartbeat)
    except BaseException:
        conn.close()
        raise


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


def check_gtid(gtid: str) -> str:
    """``gtid`` if it is a MariaDB GTID position (``domain-server-seq`` joined by commas)."""
    text = gtid.replace(" ", "")
    try:
        parse_gtid_pos(text)
    except ValueError:
        raise ConfigError(
            f"{gtid!r} is not a MariaDB GTID position; write domain-server-sequence numbers "
            "joined by commas, e.g. gtid:0-1-42.",
            key="source.startup",
        ) from None
    return text


def parse_gtid_pos(text: str) -> dict[int, tuple[int, int]]:
    """``"0-1-5,1-2-7"`` -> ``{domain: (server_id, seq)}`` (ValueError if malformed)."""
    state: dict[int, tuple[int, int]] = {}
    for part in filter(None, text.replace(" ", "").split(",")):
        domain, server, seq = (int(x) for x in part.split("-"))
        if min(domain, server, seq) < 0:
            raise ValueError(part)
        state[domain] = (server, seq)
    return state


def format_gtid_pos(state: dict[int, tuple[int, int]]) -> str:
    if len(state) == 1:  # one replication domain: the common case, once per transaction
        ((d, (s, n)),) = state.items()
        return f"{d}-{s}-{n}"
    return ",".join(f"{d}-{s}-{n}" for d, (s, n) in sorted(state.items()))
