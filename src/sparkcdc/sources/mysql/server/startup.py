"""Where a new pipeline starts reading the binary log (``source.startup``).

==========================  ===============================================================
``earliest``                the oldest binlog file still on the server, position 4
``latest``                  the end of the log now (``SHOW MASTER STATUS``; MySQL 8.2+:
                            ``SHOW BINARY LOG STATUS``)
``gtid:<d-s-n[,...]>``      right after that MariaDB GTID position, or MySQL GTID set
``gtid:<uuid:1-n[,...]>``   (``uuid:first-last``, MySQL 8.3+ also ``uuid:tag:first-last``, as
                            ``@@gtid_executed`` prints it), resolved to file/pos: a GTID dump opens
                            with a fake ROTATE (the file), and once the server has skipped
                            what the position covers the next transaction's GTID event (or
                            MariaDB's artificial GTID_LIST, whose ``next_pos`` is where the
                            next transaction starts) says where
``position:<file>:<pos>``   that file and byte position; the file must still be on the server
                            and ``pos`` must start an event outside any transaction
``timestamp:<epoch-ms>``    the first transaction committed at or after that instant: the file
                            is found from the first GTID event of each binlog file (newest to
                            oldest), then the log is walked from there to the first GTID event
                            whose timestamp (the commit time in MariaDB) is >= the instant;
                            past the end of the log it is ``latest``
==========================  ===============================================================

Every resolved offset is a transaction boundary (``skip == 0``) with a file name, so offsets of
a pipeline always compare by (file, pos). Binlog timestamps have one-second resolution. On MySQL
an offset inside a file carries no GTID set (MySQL has no ``BINLOG_GTID_POS``); the stream adds
the GTIDs it reads to whatever set it started with.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from sparkcdc.config.model import SourceConfig
from sparkcdc.core.errors import ConfigError, LogPositionGone, SourceError
from sparkcdc.sources.mysql.binlog import events as ev
from sparkcdc.sources.mysql.binlog.dump import open_dump, probe_server_id
from sparkcdc.sources.mysql.binlog.gtid import check_gtid
from sparkcdc.sources.mysql.offset import BinlogOffset
from sparkcdc.sources.mysql.server.catalog import MySQLCatalog

_ARTIFICIAL = 0x20  # LOG_EVENT_ARTIFICIAL_F: made up by the dump thread, not in the file
# events that may start at a transaction boundary (anything else lies inside a transaction)
_BOUNDARY_EVENTS = frozenset(
    {*ev.TRANSACTION_STARTS, ev.GTID_LIST, ev.BINLOG_CHECKPOINT, ev.ROTATE,
     ev.FORMAT_DESCRIPTION, ev.MYSQL_PREVIOUS_GTIDS, 3}
)  # fmt: skip
_PROBE_HEARTBEAT = 0.5


def resolve_startup(catalog: MySQLCatalog, source: SourceConfig, startup: str) -> BinlogOffset:
    """The offset ``startup`` names (see the module docstring); ConfigError if it is not one."""
    mode, _, arg = startup.strip().partition(":")
    mode = mode.lower()
    if mode == "earliest" and not arg:
        return catalog.earliest_offset()
    if mode == "latest" and not arg:
        return catalog.current_offset()
    if mode == "gtid" and arg:
        return resolve_gtid(source, check_gtid(arg))
    if mode == "position" and arg:
        file, _, pos = arg.rpartition(":")
        if file and pos.isdigit():
            return resolve_position(catalog, source, file, int(pos))
    if mode == "timestamp" and arg.strip().isdigit():
        return resolve_timestamp(catalog, source, int(arg))
    raise ConfigError(
        f"source.startup {startup!r} is not a start mode; use earliest, latest, "
        "gtid:<domain-server-seq,...> (MySQL: gtid:<uuid:first-last,...>, tagged: "
        "gtid:<uuid:tag:first-last,...>), "
        "position:<file>:<pos> or timestamp:<epoch-ms>.",
        key="source.startup",
    )


@contextlib.contextmanager
def _probe(
    source: SourceConfig, file: str, pos: int, gtid: str = ""
) -> Iterator[Iterator[tuple[ev.EventHeader, bytes]]]:
    """A short-lived dump (its own server id) yielding (header, event) pairs."""
    conn, stream = open_dump(
        source, probe_server_id(source), file, pos, gtid, heartbeat=_PROBE_HEARTBEAT
    )
    try:
        yield ((ev.parse_header(data), data) for events in stream for data in events)
    finally:
        conn.close()


def resolve_gtid(source: SourceConfig, gtid: str) -> BinlogOffset:
    """The file/pos right after GTID position ``gtid`` (LogPositionGone if the server lacks it)."""
    try:
        with _probe(source, "", 4, gtid) as stream:
            file = ""
            for header, data in stream:
                if header.type == ev.ROTATE:
                    file = ev.parse_rotate(data, None)[0]
                elif header.type == ev.GTID_LIST and header.flags & _ARTIFICIAL:
                    return BinlogOffset(file, header.next_pos, gtid=gtid)
                elif header.type in ev.TRANSACTION_STARTS:
                    return BinlogOffset(file, header.next_pos - header.size, gtid=gtid)
                elif header.type in ev.HEARTBEATS and header.next_pos:
                    return BinlogOffset(file, header.next_pos, gtid=gtid)
    except LogPositionGone as exc:
        raise LogPositionGone(
            f"the server's binlog does not hold GTID position {gtid} (purged, or never written "
            "there); start with startup: earliest or a GTID position inside the binlog.",
            gtid=gtid,
            detail=str(exc),
        ) from exc
    raise SourceError(
        f"the server ended the binlog stream while looking for GTID position {gtid}; "
        "check the server's error log and try again."
    )


def resolve_position(
    catalog: MySQLCatalog, source: SourceConfig, file: str, pos: int
) -> BinlogOffset:
    """``file:pos`` checked against the server: the file exists, pos is an event boundary
    outside any transaction and within the file."""
    files = dict(catalog.binlog_files())
    if file not in files:
        oldest = next(iter(files), "none")
        raise LogPositionGone(
            f"binlog file {file} is not on {catalog.address} (oldest: {oldest}); it was purged "
            "or never existed: start with startup: earliest or a position listed by "
            "SHOW BINARY LOGS.",
            file=file,
            pos=pos,
        )
    if not 4 <= pos <= files[file]:
        raise ConfigError(
            f"source.startup position {pos} lies outside {file} (4..{files[file]}); use a "
            "position shown by SHOW BINLOG EVENTS.",
            key="source.startup",
        )
    if pos < files[file]:
        _check_boundary(source, file, pos)
    return BinlogOffset(file, pos, gtid=catalog.gtid_pos_at(file, pos))


def _check_boundary(source: SourceConfig, file: str, pos: int) -> None:
    bad = ConfigError(
        f"source.startup position {file}:{pos} is not the start of a transaction; use the "
        "position of a GTID event shown by SHOW BINLOG EVENTS.",
        key="source.startup",
    )
    try:
        with _probe(source, file, pos) as stream:
            for header, _ in stream:
                if header.flags & _ARTIFICIAL or header.next_pos == 0:
                    continue  # the fake ROTATE / FORMAT_DESCRIPTION of a dump
                if header.type in ev.HEARTBEATS or header.type in _BOUNDARY_EVENTS:
                    return
                raise bad
    except LogPositionGone:
        raise bad from None


def _first_commit_ts(source: SourceConfig, file: str) -> int | None:
    """Timestamp (s) of the first transaction in ``file``; None if it holds none."""
    with _probe(source, file, 4) as stream:
        for header, _ in stream:
            if header.type in ev.TRANSACTION_STARTS:
                return header.timestamp
            if header.type in ev.HEARTBEATS:
                return None
            if header.type == ev.ROTATE and not header.flags & _ARTIFICIAL:
                return None
    return None


def resolve_timestamp(catalog: MySQLCatalog, source: SourceConfig, ms: int) -> BinlogOffset:
    """The boundary before the first transaction committed at or after ``ms`` (epoch ms)."""
    files = [name for name, _ in catalog.binlog_files()]
    start = files[0] if files else ""
    for name in reversed(files):
        ts = _first_commit_ts(source, name)
        if ts is not None and ts * 1000 < ms:
            start = name
            break
    if not start:
        return catalog.current_offset()
    with _probe(source, start, 4) as stream:
        file = start
        for header, data in stream:
            if header.type == ev.ROTATE:
                file = ev.parse_rotate(data, None)[0]
            elif header.type in ev.TRANSACTION_STARTS and header.timestamp * 1000 >= ms:
                pos = header.next_pos - header.size
                return BinlogOffset(file, pos, gtid=catalog.gtid_pos_at(file, pos))
            elif header.type in ev.HEARTBEATS:
                break
    return catalog.current_offset()
