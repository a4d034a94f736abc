"""Binlogs that real MySQL servers wrote (``<repo>/../shared/mysql-binlogs``, see its
PROVENANCE.md), made ready to be served by the MySQL 8 test primary.

``files/`` hold whole binlog files, ``events/`` single events or event bodies. What the test
primary serves is the file's bytes with three changes, each leaving every other byte as the
server wrote it:

- tables kept in the ``mysql`` schema, which a pipeline never captures, are moved to ``myapp``
  (same length) in the QUERY events (default database, updated-databases status variable) and
  the TABLE_MAP events, with the CRC32 recomputed;
- the closing ROTATE is left out (the primary serves one file and waits at its end);
- a relay log is turned back into the binlog its source wrote: the source's FORMAT_DESCRIPTION,
  the PREVIOUS_GTIDS, then the source's events, which carry its positions (the relay log's own
  header events, ROTATEs and closing STOP left out).
"""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

from sparkcdc.sources.mysql.binlog import events as ev

REAL = Path(__file__).resolve().parents[3].parent / "shared" / "mysql-binlogs"
RELAY_LOG = 0x40  # LOG_EVENT_RELAY_LOG_F: written by a replica into its relay log
SERVED = "binlog.000001"


def file_bytes(name: str) -> bytes:
    """The bytes of ``files/<name>``; FileNotFoundError naming where they were looked for."""
    path = REAL / "files" / name
    if not path.exists():
        raise FileNotFoundError(f"{path}: the real MySQL binlogs are kept beside the checkout")
    return path.read_bytes()


def event_bytes(name: str) -> bytes:
    return (REAL / "events" / name).read_bytes()


def split_file(data: bytes) -> list[bytes]:
    """The events of a binlog file (after its magic ``\\xfebin``), by their sizes."""
    if data[:4] != b"\xfebin":
        raise ValueError("not a binlog file")
    out, p = [], 4
    while p < len(data):
        size = int.from_bytes(data[p + 9 : p + 13], "little")
        out.append(data[p : p + size])
        p += size
    return out


def description(events: list[bytes]) -> ev.FormatDescription:
    """The file's FORMAT_DESCRIPTION (the last one before any other event)."""
    found = [e for e in events if e[4] == ev.FORMAT_DESCRIPTION]
    return ev.parse_format_description(found[-1])


def with_crc(data: bytes, checksum: bool) -> bytes:
    """``data`` (an event ending in its CRC32 when ``checksum``) with the CRC32 recomputed."""
    if not checksum:
        return data
    return data[:-4] + zlib.crc32(data[:-4]).to_bytes(4, "little")


def renamed(data: bytes, fd: ev.FormatDescription, old: bytes, new: bytes) -> bytes:
    """A QUERY or TABLE_MAP event with database ``old`` renamed ``new`` (same length)."""
    assert len(old) == len(new)
    out = bytearray(data)
    start = fd.header_len
    if data[4] == ev.QUERY:
        db_len = data[start + 8]
        status_len = struct.unpack_from("<H", data, start + 11)[0]
        status = start + fd.post_header_len(ev.QUERY)
        db = status + status_len
        out[status:db] = bytes(out[status:db]).replace(old + b"\0", new + b"\0")
        if bytes(out[db : db + db_len]) == old:
            out[db : db + db_len] = new
    elif data[4] == ev.TABLE_MAP:
        at = start + fd.post_header_len(ev.TABLE_MAP)
        if data[at] == len(old) and data[at + 1 : at + 1 + len(old)] == old:
            out[at + 1 : at + 1 + len(old)] = new
    return with_crc(bytes(out), fd.checksum) if out != data else data


def source_binlog(events: list[bytes]) -> list[bytes]:
    """The binlog a relay log's events came from (module docstring)."""
    descriptions = [i for i, e in enumerate(events) if e[4] == ev.FORMAT_DESCRIPTION]
    source_fd = descriptions[-1]
    fd = ev.parse_format_description(events[source_fd])
    previous = bytearray(next(e for e in events if e[4] == ev.MYSQL_PREVIOUS_GTIDS))
    previous[17] &= ~RELAY_LOG & 0xFF
    kept = [e for e in events[source_fd + 1 :] if e[4] not in (ev.ROTATE, 3)]  # 3: STOP
    return [events[source_fd], with_crc(bytes(previous), fd.checksum), *kept]


def served_events(name: str, relay_log: bool = False) -> list[bytes]:
    """The events of ``files/<name>`` as the test primary serves them (module docstring)."""
    events = split_file(file_bytes(name))
    if relay_log:
        events = source_binlog(events)
    fd = description(events)
    events = [renamed(e, fd, b"mysql", b"myapp") for e in events]
    if events[-1][4] == ev.ROTATE:
        events = events[:-1]
    return events


def end_of(events: list[bytes]) -> int:
    """The position after the last event (its next position)."""
    return int.from_bytes(events[-1][13:17], "little")


# demo.movies of mysql-bin.compressed and osheroff_payload.body: its columns (INT id and year,
# VARCHARs of utf8mb4: 256 characters but actors' 1024 and director's 512) and the row their
# transaction updates (genre "Western" to "Western|Action"), as the originating test prints it
MOVIE_COLUMNS = ("id", "title", "year", "country", "genre", "actors", "director", "composer",
                 "screenwriter", "cinematographer", "production_company")  # fmt: skip
MOVIE_LENGTHS = {"actors": 1024, "director": 512}
ONCE_UPON_A_TIME = dict(zip(MOVIE_COLUMNS, [
    1, "Once Upon a Time in the West", 1968, "Italy", "Western",
    "Claudia Cardinale|Charles Bronson|Henry Fonda|Gabriele Ferzetti|Frank Wolff|Al Mulock|"
    "Jason Robards|Woody Strode|Jack Elam|Lionel Stander|Paolo Stoppa|Keenan Wynn|Aldo Sambrell",
    "Sergio Leone", "Ennio Morricone", "Sergio Leone|Sergio Donati|Dario Argento|Bernardo "
    "Bertolucci", "Tonino Delli Colli", "Paramount Pictures"], strict=True))  # fmt: skip
