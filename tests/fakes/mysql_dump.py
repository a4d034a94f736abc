"""The binlog dump of the MySQL 8 test primary, as MySQL's dump thread (``Binlog_sender``) does it.

``COM_BINLOG_DUMP`` (pos u32, flags u16, server_id u32, file name) and ``COM_BINLOG_DUMP_GTID``
(flags u16, server_id u32, name length u32, name, pos u64, GTID set length u32, encoded set):
per file a fake ROTATE (timestamp 0, log_pos 0, LOG_EVENT_ARTIFICIAL_F, position and name), the
file's FORMAT_DESCRIPTION (in-use flag cleared; log_pos and create time 0 when the dump starts
past it), then the file's events from the position on, following ROTATEs into the next file;
when nothing is skipped, as packets framed once per file (:mod:`tests.fakes.mysql_frames`). A
GTID dump starts at the newest file whose PREVIOUS_GTIDS the replica has and skips each group
from a GTID (or tagged GTID) event in the replica's set, telling the position it skipped to
with a HEARTBEAT. At the end of the last file: EOF for BINLOG_DUMP_NON_BLOCK (or server id 0),
else a wait for new events with a HEARTBEAT (log_pos the end, the file name) each
``@source_heartbeat_period`` ns.
Every packet carries one event after a 0x00 byte.
"""

from __future__ import annotations

import struct
import time
import uuid
import zlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from tests.cases.mysql8 import events as ev
from tests.cases.mysql8.gtids import GtidSet, unvarlen
from tests.fakes.mysql_results import SqlError, eof_packet

if TYPE_CHECKING:
    from tests.fakes.mysql_primary import MySQLPrimary
    from tests.fakes.mysql_wire import Link

GTIDS = frozenset({ev.GTID, ev.GTID_TAGGED})
NON_BLOCK = 0x01
THROUGH_GTID = 0x04
FATAL = 1236
SEND_BYTES = 1 << 16  # per send


def _fatal(message: str) -> SqlError:
    return SqlError(FATAL, message)


def _with_crc(data: bytes, checksum: bool) -> bytes:
    if not checksum:
        return data
    size = len(data) + 4
    data = data[:9] + size.to_bytes(4, "little") + data[13:]
    return data + zlib.crc32(data).to_bytes(4, "little")


