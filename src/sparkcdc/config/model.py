"""Typed pipeline configuration: what a ``PIPELINE.yaml`` says, after validation.

The values here are already checked; :mod:`sparkcdc.config.load` turns YAML (with ``${ENV}``
references) into these classes and names the offending key of any wrong value.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import ClassVar, Self

from sparkcdc.config.secret import Secret
from sparkcdc.core.capture import CaptureRules, Mask
from sparkcdc.core.history_spec import HistorySpec
from sparkcdc.core.json_value import JSONObject, JSONValue
from sparkcdc.core.schema_policy import SchemaPolicy

SNAPSHOT_STARTUPS = ("initial", "snapshot")
LOG_GONE_ACTIONS = ("fail", "resnapshot")  # source.on_log_gone: what a purged log position does
UNMATCHED_ACTIONS = ("fail", "warn")  # source.on_unmatched: a table pattern matching nothing
SHADOW_TABLES_ACTIONS = ("skip", "capture")  # source.shadow_tables: gh-ost's and pt-osc's tables


DEFAULT_TYPE = "mysql"
"""``source.type`` when the pipeline file (or a ``<type>-cdc`` option set) names none."""


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

    def redacted(self) -> JSONObject:
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


TLS_MODES = ("disabled", "preferred", "required", "verify-ca", "verify-identity")


@dataclass(frozen=True)
class TlsConfig:
    """TLS on every connection to the source, as MySQL's clients name the modes: ``disabled``,
    ``preferred`` (encrypt when the server offers it), ``required`` (encrypt, trust any
    certificate), ``verify-ca`` (the server's certificate signed by ``ca``, else the system's
    authorities), ``verify-identity`` (and naming the host). ``cert``/``key``: a client
    certificate for servers that ask for one."""

    mode: str = "preferred"
    ca: str | None = None
    cert: str | None = None
    key: str | None = None

    @property
    def required(self) -> bool:
        return self.mode not in ("disabled", "preferred")

    @property
    def verifies(self) -> bool:
        return self.mode in ("verify-ca", "verify-identity")


@dataclass(frozen=True)
class HeartbeatConfig:
    """``source.heartbeat`` (Debezium's ``heartbeat.interval.ms`` and ``heartbeat.action.query``):
    every ``interval`` seconds the log reader puts the position it reached as a progress marker,
    so the committed offset moves while the captured tables are idle, and runs ``action_query``
    on the source on a connection of its own; ``interval`` 0: off."""

    interval: float = 0.0
    action_query: str | None = None

    @property
    def enabled(self) -> bool:
        return self.interval > 0

    def redacted(self) -> JSONObject:
        return {"interval": self.interval, "action_query": self.action_query}


class SourceSettings:
    """The settings a source type adds to the common ones of :class:`SourceConfig` (MySQL: its
    replica server ids): read from the keys it adds to the ``source`` section and to the Spark
    source's options, checked against the rest of the source. This base adds none; each source
    type subclasses it (``sources/<db>/settings.py``) as a frozen dataclass."""

    KEYS: ClassVar[tuple[str, ...]] = ()
    """The source's own keys, the same in the YAML ``source`` section and as Spark options."""
    STARTUP_FORMS: ClassVar[tuple[str, ...]] = ()
    """The source's own startup forms besides initial, snapshot, earliest and latest."""

    @classmethod
    def of(cls, source: SourceConfig) -> Self:
        """This type's settings of ``source`` (the defaults if it was built without them)."""
        found = source.settings
        return found if isinstance(found, cls) else cls()

    @classmethod
    def from_values(cls, given: Callable[[str], object], key: Callable[[str], str]) -> Self:
        """The settings from ``given(name)`` (the raw YAML value or option text, None when
        absent); ConfigError naming ``key(name)`` for a wrong one."""
        return cls()

    @classmethod
    def startup(cls, text: str) -> str | None:
        """``text`` written the way the source keeps it, if it is one of its startup forms."""
        return None

    def check(self, source: SourceConfig, key: Callable[[str], str]) -> None:
        """Raise ConfigError (naming ``key(name)``) if these settings do not fit ``source``."""

    def for_pipeline(self, checkpoint: str) -> Self:
        """These settings in a pipeline checkpointed at ``checkpoint`` (defaults named after
        it, e.g. a PostgreSQL slot)."""
        return self

    @property
    def source_database(self) -> str | None:
        """The database every captured table lies in, for a source whose two-part table names
        are (schema, table): its events' ``source.db``, the first name part then being
        ``source.schema``. None where the first name part is the database (MySQL)."""
        return None

    def redacted(self) -> JSONObject:
        return {}

    def to_options(self) -> dict[str, str]:
        """The Spark source options that carry these settings."""
        return {}


@dataclass(frozen=True)
class SourceConfig:
    """Where changes come from. ``tables`` are regular expressions over the tables' two-part
    names (``db.table``; PostgreSQL ``schema.table``); ``type`` picks the source
    (:mod:`sparkcdc.sources.registry`), ``settings`` holds the type's own settings.
    ``signal_table`` is the table signals are inserted into (see
    :mod:`sparkcdc.snapshot.signals`); ``tables`` always captures it. ``password`` never
    prints (:class:`~sparkcdc.config.secret.Secret`; text given here is wrapped in one)."""

    host: str
    port: int
    user: str
    password: Secret
    tables: tuple[str, ...]
    startup: str = "initial"
    type: str = DEFAULT_TYPE
    key_columns: dict[str, tuple[str, ...]] = field(default_factory=dict)
    connect_timeout: float = 10.0
    reconnect_timeout: float = 300.0  # how long the log reader retries a lost connection
    snapshot: SnapshotConfig = field(default_factory=SnapshotConfig)
    signal_table: str | None = None  # "db.table" the signals are inserted into (captured too)
    settings: SourceSettings = field(default_factory=SourceSettings)
    tls: TlsConfig = field(default_factory=TlsConfig)
    heartbeat: HeartbeatConfig = field(default_factory=HeartbeatConfig)
    on_log_gone: str = "fail"  # or "resnapshot": see LOG_GONE_ACTIONS
    on_unmatched: str = "fail"  # or "warn": see UNMATCHED_ACTIONS, sources/table_filter.py
    # the capture filters (core/capture.py): tables and columns left out, operations skipped,
    # values masked
    tables_exclude: tuple[str, ...] = ()
    columns: dict[str, tuple[str, ...]] = field(default_factory=dict)  # include / exclude
    skip_operations: tuple[str, ...] = ()
    masks: tuple[Mask, ...] = ()
    shadow_tables: str = "skip"  # or "capture": see SHADOW_TABLES_ACTIONS

    def __post_init__(self) -> None:
        object.__setattr__(self, "password", Secret.of(self.password))

    @functools.cached_property
    def capture(self) -> CaptureRules:
        """The capture filters as one set of rules."""
        return CaptureRules(
            tables_exclude=self.tables_exclude,
            columns_include=self.columns.get("include", ()),
            columns_exclude=self.columns.get("exclude", ()),
            skip_operations=self.skip_operations,
            masks=self.masks,
            shadow_tables=self.shadow_tables == "capture",
        )

    @property
    def takes_snapshot(self) -> bool:
        """Whether a new pipeline snapshots the tables first (startup ``initial``/``snapshot``)."""
        return self.startup in SNAPSHOT_STARTUPS

    @property
    def row_keys(self) -> dict[str, tuple[str, ...]]:
        """The columns identifying rows of tables without a primary key: ``key_columns``, else
        the table's ``snapshot.chunk_key_columns`` (a unique column the snapshot is cut by)."""
        return {**self.snapshot.chunk_key_columns, **self.key_columns}

    def redacted(self) -> JSONObject:
        """The settings without the password, for logs."""
        return {
            "type": self.type,
            "host": self.host,
            "port": self.port,
            "user": self.user,
            "password": str(self.password),
            "tables": list(self.tables),
            "startup": self.startup,
            "snapshot": self.snapshot.redacted(),
            "signal_table": self.signal_table,
            "tls": self.tls.mode,
            "heartbeat": self.heartbeat.redacted(),
            "tables_exclude": list(self.tables_exclude),
            "columns": {k: list(v) for k, v in self.columns.items()},
            "skip_operations": list(self.skip_operations),
            "masks": [f"{m.kind} {list(m.columns)}" for m in self.masks],
            "shadow_tables": self.shadow_tables,
            **self.settings.redacted(),
        }


@dataclass(frozen=True)
class MaintenanceConfig:
    """``sink.maintenance``: the running pipeline's upkeep of its Delta tables, every
    ``compact_every`` seconds (0: never; ``sparkcdc compact`` still does it on demand): small
    files compacted, and files no version of the last ``retain`` seconds reads deleted
    (:mod:`sparkcdc.sinks.delta.upkeep`)."""

    compact_every: float = 600.0
    retain: float = 3600.0

    @property
    def enabled(self) -> bool:
        return self.compact_every > 0


@dataclass(frozen=True)
class SinkConfig:
    """Where changes go: Delta tables under ``path`` (``<db>/<table>`` and ``__changelog``), a
    folder or object storage (``s3://``, ``gs://``, ``abfss://``) reached with delta-rs's
    ``storage_options``; the options naming a key or token hold a
    :class:`~sparkcdc.config.secret.Secret` and never print. ``type`` names the sink type
    (:mod:`sparkcdc.sinks.registry`); ``settings`` holds its own keys (``SinkType.keys``)."""

    path: str
    type: str = "delta"
    maintenance: MaintenanceConfig = field(default_factory=MaintenanceConfig)
    storage_options: dict[str, str | Secret] = field(default_factory=dict)
    settings: dict[str, str] = field(default_factory=dict)  # the sink type's own keys, as text
    # the snapshots' rows (initial and incremental) as ``r`` rows of the change log too, as
    # Debezium and Flink CDC emit them; False: in the replica only
    snapshot_in_changelog: bool = True
    history: HistorySpec = field(default_factory=HistorySpec)  # sink.history: SCD type 2 tables

    def redacted(self) -> JSONObject:
        """The settings with every secret option shown as ``***``, for logs (the sink type's
        own keys by name only)."""
        names: list[JSONValue] = list(sorted(self.settings))
        return {
            "type": self.type,
            "settings": names,
            "path": self.path,
            "storage_options": {k: str(v) for k, v in self.storage_options.items()},
        }


@dataclass(frozen=True)
class StoreConfig:
    """The event store between the log reader and Spark: a memory-bounded ring buffer."""

    max_bytes: int = 64 * 1024 * 1024
    max_items: int = 16384
    batch_mode: str = "MEMSIZE"
    item_rows: int = 2048


@dataclass(frozen=True)
class MetricsConfig:
    """Where ``sparkcdc run`` serves Prometheus metrics (``GET /metrics``); port 0: nowhere."""

    port: int = 0
    host: str = "127.0.0.1"

    @property
    def enabled(self) -> bool:
        return self.port != 0


@dataclass(frozen=True)
class PipelineConfig:
    checkpoint: str
    trigger_seconds: float = 1.0
    store: StoreConfig = field(default_factory=StoreConfig)
    spark_master: str = "local[*]"
    spark_ui: bool = True  # Spark's web UI (its Structured Streaming tab shows the stream)
    spark_conf: dict[str, str] = field(default_factory=dict)
    metrics: MetricsConfig = field(default_factory=MetricsConfig)
    schema_changes: SchemaPolicy = field(default_factory=SchemaPolicy)
    transactions: bool = False  # BEGIN/END records of each source transaction


@dataclass(frozen=True)
class Config:
    source: SourceConfig
    sink: SinkConfig
    pipeline: PipelineConfig
