"""The fake source's offsets: a transaction's sequence number in the fake log."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

import pyarrow as pa

from sparkcdc.core.offset import Offset, OffsetJSON


@dataclass(frozen=True, eq=False)
class FakeOffset(Offset):
    """Before transaction ``seq`` of the fake log (``skip`` of its changes delivered).

    Its position is ``(seq, 0)``; the log record of the transaction's change ``i`` is at
    ``(seq, i + 1)``, so every change of transaction ``seq`` lies after the offset ``seq``."""

    SOURCE_FIELDS = (pa.field("txn", pa.int64()), pa.field("change", pa.int32()))
    EVENT_COUNTER = "change"

    seq: int
    skip: int = 0

    @property
    def position_key(self) -> tuple[int, int]:
        return (self.seq, 0)

    def with_skip(self, skip: int) -> FakeOffset:
        return replace(self, skip=skip)

    def to_json(self) -> OffsetJSON:
        return {"seq": self.seq, "skip": self.skip}

    @classmethod
    def from_json(cls, value: Mapping[str, object]) -> FakeOffset:
        try:
            return cls(int(str(value["seq"])), int(str(value.get("skip", 0))))
        except (KeyError, ValueError) as exc:
            raise ValueError(f"not a fake offset: {value!r}") from exc

    def source_fields(self) -> dict[str, object]:
        return {"txn": self.seq, "change": None}

    def __str__(self) -> str:
        return f"txn {self.seq}" + (f"+{self.skip}" if self.skip else "")
