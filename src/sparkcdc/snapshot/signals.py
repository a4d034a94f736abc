"""Signals: requests sent to a running pipeline, in Debezium's format.

A signal asks the pipeline to start an incremental snapshot of some tables while it streams
(``execute-snapshot``), to pause, resume or stop it, or to write a line to its log (``log``).
Each signal is an id, a type and a JSON object of data, exactly as Debezium's signal table holds
them, so signals written for Debezium work unchanged:

    execute-snapshot  {"data-collections": ["db.t", "db.u"], "type": "incremental",
                       "additional-conditions": [{"data-collection": "db.t",
                                                  "filter": "color = 'blue'"}]}
    stop-snapshot     {"data-collections": ["db.t"], "type": "incremental"}  (none: all tables)
    pause-snapshot    {}
    resume-snapshot   {}
    log               {"message": "text"}

Signals arrive through one of two channels:

- **a table in the source database** (``source.signal_table``, columns ``id``, ``type``,
  ``data``): a signal is a row inserted there. The pipeline captures that table and sees the row
  in the binary log, so a signal is ordered with the data changes around it;
- **a folder** ``<checkpoint>/sparkcdc/signals``, one ``<id>.json`` file per signal, for
  databases where the pipeline's user may not write.

The incremental snapshot the signals drive is DBLog's watermark algorithm (seed 002), as
Debezium's incremental snapshots use it (seed 000). This module is the signal format and both
channels' input and output; it needs no Spark.
"""

from __future__ import annotations

import json
import os
import tempfile
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sparkcdc.core.errors import ConfigError
from sparkcdc.core.json_value import JSONObject, JSONValue
from sparkcdc.core.table_name import WRITE_IT, TableName, written_problem

SIGNAL_TYPES = ("execute-snapshot", "pause-snapshot", "resume-snapshot", "stop-snapshot", "log")
SNAPSHOT_TYPE = "incremental"
SIGNAL_TABLE_DDL = (
    "CREATE TABLE {name} (id VARCHAR(64) PRIMARY KEY, type VARCHAR(32) NOT NULL, data TEXT NULL)"
)
_TEMP_PREFIX = ".tmp-"


class _Invalid(Exception):
    """What is wrong with a signal (a phrase) and what to do about it."""

    def __init__(self, problem: str, fix: str) -> None:
        super().__init__(problem)
        self.problem = problem
        self.fix = fix


@dataclass(frozen=True)
class Signal:
    """One checked signal: its ``id``, its ``type`` (one of :data:`SIGNAL_TYPES`) and ``data``."""

    id: str
    type: str
    data: dict[str, Any]

    @property
    def tables(self) -> tuple[str, ...]:
        """The ``db.table`` names of ``data-collections`` (empty when not given)."""
        return tuple(self.data.get("data-collections") or ())

    def condition(self, table: str) -> str | None:
        """The additional condition (an SQL filter) for ``table``, or None."""
        for item in self.data.get("additional-conditions") or ():
            if item["data-collection"] == table:
                return str(item["filter"])
        return None

    def to_json(self) -> str:
        """The signal as one JSON object ``{"id", "type", "data"}``."""
        return json.dumps({"id": self.id, "type": self.type, "data": self.data})

    @classmethod
    def from_json(cls, text: str) -> Signal:
        """The signal :meth:`to_json` wrote; ConfigError says what is wrong with other text."""
        try:
            return _from_json(text)
        except _Invalid as exc:
            raise ConfigError(f"The signal {text[:80]!r} {exc.problem}; {exc.fix}.") from None


def parse_signal(id: str, type: str, data: str | None) -> Signal:
    """A signal from a signal table row: ``data`` is the JSON text of its ``data`` column."""
    try:
        decoded = _decode(data)
        return _checked(id, type, decoded)
    except _Invalid as exc:
        raise ConfigError(f"Signal {id!r} {exc.problem}; {exc.fix}.", signal=id) from None


