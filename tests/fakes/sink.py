"""An in-memory sink behind the sink port, for the sink contract suite.

``sink.type: tests.fakes.sink`` opens a :class:`MemorySink` on the :class:`MemoryLake` kept
under ``sink.path`` in this process (:data:`LAKES`), so a sink opened again on the same path (a
restarted pipeline) finds its tables and the batch ids it applied. Per table it keeps a replica
(rows by key) and a change log (rows in log order), from JSON row images and from snapshot
chunks read through :mod:`sparkcdc.sinks.batch_events`. It writes no snapshot chunk files. Its
one key of its own, ``sink.label``, is only there to show a sink type's keys reach it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import pyarrow as pa

from sparkcdc.config.model import SinkConfig
from sparkcdc.core.errors import SinkError
from sparkcdc.core.schema import TableSchema
from sparkcdc.sinks.batch_events import chunk_table, is_truncate, read_batch
from sparkcdc.sinks.port import BatchFrame, Sink, SinkContext, SinkFigures, SinkType

Row = dict[str, object]
KeyValues = tuple[object, ...]


@dataclass(frozen=True)
class LoggedChange:
    """One change-log row: op, images, and the event's ``source.position``."""

    op: str
    before: Row | None
    after: Row | None
    position: str


@dataclass
class MemoryTable:
    key: tuple[str, ...]
    replica: dict[KeyValues, Row] = field(default_factory=dict)
    changelog: list[LoggedChange] = field(default_factory=list)


@dataclass
class MemoryLake:
    """The tables by (db, table), and the (app id, batch id) pairs applied. A lake that does
    not ``honour_batch_ids`` applies a batch again: the contract suite must catch it."""

    honour_batch_ids: bool = True
    tables: dict[tuple[str, str], MemoryTable] = field(default_factory=dict)
    applied: set[tuple[str, int]] = field(default_factory=set)


LAKES: dict[str, MemoryLake] = {}


class MemorySink(Sink):
    """The port's writer over a :class:`MemoryLake`."""

    def __init__(
        self, lake: MemoryLake, app_id: Callable[[], str], snapshot_in_changelog: bool = True
    ) -> None:
        self.lake, self._app_id = lake, app_id
        self.snapshot_in_changelog = snapshot_in_changelog
        self._figures = SinkFigures()

    def write_batch(self, batch: BatchFrame, batch_id: int) -> None:
        try:
            envelope, _ = read_batch(batch)
            self._write(envelope, batch_id)
        except Exception as exc:
            failed = exc if isinstance(exc, SinkError) else SinkError(f"batch {batch_id}: {exc}")
            self._figures = replace(self._figures, error=failed)
            raise failed from exc

    def figures(self) -> SinkFigures:
        return self._figures

    def upkeep_at_end(self) -> None:
        """Nothing to compact."""

    def _write(self, envelope: pa.Table, batch_id: int) -> None:
        done = (self._app_id(), batch_id)
        counts: dict[tuple[str, str], int] = {}
        stamps: list[int] = []
        if done not in self.lake.applied or not self.lake.honour_batch_ids:
            for row in envelope.to_pylist():
                op = self._apply(row)
                if op is not None:
                    name = f"{row['db']}.{row['table']}"
                    counts[(name, op)] = counts.get((name, op), 0) + _rows_of(row)
                    stamps.append(int(str(_source(row)["ts_ms"])))
            self.lake.applied.add(done)
        self._account(counts, max(stamps) if stamps else None)

    def _apply(self, row: Row) -> str | None:
        """Apply one envelope row; the change-log op it wrote, if any."""
        op, position = str(row["op"]), str(_source(row)["position"])
        name = (str(row["db"]), str(row["table"]))
        if op == "s":
            return self._schema_event(name, row, position)
        if op in ("n", "f"):
            return None
        table = self.lake.tables[name]
        if op == "k":
            for after in chunk_table(_text(row["after"])).to_pylist():
                self._change(table, "r", None, after, position)
            return "r"
        before, after = _image(row["before"]), _image(row["after"])
        self._change(table, op, before, after, position)
        return op

    def _schema_event(self, name: tuple[str, str], row: Row, position: str) -> str | None:
        if is_truncate(row):
            table = self.lake.tables[name]
            table.replica.clear()
            table.changelog.append(LoggedChange("t", None, None, position))
            return "t"
        kind = json.loads(_text(row["after"]) or "{}").get("kind")
        if kind == "drop" and name in self.lake.tables:
            self.lake.tables[name].replica.clear()
        elif row["schema"]:
            schema = TableSchema.from_json(json.loads(_text(row["schema"])))
            self.lake.tables.setdefault(name, MemoryTable(tuple(schema.key)))
        return None

    def _change(
        self, table: MemoryTable, op: str, before: Row | None, after: Row | None, position: str
    ) -> None:
        if op != "r" or self.snapshot_in_changelog:
            table.changelog.append(LoggedChange(op, before, after, position))
        if before is not None:
            table.replica.pop(tuple(before[k] for k in table.key), None)
        if after is not None and op != "d":
            table.replica[tuple(after[k] for k in table.key)] = after

    def _account(self, counts: dict[tuple[str, str], int], last_ts: int | None) -> None:
        was = self._figures
        events = dict(was.events)
        for key, n in counts.items():
            events[key] = events.get(key, 0) + n
        newest = (
            was.last_event_ts_ms if last_ts is None else max(was.last_event_ts_ms or 0, last_ts)
        )
        self._figures = SinkFigures(was.batches + 1, was.changes + sum(counts.values()), events,
                                    newest, time.time(), None, None)  # fmt: skip


def _rows_of(row: Row) -> int:
    """The change-log rows an event stands for: a chunk's rows, else one."""
    return int(json.loads(_text(row["after"]))["rows"]) if row["op"] == "k" else 1


def _source(row: Row) -> Row:
    source = row["source"]
    assert isinstance(source, dict)
    return source


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _image(value: object) -> Row | None:
    return None if value is None else dict(json.loads(_text(value)))


def _check(config: SinkConfig) -> None:
    """Memory is always reachable."""


def _open(config: SinkConfig, context: SinkContext) -> Sink:
    lake = LAKES.setdefault(config.path, MemoryLake())
    return MemorySink(lake, context.app_id, config.snapshot_in_changelog)


SINK_TYPE = SinkType("memory", check=_check, open=_open, chunk_writer=None, keys=("label",))
