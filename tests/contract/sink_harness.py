"""What the sink contract suite needs of a sink besides the port: its tables, read back.

Every harness opens its sink through the registry (:func:`sparkcdc.sinks.registry.open_sink`)
on a lake of its own, and reads the replica and the change log of a table the way its storage
is read (Delta tables with delta-rs, the in-memory lake's dicts); the suite writes only through
the port.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from deltalake import DeltaTable

from sparkcdc.config.model import SinkConfig
from sparkcdc.sinks.port import ChunkWriter, Sink, SinkContext
from sparkcdc.sinks.registry import open_sink, sink_type
from tests.fakes.sink import LAKES, MemoryLake

APP = "pipeline-1"

Logged = tuple[str, object, object]
"""A change-log row as the suite compares it: (op, the before image's id, the after image's
owner); None where the image is null."""


class SinkHarness(Protocol):
    name: str
    snapshot_in_changelog: bool  # ``sink.snapshot_in_changelog`` of the sinks it opens

    def open(self) -> Sink:
        """A sink on the harness's lake (opened again: a restarted pipeline)."""

    def chunk_writer(self) -> ChunkWriter | None:
        """The sink type's executor-side chunk writer."""

    def replica(self, db: str, table: str) -> dict[object, object]:
        """The replica now: owner by id."""

    def changelog(self, db: str, table: str) -> list[Logged]:
        """The change log in log order (``source.position``)."""


@dataclass
class DeltaHarness:
    root: Path
    name: str = "delta"
    snapshot_in_changelog: bool = True

    @property
    def config(self) -> SinkConfig:
        return SinkConfig(
            path=str(self.root / "lake"), snapshot_in_changelog=self.snapshot_in_changelog
        )

    def open(self) -> Sink:
        return open_sink(self.config, SinkContext(app_id=lambda: APP))

    def chunk_writer(self) -> ChunkWriter | None:
        return sink_type(self.config.type).chunk_writer

    def replica(self, db: str, table: str) -> dict[object, object]:
        rows = DeltaTable(str(self.root / "lake" / db / table)).to_pyarrow_table().to_pylist()
        return {r["id"]: r["owner"] for r in rows}

    def changelog(self, db: str, table: str) -> list[Logged]:
        path = self.root / "lake" / db / f"{table}__changelog"
        rows = DeltaTable(str(path)).to_pyarrow_table().to_pylist()
        ordered = sorted(rows, key=lambda r: r["source"]["position"])
        return [_logged(r["op"], r["before"], r["after"]) for r in ordered]


@dataclass
class IcebergHarness:
    """The Iceberg sink on its embedded SQL catalog (a SQLite file in the lake's folder), read
    back with pyiceberg."""

    root: Path
    name: str = "iceberg"
    snapshot_in_changelog: bool = True

    @property
    def config(self) -> SinkConfig:
        return SinkConfig(path=str(self.root / "lake"), type="iceberg",
                          snapshot_in_changelog=self.snapshot_in_changelog)  # fmt: skip

    def open(self) -> Sink:
        return open_sink(self.config, SinkContext(app_id=lambda: APP))

    def chunk_writer(self) -> ChunkWriter | None:
        return sink_type(self.config.type).chunk_writer

    def _rows(self, identifier: str) -> list[dict[str, Any]]:
        from sparkcdc.sinks.iceberg.catalog import open_catalog

        rows: list[dict[str, Any]] = (
            open_catalog(self.config).load_table(identifier).scan().to_arrow().to_pylist()
        )
        return rows

    def replica(self, db: str, table: str) -> dict[object, object]:
        return {r["id"]: r["owner"] for r in self._rows(f"{db}.{table}")}

    def changelog(self, db: str, table: str) -> list[Logged]:
        rows = self._rows(f"{db}.{table}__changelog")
        ordered = sorted(rows, key=lambda r: r["source"]["position"])
        return [_logged(r["op"], r["before"], r["after"]) for r in ordered]


@dataclass
class MemoryHarness:
    root: Path
    honour_batch_ids: bool = True
    name: str = "memory"
    snapshot_in_changelog: bool = True

    @property
    def config(self) -> SinkConfig:
        path = str(self.root / "lake")
        LAKES.setdefault(path, MemoryLake(self.honour_batch_ids))
        return SinkConfig(path=path, type="tests.fakes.sink",
                          snapshot_in_changelog=self.snapshot_in_changelog)  # fmt: skip

    @property
    def lake(self) -> MemoryLake:
        return LAKES[self.config.path]

    def open(self) -> Sink:
        return open_sink(self.config, SinkContext(app_id=lambda: APP))

    def chunk_writer(self) -> ChunkWriter | None:
        return sink_type(self.config.type).chunk_writer

    def replica(self, db: str, table: str) -> dict[object, object]:
        rows = self.lake.tables[(db, table)].replica.values()
        return {r["id"]: r["owner"] for r in rows}

    def changelog(self, db: str, table: str) -> list[Logged]:
        logged = sorted(self.lake.tables[(db, table)].changelog, key=lambda c: c.position)
        return [_logged(c.op, c.before, c.after) for c in logged]


def _logged(op: str, before: dict[str, object] | None, after: dict[str, object] | None) -> Logged:
    return (op, None if before is None else before["id"], None if after is None else after["owner"])
