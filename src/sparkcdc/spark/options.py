"""The options of the ``mysql-cdc`` stream source, parsed once and checked by name.

==============  =========================================================================
host, port      the MySQL/MariaDB server
user, password  a user with REPLICATION SLAVE, REPLICATION CLIENT and SELECT
tables          comma-separated regular expressions over ``db.table``
startup         where a new stream starts (``earliest``, ``latest``, ``gtid:…``, ``position:…``,
                ``timestamp:…``); a stream with a checkpoint resumes from it
server_id       the replica server id the log reader announces (unique on the server)
key_columns     JSON object ``{"db.table": ["col", …]}`` for tables without a primary key
max_bytes       the event store's memory limit and the largest micro-batch, in bytes
max_items       the event store's slots (a power of two)
batch_mode      ``MEMSIZE`` or ``ITEMSIZE`` (Canal's store limits)
item_rows       the most change events in one store item
schema_history  path of the schema history file (required; keep it beside the checkpoint)
status_file     path of the status file the source process rewrites every second (optional)
reader_factory  ``module:Class`` replacing the MySQL log reader (tests only)
==============  =========================================================================
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from sparkcdc.config.model import SourceConfig
from sparkcdc.core.errors import ConfigError


@dataclass(frozen=True)
class SourceOptions:
    source: SourceConfig
    schema_history: str
    max_bytes: int = 64 * 1024 * 1024
    max_items: int = 16384
    batch_mode: str = "MEMSIZE"
    item_rows: int = 2048
    status_file: str | None = None
    reader_factory: str | None = None

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> SourceOptions:
        """Check and convert the options Spark passes (all text); ConfigError names the option."""
        opts = {str(k).lower(): v for k, v in options.items()}

        def required(name: str) -> str:
            value = opts.get(name)
            if value is None or str(value).strip() == "":
                raise ConfigError(
                    f"the mysql-cdc source needs the option '{name}'; "
                    f"set it with .option('{name}', ...).",
                    key=name,
                )
            return str(value)

        def integer(name: str, default: int) -> int:
            value = opts.get(name)
            if value is None or str(value).strip() == "":
                return default
            try:
                return int(str(value))
            except ValueError:
                raise ConfigError(
                    f"the mysql-cdc option '{name}' must be a whole number, got {value!r}.",
                    key=name,
                ) from None

        tables = tuple(t.strip() for t in required("tables").split(",") if t.strip())
        key_columns: dict[str, tuple[str, ...]] = {}
        if opts.get("key_columns"):
            try:
                raw = json.loads(str(opts["key_columns"]))
                key_columns = {str(k): tuple(str(c) for c in v) for k, v in raw.items()}
            except (ValueError, AttributeError, TypeError):
                raise ConfigError(
                    "the mysql-cdc option 'key_columns' must be a JSON object like "
                    '{"db.table": ["col"]}.',
                    key="key_columns",
                ) from None
        source = SourceConfig(
            host=required("host"),
            port=integer("port", 3306),
            user=required("user"),
            password=str(opts.get("password") or ""),
            tables=tables,
            startup=str(opts.get("startup") or "earliest"),
            server_id=integer("server_id", 5701),
            key_columns=key_columns,
            connect_timeout=float(opts.get("connect_timeout") or 10.0),
        )
        return cls(
            source=source,
            schema_history=required("schema_history"),
            max_bytes=integer("max_bytes", cls.max_bytes),
            max_items=integer("max_items", cls.max_items),
            batch_mode=str(opts.get("batch_mode") or "MEMSIZE").upper(),
            item_rows=integer("item_rows", cls.item_rows),
            status_file=str(opts["status_file"]) if opts.get("status_file") else None,
            reader_factory=str(opts["reader_factory"]) if opts.get("reader_factory") else None,
        )


def source_options(
    source: SourceConfig,
    schema_history: str,
    *,
    max_bytes: int,
    max_items: int,
    batch_mode: str,
    item_rows: int,
    status_file: str | None = None,
) -> dict[str, str]:
    """The ``.option(...)`` values that describe ``source`` to the ``mysql-cdc`` stream source."""
    opts = {
        "host": source.host,
        "port": str(source.port),
        "user": source.user,
        "password": source.password,
        "tables": ",".join(source.tables),
        "startup": source.startup,
        "server_id": str(source.server_id),
        "connect_timeout": str(source.connect_timeout),
        "max_bytes": str(max_bytes),
        "max_items": str(max_items),
        "batch_mode": batch_mode,
        "item_rows": str(item_rows),
        "schema_history": schema_history,
    }
    if source.key_columns:
        opts["key_columns"] = json.dumps({k: list(v) for k, v in source.key_columns.items()})
    if status_file:
        opts["status_file"] = status_file
    return opts
