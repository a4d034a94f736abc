"""MySQL GTID sets for the test world: text (``uuid:1-5:7,uuid2:1-3``, sids sorted as MySQL
prints them) and the encoded form of PREVIOUS_GTIDS and COM_BINLOG_DUMP_GTID (libbinlogevents'
``Gtid_set::encode``: sid count u64; per sid its 16 bytes, interval count u64, then start and
exclusive end i64 per interval)."""

from __future__ import annotations

import re
import struct
import uuid as uuidlib

_NORMAL: dict[str, str] = {}


def sid_bytes(sid: str) -> bytes:
    return uuidlib.UUID(sid).bytes


def normal(sid: str) -> str:
    """``sid`` as MySQL prints it (lower case, dashed)."""
    out = _NORMAL.get(sid)
    if out is None:
        out = _NORMAL[sid] = str(uuidlib.UUID(sid))
    return out


class GtidSet:
    """Per source uuid, sorted disjoint intervals ``[first, last]``."""

    def __init__(self, text: str = "") -> None:
        self.spans: dict[str, list[list[int]]] = {}
        for part in filter(None, re.sub(r"\s", "", text).split(",")):
            sid, *ranges = part.split(":")
            for span in ranges:
                first, _, last = span.partition("-")
                self.add_range(sid, int(first), int(last or first))

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

    def issubset(self, other: GtidSet, sid: str | None = None) -> bool:
        """Whether every transaction of this set (of ``sid`` only, if given) is in ``other``."""
        for s, spans in self.spans.items():
            if sid is not None and s != sid:
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
        """As MySQL prints a GTID set (``@@gtid_executed`` separates sids with ``",\\n"``)."""
        return separator.join(
            sid + "".join(f":{lo}" if lo == hi else f":{lo}-{hi}" for lo, hi in spans)
            for sid, spans in sorted(self.spans.items())
            if spans
        )

    def __str__(self) -> str:
        return self.text()

    def encoded(self) -> bytes:
        spans = {s: v for s, v in sorted(self.spans.items()) if v}
        out = [struct.pack("<Q", len(spans))]
        for sid, intervals in spans.items():
            out.append(sid_bytes(sid) + struct.pack("<Q", len(intervals)))
            out.extend(struct.pack("<qq", lo, hi + 1) for lo, hi in intervals)
        return b"".join(out)

    @classmethod
    def decode(cls, data: bytes, p: int = 0) -> GtidSet:
        out = cls()
        (count,) = struct.unpack_from("<Q", data, p)
        p += 8
        for _ in range(count):
            sid = str(uuidlib.UUID(bytes=bytes(data[p : p + 16])))
            (n,) = struct.unpack_from("<Q", data, p + 16)
            p += 24
            for _ in range(n):
                lo, end = struct.unpack_from("<qq", data, p)
                out.add_range(sid, lo, end - 1)
                p += 16
        return out
