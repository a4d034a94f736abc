"""The stream's offsets as Spark's checkpoint keeps them: typed, versioned values.

Spark writes the end offset of every micro-batch into ``offsets/<n>`` and hands it back after a
restart, perhaps to a newer sparkcdc: of everything sparkcdc writes, this format outlives a
release. Each offset is a frozen value of one ``kind``, with the format ``v`` it was written in;
:meth:`to_json` is its one writer, :func:`parse` the one reader::

    stream       {"kind": "stream", "v": 1, "position": <the source's offset>}
    incremental  {"kind": "incremental", "v": 1, "position": <the source's offset>,
                  "incremental": <IncrementalState>}
    snapshot     {"kind": "snapshot", "v": 1, "tables": [...], "current": i,
                  "splitter": <SplitterState> | null, "batch": n, "groups": [[split, ...], ...],
                  "meta": {table: {"schema", "keys", "splits", "estimate"}}, "announce": [...]}

The source's offset is kept whole under ``position`` (its JSON is the source's business,
:mod:`sparkcdc.core.offset`), so its keys never meet ours. Format 0 is what sparkcdc wrote
before offsets had a kind: the source's JSON bare, the same with an ``"incremental"`` key beside
its own, or ``{"snapshot": {...}}``; :func:`migrate_v0` turns it into format 1. A format newer
than :data:`FORMAT` is refused with :class:`NewerOffsetFormat`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from sparkcdc.core.chunk import KeyColumn, Split
from sparkcdc.core.errors import SparkCDCError
from sparkcdc.core.json_value import JSONObject, json_object
from sparkcdc.core.offset import OffsetJSON
from sparkcdc.core.schema import TableSchema
from sparkcdc.snapshot.incremental import IncrementalState, Window
from sparkcdc.snapshot.splitter import SplitterState

FORMAT = 1
"""The offset format this version of sparkcdc writes, and the newest it reads."""

Kind = Literal["stream", "snapshot", "incremental"]
SplitGroups = tuple[tuple[Split, ...], ...]
"""A snapshot batch's splits dealt into groups of consecutive splits: one Spark task each."""


class NewerOffsetFormat(SparkCDCError):
    """The checkpoint holds an offset of a format this sparkcdc does not know."""


class UnreadableOffset(SparkCDCError):
    """The checkpoint holds an offset that is none of sparkcdc's."""


@dataclass(frozen=True)
class StreamOffset:
    """Streaming the log: the end of the source's changes in the micro-batch."""

    position: OffsetJSON
    kind: ClassVar[Kind] = "stream"

    def to_json(self) -> OffsetJSON:
        return {"kind": self.kind, "v": FORMAT, "position": dict(self.position)}


@dataclass(frozen=True)
class IncrementalOffset:
    """Streaming the log with incremental snapshots: the position, and the snapshots' state
    (its ``window``: the chunks this micro-batch delivers)."""

    position: OffsetJSON
    state: IncrementalState
    kind: ClassVar[Kind] = "incremental"

    def to_json(self) -> OffsetJSON:
        return {
            "kind": self.kind,
            "v": FORMAT,
            "position": dict(self.position),
            "incremental": self.state.to_json(),
        }


@dataclass(frozen=True)
class TableMeta:
    """A table of the initial snapshot as its first batch found it: the schema and chunk key
    it is read with, and its split count once every split was made (else the ``estimate``)."""

    schema: TableSchema
    keys: tuple[KeyColumn, ...]
    splits: int | None = None
    estimate: int | None = None

    def to_json(self) -> JSONObject:
        return {
            "schema": self.schema.to_json(),
            "keys": [json_object(k.to_json()) for k in self.keys],
            "splits": self.splits,
            "estimate": self.estimate,
        }

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> TableMeta:
        splits, estimate = value.get("splits"), value.get("estimate")
        return cls(
            TableSchema.from_json(dict(value["schema"])),
            tuple(KeyColumn.from_json(k) for k in value.get("keys", ())),
            None if splits is None else int(splits),
            None if estimate is None else int(estimate),
        )


