"""Typed pipeline configuration: what a ``PIPELINE.yaml`` says, after validation.

The values here are already checked; :mod:`sparkcdc.config.load` turns YAML (with ``${ENV}``
references) into these classes and names the offending key of any wrong value.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

SNAPSHOT_STARTUPS = ("initial", "snapshot")


@dataclass(frozen=True)
class SnapshotConfig:
    """How the tables are snapshotted (startup ``initial`` or ``snapshot``): cut into chunks
    along their key, read by ``parallelism`` concurrent readers."""

    chunk_size: int = 8096  # rows per chunk
    parallelism: int = 2  # concurrent snapshot readers (1..64)
    # the columns to chunk a table along instead of its primary key: {"db.table": (col, ...)}
    chunk_key_columns: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # a single integer key is cut evenly by arithmetic while (max - min + 1) / rows lies
    # within these bounds, else by querying the key
    distribution_factor_lower: float = 0.05
    distribution_factor_upper: float = 1000.0
    # rows one Spark task reads in one micro-batch; each micro-batch costs a fixed share of
    # Spark planning and task start-up (bench section 4 measures it)
    batch_rows: int = 4194304
    incremental_chunks: int = 2  # chunks one incremental-snapshot window reads in parallel
    # how long one incremental-snapshot window goes on reading chunks (the log events of its
    # micro-batch wait for it)
    incremental_window: float = 0.3

    def redacted(self) -> dict[str, Any]:
        return {
            "chunk_size": self.chunk_size,
            "parallelism": self.parallelism,
            "chunk_key_columns": {k: list(v) for k, v in self.chunk_key_columns.items()},
            "distribution_factor": {
                "lower": self.distribution_factor_lower,
                "upper": self.distribution_factor_upper,
            },
            "batch_rows": self.batch_rows,
            "incremental_chunks": self.incremental_chunks,
            "incremental_window": self.incremental_window,
        }


@dataclass(frozen=True)
class SourceConfig:
    """Where changes come from. ``tables`` are regular expressions over ``db.table``.

    ``server_id`` is the log reader's replica server id; ``server_id_last`` ends a range
    ``server_id..server_id_last`` whose other ids belong to the snapshot readers.
    ``signal_table`` is the table signals are inserted into (see
    :mod:`sparkcdc.snapshot.signals`); ``tables`` always captures it."""

    host: str
    port: int
    user: str
    password: str
    tables: tuple[str, ...]
    startup: str = "initial"
    server_id: int = 5701
    type: str = "mysql"
    key_columns: dict[str, tuple[str, ...]] = field(default_factory=dict)
    connect_timeout: float = 10.0
    server_id_last: int | None = None
    snapshot: SnapshotConfig = field(default_factory=SnapshotConfig)
    signal_table: str | None = None  # "db.table" the signals are inserted into (captured too)

    @property
    def takes_snapshot(self) -> bool:
        """Whether a new pipeline snapshots the tables first (startup ``initial``/``snapshot``)."""
        return self.startup in SNAPSHOT_STARTUPS

    @property
    def row_keys(self) -> dict[str, tuple[str, ...]]:
        """The columns identifying rows of tables without a primary key: ``key_columns``, else
        the table's ``snapshot.chunk_key_columns`` (a unique column the snapshot is cut by)."""
        return {**self.snapshot.chunk_key_columns, **self.key_columns}

    @property
    def snapshot_server_ids(self) -> tuple[int, ...]:
        """The server ids of the snapshot readers: the range's ids after the first, else
        ``snapshot.parallelism`` ids following ``server_id``."""
        if self.server_id_last is not None:
            return tuple(range(self.server_id + 1, self.server_id_last + 1))
        return tuple(range(self.server_id + 1, self.server_id + 1 + self.snapshot.parallelism))

    def redacted(self) -> dict[str, Any]:
        """The settings without the password, for logs."""
        return {
            "type": self.type,
            "host": self.host,
            "port": self.port,
            "user": self.user,
            "password": "***",
            "tables": list(self.tables),
            "startup": self.startup,
            "server_id": self.server_id,
            "server_id_last": self.server_id_last,
            "snapshot": self.snapshot.redacted(),
            "signal_table": self.signal_table,
        }


@dataclass(frozen=True)
class SinkConfig:
    """Where changes go: Delta tables under ``path`` (``<db>/<table>`` and ``__changelog``)."""

    path: str
    type: str = "delta"


@dataclass(frozen=True)
class StoreConfig:
    """The event store between the log reader and Spark: a memory-bounded ring buffer."""

    max_bytes: int = 64 * 1024 * 1024
    max_items: int = 16384
    batch_mode: str = "MEMSIZE"
    item_rows: int = 2048


@dataclass(frozen=True)
class PipelineConfig:
    checkpoint: str
    trigger_seconds: float = 1.0
    store: StoreConfig = field(default_factory=StoreConfig)
    spark_master: str = "local[*]"
    spark_conf: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Config:
    source: SourceConfig
    sink: SinkConfig
    pipeline: PipelineConfig
