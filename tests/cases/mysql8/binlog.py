"""A MySQL 8 binlog writer: files as lists of events, with the positions, GTIDs, logical clock
and checksums MySQL 8.0 writes.

A file is the magic ``\\xfebin`` then FORMAT_DESCRIPTION (flagged in use while the file is the
last one), PREVIOUS_GTIDS (the GTID set of all files before, in the tagged format once it holds a
tag), transactions, and a ROTATE naming the next file when it is closed. A transaction is GTID
(GTID_TAGGED for a ``uuid:tag`` source, MySQL 8.3+; ANONYMOUS_GTID without), QUERY ``BEGIN``, per
statement a TABLE_MAP and its rows events, XID; a DDL is GTID and the QUERY (atomic DDL: no
BEGIN/XID). Compressed (``binlog_transaction_compression=ON``), everything after the GTID event
goes into one TRANSACTION_PAYLOAD as a zstd frame of the inner events, which MySQL writes with
log position 0 and no CRC32 of their own. ``sequence_number`` counts the transactions of a file
from 1; ``last_committed`` is the one before (commit order).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

import zstandard

from tests.cases.mysql8 import events as ev
from tests.cases.mysql8.columns import Table
from tests.cases.mysql8.gtids import GtidSet, normal, sid_bytes
from tests.cases.mysql8.tablemap import TableLayout

Change = tuple[str, Table, Any, Any]  # ("c"|"u"|"d", table, before row, after row)
Gtid = tuple[str, int] | None  # (source: uuid or uuid:tag, gno); None: anonymous
_ROWS = {"c": ev.WRITE_ROWS, "u": ev.UPDATE_ROWS, "d": ev.DELETE_ROWS}
ANONYMOUS_SID = bytes(16)
_BEGIN = ev.query_body("", "BEGIN")
_SIDS: dict[str, tuple[str, bytes]] = {}


def _sid(uuid: str) -> tuple[str, bytes]:
    known = _SIDS.get(uuid)
    if known is None:
        known = _SIDS[uuid] = (normal(uuid), sid_bytes(uuid))
    return known


def version_number(version: str) -> int:
    """``8.0.36`` -> 80036 (the GTID event's server version)."""
    major, minor, patch = (int(re.sub(r"\D.*", "", x) or 0) for x in version.split(".")[:3])
    return major * 10000 + minor * 100 + patch


def next_name(name: str) -> str:
    stem, _, number = name.rpartition(".")
    return f"{stem}.{int(number) + 1:0{len(number)}d}"


class BinlogWriter:
    """Writes binlog files into :attr:`files` (name -> events, in order; a file's first event
    is at position 4). ``previous_gtids`` is what files before the first held (purged);
    ``created`` the FORMAT_DESCRIPTION's create time (``start``; 0 in files after a rotation)."""

    def __init__(
        self,
        name: str = "binlog.000001",
        *,
        version: str = "8.0.36",
        server_id: int = 1,
        checksum: bool = True,
        row_metadata: str = "FULL",
        start: float = 1_700_000_000.0,
        tick: float = 0.001,
        previous_gtids: GtidSet | str = "",
        compression_level: int = 3,
        created: int | None = None,
    ) -> None:
        self.version, self.server_id, self.checksum = version, server_id, checksum
        self.row_metadata = row_metadata
        self.server_version = version_number(version)
        self.now, self.tick = start, tick
        self.gtid_executed = GtidSet(previous_gtids) if isinstance(previous_gtids, str) else \
            previous_gtids.copy()  # fmt: skip
        self.files: dict[str, list[bytes]] = {}
        self.xid = 100
        self._layouts: dict[int, tuple[Table, TableLayout]] = {}
        self._zstd = zstandard.ZstdCompressor(level=compression_level)
        visibility = self.server_version >= 80023
        self._visibility = visibility
        self._open(name, created=int(start) if created is None else created)

    # -- files ----------------------------------------------------------------------------

    def _open(self, name: str, created: int) -> None:
        self.name, self.pos, self.sequence = name, 4, 0
        self.events: list[bytes] = []
        self.files[name] = self.events
        now = int(self.now)
        body = ev.format_description(self.version, created) + bytes([1 if self.checksum else 0])
        fde = bytearray(self.write(ev.FORMAT_DESCRIPTION, body, now, crc=True))
        fde[17] |= ev.BINLOG_IN_USE  # MySQL's CRC32 of the FDE leaves this flag out
        self.events[0] = bytes(fde)
        self.write(ev.PREVIOUS_GTIDS, ev.previous_gtids(self.gtid_executed), now)

    def rotate(self, name: str | None = None) -> str:
        """Close the file with a ROTATE and open the next one (named ``name`` or the next
        number); its name."""
        name = name or next_name(self.name)
        self.write(ev.ROTATE, ev.rotate_body(name), int(self.now))
        self.events[0] = clear_in_use(self.events[0])  # as the server does closing the file
        self._open(name, created=0)
        return name

    def write(
        self, type_code: int, body: bytes, timestamp: int, flags: int = 0, crc: bool | None = None
    ) -> bytes:
        """Append one event to the current file (its next position the file's new end)."""
        checksum = self.checksum if crc is None else crc
        end = self.pos + 19 + len(body) + (4 if checksum else 0)
        data = ev.event(type_code, body, timestamp, self.server_id, end, flags, checksum)
        self.events.append(data)
        self.pos = end
        return data

    def append(self, raw: Iterable[bytes]) -> None:
        """Append events made elsewhere as they are (their positions are the caller's)."""
        for data in raw:
            self.events.append(data)
            self.pos += len(data)

    # -- transactions ---------------------------------------------------------------------

    def layout(self, table: Table) -> TableLayout:
        known = self._layouts.get(id(table))
        if known is None or known[0] is not table:
            known = self._layouts[id(table)] = (table, TableLayout(table, self.row_metadata,
                                                                   self._visibility))  # fmt: skip
        return known[1]

    def _clock(self, timestamp: float | None) -> float:
        if timestamp is None:
            self.now += self.tick
            return self.now
        self.now = max(self.now, timestamp)
        return timestamp

    def statements(self, changes: Sequence[Change]) -> list[tuple[int, bytes]]:
        """(type, body) of the TABLE_MAP and rows events of ``changes``: one statement per run
        of changes of one kind to one table."""
        out: list[tuple[int, bytes]] = []
        i = 0
        while i < len(changes):
            kind, table = changes[i][0], changes[i][1]
            layout = self.layout(table)
            images = []
            while i < len(changes) and changes[i][0] == kind and changes[i][1] is table:
                _, _, before, after = changes[i]
                if kind == "c":
                    images.append(layout.image(after))
                elif kind == "d":
                    images.append(layout.image(before))
                else:
                    images.append(layout.image(before) + layout.image(after))
                i += 1
            out.append((ev.TABLE_MAP, layout.table_map_body))
            out += [(_ROWS[kind], body) for body in layout.rows_bodies(kind, images)]
        return out

    def transaction(
        self, changes: Sequence[Change], gtid: Gtid = None, compressed: bool = False,
        timestamp: float | None = None,
    ) -> list[bytes]:  # fmt: skip
        """Write one transaction (GTID or anonymous, BEGIN, statements, XID); its events."""
        self.xid += 1
        inner = [(ev.QUERY, _BEGIN), *self.statements(changes), (ev.XID, ev.xid_body(self.xid))]
        return self._group(inner, gtid, compressed, self._clock(timestamp), 0)

    def ddl(
        self, gtid: Gtid, db: str, sql: str, timestamp: float | None = None
    ) -> list[bytes]:  # fmt: skip
        """Write a DDL statement: GTID (may-have-statements flag) and its QUERY; its events."""
        self.xid += 1
        inner = [(ev.QUERY, ev.query_body(db, sql, ddl_xid=self.xid))]
        return self._group(inner, gtid, False, self._clock(timestamp), ev.FLAG_MAY_HAVE_SBR)

    def _group(
        self, inner: list[tuple[int, bytes]], gtid: Gtid, compressed: bool, t: float,
        gtid_flags: int,
    ) -> list[bytes]:  # fmt: skip
        ts, us = int(t), int(round(t * 1_000_000))
        crc = 4 if self.checksum else 0
        if compressed:
            raw = b"".join(ev.event(k, body, ts, self.server_id, 0, 0, False) for k, body in inner)
            inner = [(ev.TRANSACTION_PAYLOAD, ev.payload_body(self._zstd.compress(raw), len(raw)))]
        rest = sum(19 + len(body) + crc for _, body in inner)
        self.sequence += 1
        if gtid is None:
            kind, sid, gno, tag = ev.ANONYMOUS_GTID, ANONYMOUS_SID, 0, ""
        else:
            text, sid = _sid(gtid[0])
            kind, gno, tag = ev.GTID, gtid[1], text.partition(":")[2]
            self.gtid_executed.add(text, gno)
        if tag:
            if self.server_version < 80300:
                raise ValueError(f"MySQL {self.version} writes no tagged GTID ({text}:{gno})")
            kind = ev.GTID_TAGGED

            def body_of(length: int) -> bytes:
                return ev.gtid_tagged_body(sid, tag, gno, self.sequence - 1, self.sequence, us,
                                           length, self.server_version, gtid_flags)  # fmt: skip
        else:

            def body_of(length: int) -> bytes:
                return ev.gtid_body(sid, gno, self.sequence - 1, self.sequence, us, length,
                                    self.server_version, gtid_flags)  # fmt: skip

        if tag:  # the transaction's length counts its GTID event: until it stays put
            length = rest
            while length != rest + 19 + len(body_of(length)) + crc:
                length = rest + 19 + len(body_of(length)) + crc
        else:
            length = rest + ev.gtid_event_size(rest, self.checksum)
            length = rest + ev.gtid_event_size(length, self.checksum)
        out = [self.write(kind, body_of(length), ts)]
        out += [self.write(k, b, ts) for k, b in inner]
        return out


def clear_in_use(fde: bytes) -> bytes:
    """A FORMAT_DESCRIPTION without the in-use flag (its CRC32 never covers the flag)."""
    return fde[:17] + bytes([fde[17] & ~ev.BINLOG_IN_USE & 0xFF]) + fde[18:]