@dataclass(frozen=True)
class SnapshotOffset:
    """In the initial snapshot: the tables in order, the one being split (``current``) and its
    splitter, the batch number, its split groups, the metas of the tables it reads, and the
    tables whose first splits it holds (their schemas are announced before their rows)."""

    tables: tuple[str, ...]
    current: int = 0
    splitter: SplitterState | None = None
    batch: int = 0
    groups: SplitGroups = ()
    meta: Mapping[str, TableMeta] = field(default_factory=dict)
    announce: tuple[str, ...] = ()
    kind: ClassVar[Kind] = "snapshot"

    def to_json(self) -> JSONObject:
        return {
            "kind": self.kind,
            "v": FORMAT,
            "tables": list(self.tables),
            "current": self.current,
            "splitter": None if self.splitter is None else self.splitter.to_json(),
            "batch": self.batch,
            "groups": [[json_object(s.to_json()) for s in group] for group in self.groups],
            "meta": {name: m.to_json() for name, m in self.meta.items()},
            "announce": list(self.announce),
        }

    @property
    def splits(self) -> tuple[Split, ...]:
        return tuple(s for group in self.groups for s in group)


SparkOffset = StreamOffset | IncrementalOffset | SnapshotOffset


def log_position(offset: SparkOffset) -> OffsetJSON | None:
    """The source's offset a stream or incremental offset ends at (None: in the snapshot)."""
    return None if isinstance(offset, SnapshotOffset) else offset.position


def source_position(value: Mapping[str, object]) -> OffsetJSON | None:
    """The source's offset the offset ``value`` (its JSON, of any format) ends at (None: in the
    initial snapshot)."""
    return log_position(parse(value))


def parse(value: Mapping[str, object]) -> SparkOffset:
    """The offset Spark's checkpoint holds as ``value``, of any format up to :data:`FORMAT`;
    :class:`NewerOffsetFormat` for a newer one, :class:`UnreadableOffset` for none of ours."""
    if "kind" not in value or "v" not in value:
        value = migrate_v0(value)
    version = value["v"]
    if not isinstance(version, int) or version < 1:
        raise _unreadable(value, f"its format v is {version!r}")
    if version > FORMAT:
        raise NewerOffsetFormat(
            f"the checkpoint's offset is of format {version}, written by a newer sparkcdc than "
            f"this one, which reads formats up to {FORMAT}; upgrade sparkcdc to the version "
            "that wrote the checkpoint, or take a new snapshot: start with a new checkpoint and "
            "an empty sink.",
            version=version,
            known=FORMAT,
        )
    try:
        return _read_v1(value)
    except (KeyError, TypeError, ValueError) as exc:
        raise _unreadable(value, f"{type(exc).__name__}: {exc}") from None


def migrate_v0(value: Mapping[str, object]) -> dict[str, object]:
    """A format-0 offset (written before offsets had a kind) as format 1."""
    snapshot = value.get("snapshot")
    if isinstance(snapshot, Mapping):
        return {**snapshot, "kind": "snapshot", "v": 1}
    position = {k: v for k, v in value.items() if k != "incremental"}
    state = value.get("incremental")
    if not isinstance(state, Mapping):
        return {"kind": "stream", "v": 1, "position": position}
    renamed = {k: v for k, v in state.items() if k != "v"}
    migrated = {**renamed, "version": int(state.get("v", 0))}
    return {"kind": "incremental", "v": 1, "position": position, "incremental": migrated}


def _read_v1(value: Mapping[str, Any]) -> SparkOffset:
    kind = value["kind"]
    if kind == "stream":
        return StreamOffset(dict(value["position"]))
    if kind == "incremental":
        state = IncrementalState.from_json(value["incremental"])
        return IncrementalOffset(dict(value["position"]), state)
    if kind == "snapshot":
        splitter = value.get("splitter")
        return SnapshotOffset(
            tables=tuple(str(t) for t in value["tables"]),
            current=int(value.get("current", 0)),
            splitter=None if splitter is None else SplitterState.from_json(splitter),
            batch=int(value.get("batch", 0)),
            groups=tuple(tuple(Split.from_json(s) for s in g) for g in value.get("groups", ())),
            meta={str(k): TableMeta.from_json(m) for k, m in value.get("meta", {}).items()},
            announce=tuple(str(t) for t in value.get("announce", ())),
        )
    raise ValueError(f"its kind {kind!r} is none of stream, snapshot, incremental")


def _unreadable(value: Mapping[str, Any], why: str) -> UnreadableOffset:
    return UnreadableOffset(
        f"the checkpoint holds an offset sparkcdc cannot read ({why}): {str(dict(value))[:200]}; "
        "the checkpoint was changed by hand or by another program, so restore it or start "
        "anew with a new checkpoint and an empty sink.",
    )


__all__ = [
    "FORMAT",
    "IncrementalOffset",
    "NewerOffsetFormat",
    "SnapshotOffset",
    "SparkOffset",
    "SplitGroups",
    "SplitterState",
    "StreamOffset",
    "TableMeta",
    "UnreadableOffset",
    "Window",
    "log_position",
    "migrate_v0",
    "parse",
    "source_position",
]
