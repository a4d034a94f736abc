"""Typed pipeline configuration: what a ``PIPELINE.yaml`` says, after validation.

The values here are already checked; :mod:`sparkcdc.config.load` turns YAML (with ``${ENV}``
references) into these classes and names the offending key of any wrong value.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class SourceConfig:
    """Where changes come from. ``tables`` are regular expressions over ``db.table``."""

    host: str
    port: int
    user: str
    password: str
    tables: tuple[str, ...]
    startup: str = "earliest"
    server_id: int = 5701
    type: str = "mysql"
    key_columns: dict[str, tuple[str, ...]] = field(default_factory=dict)
    connect_timeout: float = 10.0

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