def _decode(data: str | None) -> Any:
    if data is None or not data.strip():
        return {}
    try:
        return json.loads(data)
    except ValueError:
        raise _Invalid(
            f"has data that is not JSON ({data[:80]!r})", 'write a JSON object such as {"a": 1}'
        ) from None


def _from_json(text: str) -> Signal:
    try:
        doc = json.loads(text)
    except ValueError:
        raise _Invalid("is not JSON", 'write {"id": ..., "type": ..., "data": {...}}') from None
    if not isinstance(doc, dict) or not isinstance(doc.get("id"), str) or not doc["id"]:
        raise _Invalid("has no id", 'write {"id": ..., "type": ..., "data": {...}}')
    if not isinstance(doc.get("type"), str):
        raise _Invalid("has no type", f"give one of {', '.join(SIGNAL_TYPES)}")
    return _checked(doc["id"], doc["type"], doc.get("data"))


def _checked(id: str, type: str, data: Any) -> Signal:
    """The signal, or :class:`_Invalid` naming what is wrong."""
    kind = str(type).strip().lower()
    if kind not in SIGNAL_TYPES:
        raise _Invalid(f"has the unknown type {type!r}", f"use one of {', '.join(SIGNAL_TYPES)}")
    data = {} if data is None else data
    if not isinstance(data, dict):
        raise _Invalid("has data that is not a JSON object", f"write the {kind} data as {{...}}")
    if kind in ("execute-snapshot", "stop-snapshot"):
        snapshot_type = str(data.get("type") or SNAPSHOT_TYPE)
        if snapshot_type.lower() != SNAPSHOT_TYPE:
            raise _Invalid(
                f"asks for a {snapshot_type!r} snapshot",
                'only incremental snapshots are supported, so write "type": "incremental"',
            )
        tables = _tables(data.get("data-collections"), required=kind == "execute-snapshot")
        if kind == "execute-snapshot":
            _conditions(data.get("additional-conditions"), tables)
    if kind == "log" and (not isinstance(data.get("message"), str) or not data["message"]):
        raise _Invalid("is a log signal without a message", 'write {"message": "text"}')
    return Signal(id, kind, data)


def _tables(value: Any, required: bool) -> list[str]:
    if value is None and not required:
        return []
    if not isinstance(value, list) or (required and not value):
        raise _Invalid(
            "has no list of tables in data-collections",
            'write e.g. {"data-collections": ["shop.orders"]}',
        )
    for name in value:
        problem = table_name_problem(name)
        if problem:
            raise _Invalid(f"names {name!r} in data-collections, which {problem}", WRITE_IT)
    return list(value)


def _conditions(value: Any, tables: list[str]) -> None:
    if value is None:
        return
    form = 'write [{"data-collection": "db.table", "filter": "<SQL condition>"}, ...]'
    if not isinstance(value, list):
        raise _Invalid("has additional-conditions that are not a list", form)
    seen = set()
    for item in value:
        if not isinstance(item, dict) or not isinstance(item.get("filter"), str):
            raise _Invalid(f"has the additional condition {item!r}, not of this form", form)
        table = item.get("data-collection")
        if not item["filter"].strip():
            raise _Invalid(f"has an empty filter for {table}", "give an SQL condition or drop it")
        if table not in tables:
            raise _Invalid(
                f"has an additional condition for {table!r}, which is not in data-collections",
                "add the table there or drop the condition",
            )
        if table in seen:
            raise _Invalid(
                f"has two additional conditions for {table}", "join them with AND into one"
            )
        seen.add(table)


def table_name_problem(name: Any) -> str | None:
    """Why ``name`` is not a ``db.table`` name (a phrase), or None when it is one."""
    problem = written_problem(name)
    if problem:
        return problem
    if "`" in name:
        return "holds a backtick"
    return None


