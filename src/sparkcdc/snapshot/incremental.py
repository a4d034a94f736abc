"""Incremental snapshots: what is being snapshotted, how far it got, and how signals change it.

The algorithm is DBLog's (seed 002) as Debezium runs it for incremental snapshots (seed 000):
while the log keeps flowing, a table is read chunk by chunk in key order up to the maximum key
it had when its snapshot started; each chunk is read inside a *window* of the log, every chunk
row whose key the log changed inside the window is dropped (the log event is newer), and the
rest is emitted at the window's end, in log order with everything else. Nothing is locked and
the stream never pauses. The window's mechanics live in :mod:`sparkcdc.spark.incremental.driver`;
this module is the state they advance, a frozen value that rides in every stream offset
(:mod:`sparkcdc.spark.offsets`: a crash resumes after the last chunk that was delivered) and the
rules of the signals:

execute-snapshot  queue each named table (with its additional condition, if any); a table
                  already running or queued with the same condition is not queued again, with
                  another condition it is queued to run after the current one
stop-snapshot     drop the named tables (all, when none is named) from the run and the queue
pause-snapshot    no chunk is read until resume-snapshot
resume-snapshot   chunks are read again, from where the run stopped
log               a notification with the signal's message

Tables added to ``source.tables`` between two runs are queued like an execute-snapshot of them
(``known`` holds the tables captured when the state was last saved). A schema change that
rewrote a table's rows in a way the log does not tell (``resnapshot`` in its ``s`` row,
:class:`~sparkcdc.core.existing_rows.ExistingRows`) queues the whole table the same way
(:func:`resnapshot`), and restarts from the beginning a snapshot of it under way: its rows
read so far are from before the change.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from sparkcdc.core.chunk import KeyColumn
from sparkcdc.core.json_value import JSONObject, JSONValue, json_object
from sparkcdc.core.offset_events import Notice
from sparkcdc.core.schema import TableSchema
from sparkcdc.core.table_name import TableName
from sparkcdc.snapshot.signals import Signal
from sparkcdc.snapshot.splitter import SplitterState


@dataclass(frozen=True)
class Request:
    """One table to snapshot: ``where`` is its additional condition, ``origin`` the signal id
    (``added`` for a table new to ``source.tables``, ``schema-change`` for a table whose rows a
    schema change rewrote, with the ``reason``)."""

    table: str
    where: str | None = None
    origin: str = ""
    reason: str | None = None

    def to_json(self) -> JSONObject:
        out: JSONObject = {"table": self.table, "where": self.where, "origin": self.origin}
        return out if self.reason is None else {**out, "reason": self.reason}

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> Request:
        return cls(
            str(value["table"]), value.get("where"), str(value.get("origin", "")),
            value.get("reason"),
        )  # fmt: skip


@dataclass(frozen=True)
class Run:
    """The table being snapshotted: its request, chunk key columns, the maximum key when it
    started (None: the table was empty), the splitter's state and what was delivered."""

    request: Request
    keys: tuple[KeyColumn, ...]
    max_key: tuple[Any, ...] | None
    splitter: SplitterState
    rows: int = 0
    chunks: int = 0

    @property
    def table(self) -> str:
        return self.request.table

    def to_json(self) -> JSONObject:
        return {
            **self.request.to_json(),
            "keys": [json_object(k.to_json()) for k in self.keys],
            "max": None if self.max_key is None else list(self.max_key),
            "splitter": self.splitter.to_json(),
            "rows": self.rows,
            "chunks": self.chunks,
        }

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> Run:
        found = value.get("max")
        return cls(
            Request.from_json(value),
            tuple(KeyColumn.from_json(k) for k in value.get("keys", ())),
            None if found is None else tuple(found),
            SplitterState.from_json(value.get("splitter") or {}),
            int(value.get("rows", 0)),
            int(value.get("chunks", 0)),
        )


@dataclass(frozen=True)
class Window:
    """The chunks one window read, delivered by the micro-batch whose end offset holds it: the
    table, its raw chunk file, and the schema the chunks were read in (``row_key``: the
    columns that identify a row, to drop the keys the batch's log events touched);
    ``read_at_ms``: when the window was read, its rows' ``source.ts_ms``, kept so that a batch
    replayed after a crash carries the same (None: a window of an older offset)."""

    table: str
    path: str
    schema_id: str
    schema: TableSchema | None
    row_key: tuple[str, ...]
    read_at_ms: int | None = None

    def to_json(self) -> JSONObject:
        return {
            "table": self.table,
            "path": self.path,
            "schema_id": self.schema_id,
            "schema": None if self.schema is None else self.schema.to_json(),
            "row_key": list(self.row_key),
            "read_at_ms": self.read_at_ms,
        }

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> Window:
        schema = value.get("schema")
        return cls(
            str(value["table"]),
            str(value["path"]),
            str(value.get("schema_id", "")),
            TableSchema.from_json(schema) if schema else None,
            tuple(value.get("row_key", ())),
            None if value.get("read_at_ms") is None else int(value["read_at_ms"]),
        )


