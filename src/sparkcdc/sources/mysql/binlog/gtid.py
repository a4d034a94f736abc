"""GTID positions of both binlog flavours, as text and as the dump commands want them.

=========  ====================================  =============================================
flavour    text                                  meaning
=========  ====================================  =============================================
MariaDB    ``domain-server-seq[,…]``             the last transaction of each replication
                                                 domain (``@@gtid_binlog_pos``)
MySQL      ``uuid:1-100:105-107[,uuid2:1-7]``    every transaction executed, as intervals of
                                                 sequence numbers per source uuid
                                                 (``@@gtid_executed``, a GTID set)
=========  ====================================  =============================================

:class:`GtidSet` is MySQL's set: :meth:`~GtidSet.add` extends the last interval in the common
case (transactions of one server arrive in order), and :meth:`~GtidSet.encoded` is the form
``COM_BINLOG_DUMP_GTID`` sends (libbinlogevents' ``Gtid_set::encode``: sid count u64; per sid its
16 bytes, interval count u64, then start and exclusive end i64 per interval).
"""

from __future__ import annotations

import re
import struct
import uuid as uuidlib

from sparkcdc.core.errors import ConfigError

_UUID = re.compile(r"^[0-9a-fA-F]{8}(-?[0-9a-fA-F]{4}){3}-?[0-9a-fA-F]{12}$")


def parse_mariadb_gtid(text: str) -> dict[int, tuple[int, int]]:
    """``"0-1-5,1-2-7"`` -> ``{domain: (server_id, seq)}`` (ValueError if malformed)."""
    state: dict[int, tuple[int, int]] = {}
    for part in filter(None, text.replace(" ", "").split(",")):
        domain, server, seq = (int(x) for x in part.split("-"))
        if min(domain, server, seq) < 0:
            raise ValueError(part)
        state[domain] = (server, seq)
    return state


def format_mariadb_gtid(state: dict[int, tuple[int, int]]) -> str:
    if len(state) == 1:  # one replication domain: the common case, once per transaction
        ((d, (s, n)),) = state.items()
        return f"{d}-{s}-{n}"
    return ",".join(f"{d}-{s}-{n}" for d, (s, n) in sorted(state.items()))


