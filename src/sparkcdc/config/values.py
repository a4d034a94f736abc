"""Converters for pipeline settings: each takes the raw YAML value and its full key path and
returns the typed value or raises a :class:`~sparkcdc.core.errors.ConfigError` naming the key."""

from __future__ import annotations

import math
import re
import ssl
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

from sparkcdc.config.model import (
    TLS_MODES,
    HeartbeatConfig,
    SourceSettings,
    TlsConfig,
)
from sparkcdc.core.errors import ConfigError
from sparkcdc.core.table_name import WRITE_IT, written_problem

MAX_ROWS = 2**31 - 1
MAX_PARALLELISM = 64
STARTUP_FORMS = ("initial", "snapshot", "earliest", "latest")
"""The startup forms of every source; each adds its own (:attr:`SourceSettings.STARTUP_FORMS`)."""
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]i?B|[KMGT]|B)?\s*$", re.I)
_UNITS = {"": 1, "B": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|min|h|d)?\s*$", re.I)
_SECONDS = {"": 1.0, "ms": 0.001, "s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0, "d": 86400.0}


def fail(key: str, problem: str) -> NoReturn:
    """Raise ``ConfigError("<key>: <problem>.")``."""
    raise ConfigError(f"{key}: {problem}.", key=key)


def as_text(value: object, key: str) -> str:
    if isinstance(value, (dict, list)):
        kind = "mapping" if isinstance(value, dict) else "list"
        fail(key, f"must be a single value, not a {kind}")
    return "" if value is None else str(value)


_TRUE, _FALSE = ("true", "yes", "on"), ("false", "no", "off")


def as_bool(value: object, key: str) -> bool:
    """A switch: true/false (also yes/no, on/off), as YAML writes it."""
    text = as_text(value, key).strip().lower()
    if text not in _TRUE + _FALSE:
        fail(key, f"{text!r} is neither true nor false; use true or false")
    return text in _TRUE


def as_int(value: object, key: str) -> int:
    text = as_text(value, key).strip()
    if not re.fullmatch(r"[+-]?\d+", text):
        fail(key, f"{text!r} is not a whole number")
    return int(text)


def ranged(low: int, high: int) -> Callable[[object, str], int]:
    """A converter to a whole number within ``low..high``."""

    def convert(value: object, key: str) -> int:
        number = as_int(value, key)
        if not low <= number <= high:
            fail(key, f"{number} is out of range; use {low}..{high}")
        return number

    return convert


def as_number(value: object, key: str) -> float:
    """A finite decimal number such as ``0.05``, ``1000`` or ``1e3``."""
    text = as_text(value, key).strip()
    try:
        number = float(text)
    except ValueError:
        number = math.nan
    if not math.isfinite(number):
        fail(key, f"{text!r} is not a number; use e.g. 0.05 or 1000")
    return number


def as_size(value: object, key: str) -> int:
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


def as_duration(value: object, key: str) -> float:
    """``500ms``, ``1s``, ``2m``, ``1h``, ``7d`` or a plain number of seconds."""
    text = as_text(value, key)
    match = _DURATION.match(text)
    if not match:
        fail(key, f"{text!r} is not a duration; use e.g. 1s, 500ms or 2m")
    return float(match.group(1)) * _SECONDS[(match.group(2) or "").lower()]


def as_patterns(value: object, key: str) -> tuple[str, ...]:
    """A list of regular expressions over ``db.table``, each of which must compile."""
    if not value:
        fail(key, "must be a list of regular expressions over db.table, e.g. ['shop\\..*']")
    return as_regexes(value, key, "db.table, e.g. ['shop\\..*']")


def as_regexes(value: object, key: str, what: str) -> tuple[str, ...]:
    """A list (maybe empty; one alone need not be listed) of regular expressions over
    ``what``, each of which must compile."""
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list):
        fail(key, f"must be a list of regular expressions over {what}")
    out = []
    for i, item in enumerate(items):
        text = as_text(item, f"{key}[{i}]")
        try:
            re.compile(text)
        except re.error as exc:
            fail(f"{key}[{i}]", f"{text!r} is not a regular expression ({exc})")
        out.append(text)
    return tuple(out)


def as_startup(value: object, key: str, settings: type[SourceSettings] = SourceSettings) -> str:
    """initial | snapshot | earliest | latest, or one of the source's own forms
    (:meth:`SourceSettings.startup`)."""
    text = as_text(value, key).strip()
    lower = text.lower()
    if lower in STARTUP_FORMS:
        return lower
    own = settings.startup(text)
    if own is not None:
        return own
    forms = (*STARTUP_FORMS, *settings.STARTUP_FORMS)
    fail(key, f"{text!r} is not a startup mode; use one of {', '.join(forms)}")


def as_table_name(value: object, key: str) -> str:
    """One table written as ``db.table`` (the text form of :mod:`sparkcdc.core.table_name`)."""
    text = as_text(value, key).strip()
    problem = written_problem(text)
    if problem:
        fail(key, f"{text!r} {problem}; {WRITE_IT}")
    return text


def as_signal_table(value: object, key: str) -> str:
    """The signal table, written as ``db.table`` without quotes."""
    text = as_table_name(value, key)
    if "`" in text:
        fail(key, f"{text!r} holds a backtick; write the names unquoted, as db.table")
    return text


