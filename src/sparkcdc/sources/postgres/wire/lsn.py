"""Log sequence numbers: the 64-bit WAL positions PostgreSQL prints as two hex halves, ``X/Y``
(``pg_lsn``'s text form, and the form the Streaming Replication Protocol's commands take)."""

from __future__ import annotations

import re

MAX_LSN = (1 << 64) - 1
_LSN = re.compile(r"([0-9A-Fa-f]{1,8})/([0-9A-Fa-f]{1,8})")


def parse_lsn(text: str) -> int:
    """``"16/B374D848"`` -> ``0x16B374D848``; ValueError for anything else."""
    match = _LSN.fullmatch(text.strip())
    if match is None:
        raise ValueError(f"{text!r} is not a log sequence number (X/Y, in hexadecimal)")
    return int(match[1], 16) << 32 | int(match[2], 16)


def format_lsn(lsn: int) -> str:
    """``0x16B374D848`` -> ``"16/B374D848"``, upper-case hex as PostgreSQL prints it."""
    if not 0 <= lsn <= MAX_LSN:
        raise ValueError(f"{lsn} is not a log sequence number (0 to 2**64-1)")
    return f"{lsn >> 32:X}/{lsn & 0xFFFFFFFF:X}"