class Dump:
    """One dump thread: ``run`` sends until the end (or forever, blocking), raising SqlError."""

    def __init__(self, primary: MySQLPrimary, link: Link, session: dict[str, Any]) -> None:
        self.p, self.link, self.vars = primary, link, session["vars"]
        declared = str(self.vars.get("source_binlog_checksum",
                                     self.vars.get("master_binlog_checksum", "")))  # fmt: skip
        self.replica_crc = declared.upper() == "CRC32"
        self.replica_declared = bool(declared)
        period = self.vars.get("source_heartbeat_period", self.vars.get("master_heartbeat_period"))
        self.heartbeat = int(period or 0) / 1e9
        self.out = bytearray()

    def send(self, data: bytes) -> None:
        self.out += self.link.frame(b"\0" + data)
        if len(self.out) > SEND_BYTES:
            self.flush()

    def flush(self) -> None:
        if self.out:
            self.link.sock.sendall(self.out)
            self.out = bytearray()

    def by_position(self, payload: bytes) -> None:
        pos, flags, server_id = struct.unpack_from("<IHI", payload, 1)
        name = payload[11:].decode()
        self.run(name, pos, flags, server_id, None)

    def by_gtid(self, payload: bytes) -> None:
        flags, server_id, name_len = struct.unpack_from("<HII", payload, 1)
        name = payload[11 : 11 + name_len].decode()
        (pos,) = struct.unpack_from("<Q", payload, 11 + name_len)
        gtids = GtidSet()
        if flags & THROUGH_GTID:
            at = 11 + name_len + 12
            if payload[at + 7] and self.p.version_tuple < (8, 3):
                raise _fatal("Malformed GTID_set encoding.")  # a format MySQL 8.0 never wrote
            gtids = GtidSet.decode(payload, at)
        self.p.gtid_dumps.append(gtids.text())
        self.run(name, pos, flags, server_id, gtids)

    def _start_file(self, name: str, gtids: GtidSet | None) -> str:
        names = self.p.file_names()
        if name:
            if name not in names:
                raise _fatal("Could not find first log file name in binary log index file")
            return name
        if gtids is None:
            return names[0]
        if str(self.p.variable("gtid_mode")).upper() != "ON":
            raise _fatal("Request to dump GTID when @@GLOBAL.GTID_MODE <> ON.")
        executed = self.p.gtid_executed()
        if not gtids.issubset(executed, self.p.server_uuid()):
            raise _fatal(
                "Replica has more GTIDs than the source has, using the source's SERVER_UUID. "
                "This may indicate that the end of the binary log was truncated or that the "
                "last binary log file was lost, e.g., after a power or disk failure when "
                "sync_binlog != 1. The source may or may not have rolled back transactions that "
                "were already replicated to the replica. Suggest to replicate any transactions "
                "that source has rolled back from source to replica."
            )
        for candidate in reversed(names):
            if self.p.previous_gtids(candidate).issubset(gtids):
                return candidate
        missing = self.p.previous_gtids(names[0]).minus(gtids)
        raise _fatal(
            "Cannot replicate because the source purged required binary logs. Replicate the "
            "missing transactions from elsewhere, or provision a new replica from backup. "
            "Consider increasing the source's binary log expiration period. The GTID set sent "
            f"by the replica is '{gtids.text()}', and the missing transactions are "
            f"'{missing.text()}'."
        )

    def run(self, asked: str, pos: int, flags: int, server_id: int, gtids: GtidSet | None) -> None:
        name = self._start_file(asked, gtids)
        if gtids is not None and not asked:
            pos = max(pos, 4)
        if pos < 4:
            raise _fatal("Client requested source to start replication from position < 4")
        if pos > self.p.file_size(name):
            raise _fatal("Client requested source to start replication from position > file size")
        blocking = not (flags & NON_BLOCK or server_id == 0)
        first = True
        while True:
            items = self.p.files[name]
            fde = items[0][: int.from_bytes(items[0][9:13], "little")]
            checksum = fde[-5] == 1
            if checksum and not self.replica_declared:
                raise _fatal("Replica can not handle replication events with the checksum that "
                             "source is configured to log")  # fmt: skip
            self.send(self._fake_rotate(name, pos))
            skip_first = first and gtids is not None and self._first_gtid_in(items, gtids)
            self.send(self._description(fde, pos > 4 or skip_first, checksum))
            nxt = self._send_file(name, items, max(pos, len(fde) + 4), gtids, checksum, blocking)
            if nxt is None:
                self.flush()
                return
            name, pos, first = nxt, 4, False

    def _fake_rotate(self, name: str, pos: int) -> bytes:
        body = ev.rotate_body(name, pos)
        data = ev.HEADER.pack(0, ev.ROTATE, self.p.server_id, 19 + len(body), 0, ev.ARTIFICIAL)
        return _with_crc(data + body, self.replica_crc)

    def _description(self, fde: bytes, clear: bool, checksum: bool) -> bytes:
        data = bytearray(fde)
        data[17] &= ~ev.BINLOG_IN_USE & 0xFF
        if clear:
            data[13:17] = bytes(4)
            data[19 + 2 + 50 : 19 + 2 + 50 + 4] = bytes(4)
            if checksum:
                data[-4:] = zlib.crc32(bytes(data[:-4])).to_bytes(4, "little")
        return bytes(data)

    def _first_gtid_in(self, items: list[bytes], gtids: GtidSet) -> bool:
        for _, data in self.p.events_from(items, 4):
            if data[4] in GTIDS:
                return gtid_of(data) in gtids
        return False

    def _heartbeat(self, name: str, pos: int, checksum: bool) -> bytes:
        if self.p.heartbeat_v2 or pos > 0xFFFFFFFF:
            body = ev.heartbeat_v2_body(name, pos)
            head = ev.HEADER.pack(0, ev.HEARTBEAT_V2, self.p.server_id, 19 + len(body), 0, 0)
        else:
            body = name.encode()
            head = ev.HEADER.pack(0, ev.HEARTBEAT, self.p.server_id, 19 + len(body), pos, 0)
        return _with_crc(head + body, checksum)

    def _send_file(
        self, name: str, items: list[bytes], pos: int, gtids: GtidSet | None, checksum: bool,
        blocking: bool,
    ) -> str | None:  # fmt: skip
        """Send ``name`` from ``pos``; the next file's name, or None when the dump ends."""
        skipping, skipped_to = False, 0
        framed = None if gtids else self.p.framed(name, pos, self.link.seq, SEND_BYTES)
        if framed is not None:  # nothing to skip: the packets as framed once
            pieces, count, pos = framed
            self.flush()
            for piece in pieces:
                self.link.sock.sendall(piece)
            self.link.seq = (self.link.seq + count) & 0xFF
        cursor = self.p.events_from(items, pos)
        while True:
            for end, data in cursor:
                kind = data[4]
                if gtids is not None:
                    if kind in GTIDS:
                        skipping = gtid_of(data) in gtids
                    elif kind == ev.ROTATE:
                        skipping = False
                    if skipping:
                        skipped_to = end
                        continue
                    if skipped_to:
                        self.send(self._heartbeat(name, skipped_to, checksum))
                        skipped_to = 0
                self.send(data)
                pos = end
                if kind == ev.ROTATE and not data[17] & ev.ARTIFICIAL:
                    return ev_rotate_name(data, checksum)
            if skipping and skipped_to:
                self.send(self._heartbeat(name, skipped_to, checksum))
                pos, skipped_to = skipped_to, 0
            if name != self.p.file_names()[-1]:
                return self.p.file_names()[self.p.file_names().index(name) + 1]
            if not blocking:
                self.send_eof()
                return None
            self.flush()
            cursor = self._wait(name, items, pos, checksum)

    def send_eof(self) -> None:
        self.out += self.link.frame(eof_packet())

    def _wait(self, name: str, items: list[bytes], pos: int, checksum: bool) -> Iterator[
            tuple[int, bytes]]:  # fmt: skip
        """Wait for events past ``pos`` (or a new file), sending heartbeats meanwhile."""
        last = time.monotonic()
        with self.p.changed:
            while self.p.file_size(name) <= pos and self.p.file_names()[-1] == name:
                if self.p.closed:
                    raise ConnectionError("the primary closed")
                if not self.heartbeat:
                    self.p.changed.wait(0.5)
                    continue
                left = last + self.heartbeat - time.monotonic()
                if left > 0:
                    self.p.changed.wait(left)
                    continue
                beat = self._heartbeat(name, pos, checksum)
                self.link.sock.sendall(self.link.frame(b"\0" + beat))
                last = time.monotonic()
        return self.p.events_from(items, pos)


