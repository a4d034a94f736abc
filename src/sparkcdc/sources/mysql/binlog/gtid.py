"""GTID positions of both binlog flavours, as text and as the dump commands want them.

=========  ======================================  ===========================================
flavour    text                                    meaning
=========  ======================================  ===========================================
MariaDB    ``domain-server-seq[,…]``               the last transaction of each replication
                                                   domain (``@@gtid_binlog_pos``)
MySQL      ``uuid:1-100:105[:tag:1-7][,uuid2:…]``  every transaction executed, as intervals of
                                                   sequence numbers per source uuid and, MySQL
                                                   8.3+, per tag of that source (a tag names
                                                   the intervals after it; ``@@gtid_executed``)
=========  ======================================  ===========================================

:class:`GtidSet` is MySQL's set, keyed by *source*: ``uuid`` for untagged transactions, ``uuid:tag``
for tagged ones (tags are lower case, a letter or ``_`` then up to 31 letters, digits or ``_``).
:meth:`~GtidSet.add` extends the last interval in the common case (transactions of one server
arrive in order). :meth:`~GtidSet.encoded` is the form ``COM_BINLOG_DUMP_GTID`` sends and a
PREVIOUS_GTIDS event holds (``Gtid_set::encode``): the count of sources as u64, then per source
its 16 uuid bytes, its interval count u64, then start and exclusive end i64 per interval. With a
tag in the set (MySQL 8.3+) the count's first and last bytes are the format, 1 (the count in the
6 bytes between), and each uuid is followed by its tag: length (a variable-length integer,
:mod:`.serialized`), then the characters (length 0: untagged).
"""

from __future__ import annotations

import re
import struct
import uuid as uuidlib

from sparkcdc.core.errors import ConfigError
from sparkcdc.sources.mysql.binlog.serialized import read_varlen, varlen