@dataclass(frozen=True)
class IncrementalState:
    """Everything the incremental snapshots need after a restart (see the module docstring).

    ``version`` counts the windows delivered: window ``v`` names its chunk files. ``window``
    and ``notices`` belong to one offset only, the end of the micro-batch that delivers them.
    ``signals`` are the file-channel signals applied and not yet removed from the folder."""

    version: int = 0
    paused: bool = False
    known: tuple[str, ...] | None = None
    queue: tuple[Request, ...] = ()
    run: Run | None = None
    signals: tuple[str, ...] = ()
    window: Window | None = None
    notices: tuple[Notice, ...] = field(default=())

    @property
    def active(self) -> bool:
        """Whether a chunk is waiting to be read."""
        return not self.paused and (self.run is not None or bool(self.queue))

    def settled(self) -> IncrementalState:
        """The state as the next micro-batch starts from it: no window, no notices."""
        return replace(self, window=None, notices=())

    def to_json(self) -> JSONObject:
        out: dict[str, Any] = {"version": self.version, "paused": self.paused}
        if self.known is not None:
            out["known"] = list(self.known)
        if self.queue:
            out["queue"] = [r.to_json() for r in self.queue]
        if self.run is not None:
            out["run"] = self.run.to_json()
        if self.signals:
            out["signals"] = list(self.signals)
        if self.window is not None:
            out["window"] = self.window.to_json()
        if self.notices:
            out["notices"] = [[db, t, n] for db, t, n in self.notices]
        return out

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> IncrementalState:
        """The state :meth:`to_json` wrote (``version`` is ``v`` in states written before the
        offsets had a format of their own: :func:`sparkcdc.spark.offsets.parse` renames it)."""
        known = value.get("known")
        run = value.get("run")
        window = value.get("window")
        return cls(
            version=int(value.get("version", 0)),
            paused=bool(value.get("paused", False)),
            known=None if known is None else tuple(known),
            queue=tuple(Request.from_json(r) for r in value.get("queue", ())),
            run=None if run is None else Run.from_json(run),
            signals=tuple(value.get("signals", ())),
            window=None if window is None else Window.from_json(window),
            notices=tuple((str(d), str(t), dict(n)) for d, t, n in value.get("notices", ())),
        )


def notice(table: str, kind: str, **details: JSONValue) -> Notice:
    db, name = TableName.parse(table)
    return (db, name, {"type": kind, **details})


def apply_signal(
    state: IncrementalState, signal: Signal, captured: frozenset[str]
) -> IncrementalState:
    """``state`` after ``signal`` (see the module docstring), with its notifications."""
    kind = signal.type
    if kind == "execute-snapshot":
        return _execute(state, signal, captured)
    if kind == "stop-snapshot":
        return _stop(state, frozenset(signal.tables))
    if kind in ("pause-snapshot", "resume-snapshot"):
        paused = kind == "pause-snapshot"
        note: Notice = ("", "", {"type": "paused" if paused else "resumed"})
        return replace(state, paused=paused, notices=(*state.notices, note))
    note = ("", "", {"type": "log", "message": str(signal.data.get("message", ""))})
    return replace(state, notices=(*state.notices, note))


def _execute(state: IncrementalState, signal: Signal, captured: frozenset[str]) -> IncrementalState:
    queue, notes = list(state.queue), list(state.notices)
    for table in signal.tables:
        where = signal.condition(table)
        running = state.run is not None and state.run.request.table == table
        same = running and state.run is not None and state.run.request.where == where
        if table not in captured:
            notes.append(notice(table, "skipped", reason="the table is not captured"))
        elif same or any(r.table == table and r.where == where for r in queue):
            notes.append(notice(table, "skipped", reason="already in progress"))
        else:
            queue.append(Request(table, where, signal.id))
            notes.append(notice(table, "queued", where=where, signal=signal.id))
    return replace(state, queue=tuple(queue), notices=tuple(notes))


def _stop(state: IncrementalState, named: frozenset[str]) -> IncrementalState:
    """Drop the named tables (every table when none is named) from the run and the queue."""

    def dropped(table: str) -> bool:
        return not named or table in named

    notes = list(state.notices)
    run = state.run
    if run is not None and dropped(run.table):
        notes.append(notice(run.table, "stopped", rows=run.rows))
        run = None
    for request in state.queue:
        if dropped(request.table):
            notes.append(notice(request.table, "stopped", rows=0))
    queue = tuple(r for r in state.queue if not dropped(r.table))
    return replace(state, run=run, queue=queue, notices=tuple(notes))


def add_new_tables(state: IncrementalState, captured: list[str]) -> IncrementalState:
    """Queue the tables captured now that were not when the state was saved (a widened
    ``source.tables``); the first state of a stream knows every table it captures."""
    if state.known is None:
        return replace(state, known=tuple(captured))
    new = [t for t in captured if t not in set(state.known)]
    if not new and len(captured) == len(state.known):
        return state
    queued = tuple(Request(t, None, "added") for t in new)
    notes = [notice(t, "queued", where=None, signal="added") for t in new]
    return replace(
        state,
        known=tuple(captured),
        queue=state.queue + queued,
        notices=state.notices + tuple(notes),
    )


SCHEMA_CHANGE = "schema-change"


def resnapshot(state: IncrementalState, table: str, reason: str) -> IncrementalState:
    """``state`` with the whole of ``table`` queued to be read again because a schema change
    rewrote its rows (``reason``); a run of it under way is stopped and queued first."""
    why = f"a schema change rewrote rows the log does not show ({reason})"
    request = Request(table, None, SCHEMA_CHANGE, why)
    notes, run, queue = list(state.notices), state.run, list(state.queue)
    if run is not None and run.table == table:
        notes.append(notice(table, "stopped", rows=run.rows, reason=f"restarted: {why}"))
        run, queue = None, [request, *(r for r in queue if r.table != table or r.where)]
    elif not any(r.table == table and r.where is None for r in queue):
        queue.append(request)
    notes.append(notice(table, "queued", where=None, signal=SCHEMA_CHANGE, reason=why))
    return replace(state, run=run, queue=tuple(queue), notices=tuple(notes))