def gtid_of(data: bytes) -> tuple[str, int]:
    """(source, gno) of a GTID event; a tagged one's source is ``uuid:tag`` (its message: format
    version, size, last needed field, then fields 0 flags, 1 uuid, 2 gno, 3 tag by id)."""
    if data[4] != ev.GTID_TAGGED:
        return str(uuid.UUID(bytes=bytes(data[20:36]))), int.from_bytes(data[36:44], "little")
    p = unvarlen(data, unvarlen(data, 20)[1])[1]
    sid, gno, tag = b"", 0, ""
    while True:
        field, p = unvarlen(data, p)
        if field == 0:
            p = unvarlen(data, p)[1]
        elif field == 1:
            out = []
            for _ in range(16):
                byte, p = unvarlen(data, p)
                out.append(byte)
            sid = bytes(out)
        elif field == 2:
            gno, p = unvarlen(data, p)
            gno >>= 1
        elif field == 3:
            n, p = unvarlen(data, p)
            tag, p = bytes(data[p : p + n]).decode(), p + n
        else:
            break
    text = str(uuid.UUID(bytes=sid))
    return (f"{text}:{tag}" if tag else text), gno


def ev_rotate_name(data: bytes, checksum: bool) -> str:
    end = len(data) - (4 if checksum else 0)
    return bytes(data[27:end]).decode()