_UUID = re.compile(r"^[0-9a-fA-F]{8}(-?[0-9a-fA-F]{4}){3}-?[0-9a-fA-F]{12}$")
_TAG = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,31}$")
_SPAN = re.compile(r"^(\d+)(?:-(\d+))?$")
_TAGGED = 1  # the format byte of an encoded set with tags


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
    """A MySQL GTID set: per source (``uuid`` or ``uuid:tag``), sorted disjoint intervals
    ``[first, last]``."""

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
            sid, *items = part.split(":")
            if not _UUID.match(sid) or not items:
                raise ValueError(part)
            source = sid = str(uuidlib.UUID(sid))
            spans = 0  # intervals after the last tag (a tag must be followed by one)
            for item in items:
                span = _SPAN.match(item)
                if span is None:
                    if not _TAG.match(item) or (source != sid and not spans):
                        raise ValueError(item)
                    source, spans = f"{sid}:{item.lower()}", 0
                    continue
                lo, hi = int(span.group(1)), int(span.group(2) or span.group(1))
                if not 0 < lo <= hi:
                    raise ValueError(item)
                gset._add_interval(source, lo, hi)
                spans += 1
            if not spans:
                raise ValueError(part)
        return gset

    @property
    def tagged(self) -> bool:
        """Whether a tagged GTID (MySQL 8.3+) is in the set."""
        return any(":" in source for source in self.intervals)

    def add(self, sid: str, gno: int) -> None:
        """Add transaction ``sid:gno`` (``sid``: a source, ``uuid`` or ``uuid:tag``)."""
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
        """``uuid:1-5:7:tag:1-3,…`` as MySQL prints ``@@gtid_executed``: uuids sorted, each with
        its untagged intervals, then its tags in order, each with its intervals."""
        if self._text is None and len(self.intervals) == 1:
            ((sid, spans),) = self.intervals.items()
            if len(spans) == 1:  # one server, no gap
                self._only = spans[0]
                lo, hi = spans[0]
                self._text = f"{sid}:{lo}" if lo == hi else f"{sid}:{lo}-{hi}"
        if self._text is None:
            groups: dict[str, list[str]] = {}
            for source, spans in sorted(self.intervals.items()):  # "uuid" before "uuid:tag"
                sid, _, tag = source.partition(":")
                texts = "".join(f":{lo}" if lo == hi else f":{lo}-{hi}" for lo, hi in spans)
                groups.setdefault(sid, [sid]).append(f":{tag}{texts}" if tag else texts)
            self._text = ",".join("".join(parts) for parts in groups.values())
        return self._text

    def copy(self) -> GtidSet:
        other = GtidSet()
        other.intervals = {sid: [list(s) for s in spans] for sid, spans in self.intervals.items()}
        other._text = self._text
        return other

    @classmethod
    def decode(cls, data: bytes, p: int, end: int | None = None) -> GtidSet:
        """The set encoded at ``data[p:end]`` (a PREVIOUS_GTIDS event's body, or the form
        :meth:`encoded` writes, either format); ValueError if it is not one."""
        end = len(data) if end is None else end
        if p + 8 > end:
            raise ValueError("fewer than 8 bytes, where the count of sources is")
        tagged = data[p + 7]
        if tagged == _TAGGED and data[p] == _TAGGED:
            count = int.from_bytes(data[p + 1 : p + 7], "little")
        elif tagged == 0:
            count = int.from_bytes(data[p : p + 8], "little")
        else:
            raise ValueError(f"the format byte is {tagged}; 0 (untagged) and 1 (tagged) are known")
        gset, p = cls(), p + 8
        for _ in range(count):
            if p + 16 > end:
                raise ValueError(f"the set ends within its sources ({count} announced)")
            source = str(uuidlib.UUID(bytes=bytes(data[p : p + 16])))
            p += 16
            if tagged:
                length, p = read_varlen(data, p, end)
                tag = bytes(data[p : p + length]).decode("ascii", "replace").lower()
                if length and not _TAG.match(tag):
                    raise ValueError(f"{tag!r} is not a GTID tag")
                source, p = (f"{source}:{tag}" if tag else source), p + length
            if p + 8 > end:
                raise ValueError("the set ends where an interval count is")
            (spans,) = struct.unpack_from("<Q", data, p)
            p += 8
            if p + 16 * spans > end:
                raise ValueError(f"the set ends within the {spans} intervals of {source}")
            for _ in range(spans):
                lo, stop = struct.unpack_from("<qq", data, p)
                if not 0 < lo < stop:
                    raise ValueError(f"[{lo}, {stop}) is not an interval of transactions")
                gset._add_interval(source, lo, stop - 1)
                p += 16
        return gset

    def update(self, other: GtidSet) -> None:
        """Add every transaction of ``other``."""
        for sid, spans in other.intervals.items():
            for lo, hi in spans:
                self._add_interval(sid, lo, hi)

    def encoded(self) -> bytes:
        """The set as ``COM_BINLOG_DUMP_GTID`` carries it (module docstring): the untagged format
        unless a tag is in the set, which only MySQL 8.3+ reads."""
        count, items, tagged = len(self.intervals), sorted(self.intervals.items()), self.tagged
        if tagged:
            out = [bytes([_TAGGED]) + count.to_bytes(6, "little") + bytes([_TAGGED])]
        else:
            out = [struct.pack("<Q", count)]
        for source, spans in items:
            sid, _, tag = source.partition(":")
            out.append(uuidlib.UUID(sid).bytes)
            if tagged:
                out.append(varlen(len(tag)) + tag.encode())
            out.append(struct.pack("<Q", len(spans)))
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
            "joined by commas, e.g. gtid:0-1-42) nor a MySQL GTID set (uuid:first-last, "
            "tagged intervals after their tag, sources joined by commas, e.g. "
            "gtid:3e11fa47-71ca-11e1-9e33-c80aa9429562:1-77:mytag:1-5).",
            key="source.startup",
        ) from None
    return text