class GtidSet:
    """A MySQL GTID set: per source uuid, sorted disjoint intervals ``[first, last]``."""

    __slots__ = ("intervals", "_text", "_only")

    def __init__(self) -> None:
        self.intervals: dict[str, list[list[int]]] = {}
        self._text: str | None = ""
        self._only: list[int] | None = None  # the interval, while the set is one interval

    @classmethod
    def parse(cls, text: str) -> GtidSet:
        """The set ``text`` names (ValueError if it is not a GTID set)."""
        gset = cls()
        for part in filter(None, re.sub(r"\s", "", text).split(",")):
            sid, *ranges = part.split(":")
            if not _UUID.match(sid) or not ranges:
                raise ValueError(part)
            sid = str(uuidlib.UUID(sid))
            for span in ranges:
                first, _, last = span.partition("-")
                lo, hi = int(first), int(last or first)
                if not 0 < lo <= hi:
                    raise ValueError(span)
                gset._add_interval(sid, lo, hi)
        return gset

    def add(self, sid: str, gno: int) -> None:
        """Add transaction ``sid:gno``."""
        spans = self.intervals.get(sid)
        if spans is None:
            self.intervals[sid] = [[gno, gno]]
            self._only = None
        elif spans[-1][1] + 1 == gno:
            spans[-1][1] = gno  # the next transaction of this server: the common case
        else:
            self._add_interval(sid, gno, gno)
        self._text = None

    def add_new(self, sid: str, gno: int) -> str | None:
        """Add transaction ``sid:gno`` unless the set has it: the set's text after, or None."""
        spans = self.intervals.get(sid)
        if spans is not None:
            last = spans[-1]
            if last[1] + 1 == gno:  # the next transaction of this server: the common case
                last[1] = gno
                if last is self._only:  # the set is this one interval
                    text = self._text = f"{sid}:{last[0]}-{gno}"
                    return text
                self._text = None
                return self.text()
        if (sid, gno) in self:
            return None
        self.add(sid, gno)
        return self.text()

    def _add_interval(self, sid: str, lo: int, hi: int) -> None:
        spans = [*self.intervals.get(sid, []), [lo, hi]]
        spans.sort()
        merged: list[list[int]] = []
        for first, last in spans:
            if merged and first <= merged[-1][1] + 1:
                merged[-1][1] = max(merged[-1][1], last)
            else:
                merged.append([first, last])
        self.intervals[sid] = merged
        self._text = self._only = None

    def __contains__(self, gtid: tuple[str, int]) -> bool:
        sid, gno = gtid
        spans = self.intervals.get(sid)
        if not spans or gno > spans[-1][1]:
            return False  # the common case: a transaction newer than any seen
        return any(lo <= gno <= hi for lo, hi in spans)

    def text(self) -> str:
        """``uuid:1-5:7,…`` with uuids sorted, as MySQL prints ``@@gtid_executed``."""
        if self._text is None and len(self.intervals) == 1:
            ((sid, spans),) = self.intervals.items()
            if len(spans) == 1:  # one server, no gap
                self._only = spans[0]
                lo, hi = spans[0]
                self._text = f"{sid}:{lo}" if lo == hi else f"{sid}:{lo}-{hi}"
        if self._text is None:
            self._text = ",".join(
                sid + "".join(f":{lo}" if lo == hi else f":{lo}-{hi}" for lo, hi in spans)
                for sid, spans in sorted(self.intervals.items())
            )
        return self._text

    def copy(self) -> GtidSet:
        other = GtidSet()
        other.intervals = {sid: [list(s) for s in spans] for sid, spans in self.intervals.items()}
        other._text = self._text
        return other

    @classmethod
    def decode(cls, data: bytes, p: int) -> GtidSet:
        """The set encoded at ``data[p:]`` (a PREVIOUS_GTIDS event's body, or the form
        :meth:`encoded` writes)."""
        gset = cls()
        (count,) = struct.unpack_from("<Q", data, p)
        p += 8
        for _ in range(count):
            sid = str(uuidlib.UUID(bytes=bytes(data[p : p + 16])))
            (spans,) = struct.unpack_from("<Q", data, p + 16)
            p += 24
            for _ in range(spans):
                lo, end = struct.unpack_from("<qq", data, p)
                gset._add_interval(sid, lo, end - 1)
                p += 16
        return gset

    def update(self, other: GtidSet) -> None:
        """Add every transaction of ``other``."""
        for sid, spans in other.intervals.items():
            for lo, hi in spans:
                self._add_interval(sid, lo, hi)

    def encoded(self) -> bytes:
        """The set as ``COM_BINLOG_DUMP_GTID`` carries it (module docstring)."""
        out = [struct.pack("<Q", len(self.intervals))]
        for sid, spans in sorted(self.intervals.items()):
            out.append(uuidlib.UUID(sid).bytes + struct.pack("<Q", len(spans)))
            out.extend(struct.pack("<qq", lo, hi + 1) for lo, hi in spans)
        return b"".join(out)


def is_mysql_gtid(text: str) -> bool:
    """Whether ``text`` is written as a MySQL GTID set (``uuid:…``) rather than MariaDB's."""
    return ":" in text


def check_gtid(gtid: str) -> str:
    """``gtid`` normalised, if it is a MariaDB GTID position or a MySQL GTID set."""
    text = re.sub(r"\s", "", gtid)
    try:
        if is_mysql_gtid(text):
            return GtidSet.parse(text).text()
        parse_mariadb_gtid(text)
    except ValueError:
        raise ConfigError(
            f"{gtid!r} is neither a MariaDB GTID position (domain-server-sequence numbers "
            "joined by commas, e.g. gtid:0-1-42) nor a MySQL GTID set (uuid:first-last "
            "joined by commas, e.g. gtid:3e11fa47-71ca-11e1-9e33-c80aa9429562:1-77).",
            key="source.startup",
        ) from None
    return text
