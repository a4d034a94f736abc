"""Converters for pipeline settings: each takes the raw YAML value and its full key path and
returns the typed value or raises a :class:`~sparkcdc.core.errors.ConfigError` naming the key."""

from __future__ import annotations

import re
from typing import Any, NoReturn

from sparkcdc.core.errors import ConfigError

STARTUP_FORMS = (
    "earliest",
    "latest",
    "gtid:<domain-server-seq[,...]>",
    "position:<binlog file>:<pos>",
    "timestamp:<epoch milliseconds>",
)
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]i?B|[KMGT]|B)?\s*$", re.I)
_UNITS = {"": 1, "B": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|min|h)?\s*$", re.I)
_SECONDS = {"": 1.0, "ms": 0.001, "s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0}
_GTID = re.compile(r"^\d+-\d+-\d+(,\s*\d+-\d+-\d+)*$")
_POSITION = re.compile(r"^position:(?P<file>.+\.\d+):(?P<pos>\d+)$")


def fail(key: str, problem: str) -> NoReturn:
    """Raise ``ConfigError("<key>: <problem>.")``."""
    raise ConfigError(f"{key}: {problem}.", key=key)


def as_text(value: Any, key: str) -> str:
    if isinstance(value, (dict, list)):
        kind = "mapping" if isinstance(value, dict) else "list"
        fail(key, f"must be a single value, not a {kind}")
    return "" if value is None else str(value)


def as_int(value: Any, key: str) -> int:
    text = as_text(value, key).strip()
    if not re.fullmatch(r"[+-]?\d+", text):
        fail(key, f"{text!r} is not a whole number")
    return int(text)


def as_size(value: Any, key: str) -> int:
    """``64MB``, ``512KiB``, ``1GB`` or a plain number of bytes."""
    text = as_text(value, key)
    match = _SIZE.match(text)
    if not match:
        fail(key, f"{text!r} is not a size; use e.g. 64MB")
    unit = (match.group(2) or "").upper().replace("IB", "").rstrip("B") or ""
    size = int(float(match.group(1)) * _UNITS[unit])
    if size <= 0:
        fail(key, f"{text!r} is not a positive size; use e.g. 64MB")
    return size


def as_duration(value: Any, key: str) -> float:
    """``500ms``, ``1s``, ``2m``, ``1h`` or a plain number of seconds."""
    text = as_text(value, key)
    match = _DURATION.match(text)
    if not match:
        fail(key, f"{text!r} is not a duration; use e.g. 1s, 500ms or 2m")
    return float(match.group(1)) * _SECONDS[(match.group(2) or "").lower()]


def as_patterns(value: Any, key: str) -> tuple[str, ...]:
    """A list of regular expressions over ``db.table``, each of which must compile."""
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not items:
        fail(key, "must be a list of regular expressions over db.table, e.g. ['shop\\..*']")
    out = []
    for i, item in enumerate(items):
        text = as_text(item, f"{key}[{i}]")
        try:
            re.compile(text)
        except re.error as exc:
            fail(f"{key}[{i}]", f"{text!r} is not a regular expression ({exc})")
        out.append(text)
    return tuple(out)


def as_startup(value: Any, key: str) -> str:
    """earliest | latest | gtid:<pos> | position:<file>:<pos> | timestamp:<epoch ms>."""
    text = as_text(value, key).strip()
    lower = text.lower()
    if lower in ("earliest", "latest"):
        return lower
    if lower.startswith("gtid:") and _GTID.match(text[5:].strip()):
        return "gtid:" + re.sub(r"\s+", "", text[5:])
    position = _POSITION.match(text)
    if position and int(position.group("pos")) >= 4:
        return text
    if lower.startswith("timestamp:") and text[10:].isdigit():
        return text
    fail(key, f"{text!r} is not a startup mode; use one of {', '.join(STARTUP_FORMS)}")