def capturing_signal_table(tables: tuple[str, ...], signal_table: str | None) -> tuple[str, ...]:
    """``tables`` with the signal table added when none of the patterns captures it (its rows
    reach the pipeline through the change stream)."""
    if signal_table is None or any(re.fullmatch(t, signal_table) for t in tables):
        return tables
    return (*tables, re.escape(signal_table))


def as_key_columns(value: object, key: str) -> dict[str, tuple[str, ...]]:
    """``{"db.table": [col, ...]}``; a single column may be given without the list."""
    if not isinstance(value, dict):
        fail(key, 'must map "db.table" to a list of columns, e.g. {"shop.log": [id]}')
    out: dict[str, tuple[str, ...]] = {}
    for table, cols in value.items():
        where = f"{key}.{table}"
        problem = written_problem(table)
        if problem:
            fail(where, f"{table!r} {problem}; {WRITE_IT}")
        if isinstance(cols, str):
            cols = [cols]
        if not isinstance(cols, list) or not cols:
            fail(where, "must be a non-empty list of column names")
        names = tuple(as_text(c, f"{where}[{i}]") for i, c in enumerate(cols))
        for i, name in enumerate(names):
            if not name.strip():
                fail(f"{where}[{i}]", "is empty; give a column name")
        out[table] = names
    return out


def as_window(value: object, key: str) -> float:
    """An incremental snapshot's window length: a duration from 0 (one round of chunks per
    window) to 60 seconds."""
    seconds = as_duration(value, key)
    if seconds > 60:
        fail(key, f"{seconds:g}s is longer than 60s; use e.g. 300ms")
    return seconds


def as_heartbeat(value: object, key: str) -> HeartbeatConfig:
    """``source.heartbeat``: a mapping of ``interval`` and ``action_query``, or an interval
    alone (see :class:`~sparkcdc.config.model.HeartbeatConfig`)."""
    fields = value if isinstance(value, dict) else {"interval": value}
    unknown = sorted(set(fields) - {"interval", "action_query"})
    if unknown:
        fail(key, f"{unknown[0]!r} is not one of its keys; use interval and action_query")
    interval, query = fields.get("interval"), fields.get("action_query")
    return heartbeat_of(interval, query, f"{key}.interval", f"{key}.action_query")


def heartbeat_of(
    interval: object, query: object, interval_key: str, query_key: str
) -> HeartbeatConfig:
    """The heartbeat of ``interval`` (a duration; None or 0: off) and ``query`` (None: no
    action query), each named by its key in errors."""
    seconds = 0.0 if interval is None else as_duration(interval, interval_key)
    sql = None if query is None else as_text(query, query_key).strip()
    if sql == "":
        fail(query_key, "is empty; write the statement to run at each heartbeat or leave it out")
    if sql is not None and not seconds:
        fail(
            query_key,
            f"runs at each heartbeat, and {interval_key} is off; set it too, e.g. 10s",
        )
    return HeartbeatConfig(seconds, sql)


def as_tls(value: object, key: str) -> TlsConfig:
    """``source.tls``: a mode, or a mapping of ``mode`` and the ``ca``, ``cert``, ``key``
    file paths (see :class:`~sparkcdc.config.model.TlsConfig`)."""
    fields = value if isinstance(value, dict) else {"mode": value}
    unknown = sorted(set(fields) - {"mode", "ca", "cert", "key"})
    if unknown:
        raise ConfigError(
            f"{key}: unknown key {unknown[0]!r}; use mode, ca, cert and key.", key=key
        )
    mode = as_text(fields.get("mode", "preferred"), f"{key}.mode").lower().replace("_", "-")
    if mode not in TLS_MODES:
        raise ConfigError(
            f"{key}.mode: {mode!r} is not a TLS mode; use one of {', '.join(TLS_MODES)}.",
            key=f"{key}.mode",
        )
    paths = {name: fields.get(name) for name in ("ca", "cert", "key")}
    for name, path in paths.items():
        if path is not None and not Path(as_text(path, f"{key}.{name}")).is_file():
            raise ConfigError(f"{key}.{name}: no file at {path}.", key=f"{key}.{name}")
    if (paths["cert"] is None) != (paths["key"] is None):
        raise ConfigError(f"{key}: a client certificate needs both cert and key.", key=key)
    tls = TlsConfig(mode, *(None if p is None else str(p) for p in paths.values()))
    _load_tls_files(tls, key)
    return tls


def _load_tls_files(tls: TlsConfig, key: str) -> None:
    """Read the CA and the client certificate once now, so a wrong file is named here and not
    as a failed connection later."""
    try:
        if tls.ca:
            ssl.create_default_context(cafile=tls.ca)
    except (ssl.SSLError, ValueError) as exc:
        raise ConfigError(f"{key}.ca: {tls.ca} is not a PEM certificate ({exc}).",
                          key=f"{key}.ca") from None  # fmt: skip
    try:
        if tls.cert:
            ssl.create_default_context().load_cert_chain(tls.cert, keyfile=tls.key)
    except (ssl.SSLError, ValueError) as exc:
        raise ConfigError(f"{key}.cert: {tls.cert} and {tls.key} are not a PEM certificate and "
                          f"its key ({exc}).", key=f"{key}.cert") from None  # fmt: skip