def signal_data(
    action: str,
    tables: Sequence[str] = (),
    where: str | None = None,
    message: str | None = None,
) -> JSONObject:
    """The data object of a signal ``action`` as the ``sparkcdc signal`` options give it;
    ``where`` becomes the additional condition of every named table."""
    if action not in SIGNAL_TYPES:
        raise ConfigError(
            f"{action!r} is not a signal; use one of {', '.join(SIGNAL_TYPES)}.", key="action"
        )
    if action == "execute-snapshot" and not tables:
        raise ConfigError(
            "execute-snapshot needs the tables to snapshot; give them with --tables db.table.",
            key="--tables",
        )
    if tables and action not in ("execute-snapshot", "stop-snapshot"):
        raise ConfigError(
            f"--tables goes with execute-snapshot and stop-snapshot, not {action}; drop it.",
            key="--tables",
        )
    if where is not None and action != "execute-snapshot":
        raise ConfigError(
            f"--where goes with execute-snapshot only, not {action}; drop it.", key="--where"
        )
    if where is not None and not where.strip():
        raise ConfigError(
            '--where is empty; give an SQL condition such as "id > 100".', key="--where"
        )
    if message is not None and action != "log":
        raise ConfigError(f"--message goes with log only, not {action}; drop it.", key="--message")
    if action == "log" and not (message or "").strip():
        raise ConfigError(
            "log needs the text to log; give it with --message TEXT.", key="--message"
        )
    for name in tables:
        problem = table_name_problem(name)
        if problem:
            raise ConfigError(f"--tables: {name!r} {problem}; {WRITE_IT}.", key="--tables")
    if action == "log":
        return {"message": message}
    if action not in ("execute-snapshot", "stop-snapshot"):
        return {}
    named: list[JSONValue] = list(tables)
    data: JSONObject = {"data-collections": named, "type": SNAPSHOT_TYPE}
    if not tables:
        del data["data-collections"]
    if where is not None:
        data["additional-conditions"] = [{"data-collection": t, "filter": where} for t in tables]
    return data


def signal_table_ddl(name: str) -> str:
    """The CREATE TABLE statement of the signal table ``name`` (``db.table``)."""
    return SIGNAL_TABLE_DDL.format(name=TableName.parse(name).sql(lambda part: f"`{part}`"))


def new_signal_id() -> str:
    """A fresh signal id (32 hex digits)."""
    return uuid.uuid4().hex


def signal_folder(checkpoint: str | os.PathLike[str]) -> Path:
    """The file channel's folder of a pipeline with this checkpoint."""
    return Path(checkpoint) / "sparkcdc" / "signals"


def write_file_signal(folder: Path, signal: Signal) -> Path:
    """Write ``signal`` to ``<folder>/<id>.json`` at once (a reader never sees half a file)."""
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"{signal.id}.json"
    fd, temp = tempfile.mkstemp(prefix=_TEMP_PREFIX, suffix=".part", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(signal.to_json())
            out.flush()
            os.fsync(out.fileno())
        os.replace(temp, target)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    return target


def read_file_signals(folder: Path) -> list[Signal]:
    """Every signal file in ``folder``, oldest first (by modification time, then name)."""
    if not folder.is_dir():
        return []
    files = [p for p in folder.glob("*.json") if not p.name.startswith(_TEMP_PREFIX)]
    stamped = []
    for path in files:
        try:
            stamped.append((path.stat().st_mtime_ns, path.name, path))
        except FileNotFoundError:  # removed meanwhile
            continue
    signals = []
    for _, _, path in sorted(stamped):
        try:
            text = path.read_text(encoding="utf-8")
            signals.append(_from_json(text))
        except FileNotFoundError:
            continue
        except (_Invalid, UnicodeDecodeError) as exc:
            problem = exc.problem if isinstance(exc, _Invalid) else "is not UTF-8 text"
            raise ConfigError(
                f"The signal file {path} {problem}; delete the file or fix it.", path=str(path)
            ) from None
    return signals


def remove_file_signals(folder: Path, ids: Iterable[str]) -> None:
    """Delete the files of the signals ``ids`` (those already gone are skipped)."""
    for signal_id in ids:
        (folder / f"{signal_id}.json").unlink(missing_ok=True)
