"""MySQL GTID sets for the test world: text (``uuid:1-5:7:tag:1-3,uuid2:1-3``, uuids sorted, each
with its untagged intervals then its tags in order, as MySQL prints them) and the encoded form
of PREVIOUS_GTIDS and COM_BINLOG_DUMP_GTID (``Gtid_set::encode``): a source count u64; per source
its 16 bytes, interval count u64, then start and exclusive end i64 per interval. MySQL 8.3+
writes a set holding a tag in its tagged format: the count's first and last bytes are 1 with
the count in the 6 between, and every uuid is followed by its tag (length as a
mysql::serialization variable-length integer, then the characters; 0 for none).

A *source* is ``uuid`` for untagged transactions and ``uuid:tag`` for tagged ones."""

from __future__ import annotations

import re
import struct
import uuid as uuidlib

_NORMAL: dict[str, str] = {}
TAGGED = 1  # the format byte of the tagged encoding


def sid_bytes(sid: str) -> bytes:
    return uuidlib.UUID(sid.split(":")[0]).bytes


def normal(sid: str) -> str:
    """``sid`` (a source: ``uuid`` or ``uuid:tag``) as MySQL prints it: uuid lower case and
    dashed, tag lower case."""
    out = _NORMAL.get(sid)
    if out is None:
        uuid, _, tag = sid.partition(":")
        out = str(uuidlib.UUID(uuid)) + (f":{tag.lower()}" if tag else "")
        _NORMAL[sid] = out
    return out


def varlen(n: int) -> bytes:
    """``n`` as a mysql::serialization unsigned variable-length integer: the byte count in the
    low bits of the first byte (count - 1 ones, then a zero), then the value, little-endian."""
    size = next((k for k in range(1, 9) if n < 1 << (7 * k)), 9)
    if size == 9:
        return b"\xff" + n.to_bytes(8, "little")
    return ((n << size) | ((1 << (size - 1)) - 1)).to_bytes(size, "little")


def unvarlen(data: bytes, p: int) -> tuple[int, int]:
    size = 1
    while size < 9 and data[p] >> (size - 1) & 1:
        size += 1
    raw = int.from_bytes(data[p : p + size], "little")
    return raw >> min(size, 8), p + size


class GtidSet:
    """Per source, sorted disjoint intervals ``[first, last]``."""

    def __init__(self, text: str = "") -> None:
        self.spans: dict[str, list[list[int]]] = {}
        for part in filter(None, re.sub(r"\s", "", text).split(",")):
            uuid, *items = part.split(":")
            source = uuid
            for item in items:
                if not item[0].isdigit():
                    source = f"{uuid}:{item}"
                    continue
                first, _, last = item.partition("-")
                self.add_range(source, int(first), int(last or first))

    def add(self, sid: str, gno: int) -> None:
        sid = normal(sid)
        spans = self.spans.setdefault(sid, [])
        if spans and spans[-1][1] + 1 == gno:
            spans[-1][1] = gno
        elif not spans or spans[-1][1] < gno:
            spans.append([gno, gno])
        else:
            self.add_range(sid, gno, gno)

    def add_range(self, sid: str, first: int, last: int) -> None:
        sid = normal(sid)
        spans = sorted([*self.spans.get(sid, []), [first, last]])
        merged: list[list[int]] = []
        for lo, hi in spans:
            if merged and lo <= merged[-1][1] + 1:
                merged[-1][1] = max(merged[-1][1], hi)
            else:
                merged.append([lo, hi])
        self.spans[sid] = merged

    def update(self, other: GtidSet) -> None:
        for sid, spans in other.spans.items():
            for lo, hi in spans:
                self.add_range(sid, lo, hi)

    def copy(self) -> GtidSet:
        out = GtidSet()
        out.update(self)
        return out

    def __contains__(self, gtid: tuple[str, int]) -> bool:
        sid, gno = gtid
        return any(lo <= gno <= hi for lo, hi in self.spans.get(normal(sid), ()))

    def __bool__(self) -> bool:
        return any(self.spans.values())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, GtidSet) and self.text() == other.text()

    def __hash__(self) -> int:
        return hash(self.text())

    @property
    def tagged(self) -> bool:
        return any(":" in s for s, v in self.spans.items() if v)

    def issubset(self, other: GtidSet, sid: str | None = None) -> bool:
        """Whether every transaction of this set (of ``sid``'s uuid only, if given) is in
        ``other``."""
        for s, spans in self.spans.items():
            if sid is not None and s.split(":")[0] != sid:
                continue
            theirs = other.spans.get(s, [])
            for lo, hi in spans:
                if not any(a <= lo and hi <= b for a, b in theirs):
                    return False
        return True

    def minus(self, other: GtidSet) -> GtidSet:
        out = GtidSet()
        for sid, spans in self.spans.items():
            for lo, hi in spans:
                for gno in range(lo, hi + 1):
                    if (sid, gno) not in other:
                        out.add(sid, gno)
        return out

    def text(self, separator: str = ",") -> str:
        """As MySQL prints a GTID set (``@@gtid_executed`` separates uuids with ``",\\n"``)."""
        by_uuid: dict[str, str] = {}
        for sid, spans in sorted(self.spans.items()):
            if not spans:
                continue
            uuid, _, tag = sid.partition(":")
            intervals = "".join(f":{lo}" if lo == hi else f":{lo}-{hi}" for lo, hi in spans)
            by_uuid[uuid] = by_uuid.get(uuid, uuid) + (f":{tag}" if tag else "") + intervals
        return separator.join(by_uuid.values())

    def __str__(self) -> str:
        return self.text()

    def encoded(self) -> bytes:
        spans = {s: v for s, v in sorted(self.spans.items()) if v}
        tagged = self.tagged
        if tagged:
            out = [bytes([TAGGED]) + len(spans).to_bytes(6, "little") + bytes([TAGGED])]
        else:
            out = [struct.pack("<Q", len(spans))]
        for sid, intervals in spans.items():
            tag = sid.partition(":")[2].encode()
            out.append(sid_bytes(sid) + (varlen(len(tag)) + tag if tagged else b""))
            out.append(struct.pack("<Q", len(intervals)))
            out.extend(struct.pack("<qq", lo, hi + 1) for lo, hi in intervals)
        return b"".join(out)

    @classmethod
    def decode(cls, data: bytes, p: int = 0) -> GtidSet:
        out = cls()
        tagged = data[p + 7] == TAGGED
        count = int.from_bytes(data[p + 1 : p + 7] if tagged else data[p : p + 8], "little")
        p += 8
        for _ in range(count):
            sid = str(uuidlib.UUID(bytes=bytes(data[p : p + 16])))
            p += 16
            if tagged:
                n, p = unvarlen(data, p)
                sid += f":{bytes(data[p : p + n]).decode()}" if n else ""
                p += n
            (n,) = struct.unpack_from("<Q", data, p)
            p += 8
            for _ in range(n):
                lo, end = struct.unpack_from("<qq", data, p)
                out.add_range(sid, lo, end - 1)
                p += 16
        return out
