"""The options of the ``mysql-cdc`` source, parsed once and checked by name.

=========================  ==============================================================
host, port                 the MySQL/MariaDB server
user, password             a user with REPLICATION SLAVE, REPLICATION CLIENT and SELECT
tables                     comma-separated regular expressions over ``db.table`` (required;
                           a batch read may give ``table`` instead)
table                      one ``db.table`` for a batch read
                           (``spark.read.format("mysql-cdc").option("table", "db.t")``);
                           ``tables`` defaults to it, escaped
startup                    where a new stream starts: ``initial`` (default: snapshot every
                           captured table, then stream the log), ``snapshot`` (snapshot,
                           then stop), ``earliest``, ``latest``, ``gtid:…``, ``position:…``,
                           ``timestamp:…``; a stream with a checkpoint resumes from it
server_id                  the replica server id the log reader announces (unique on the
                           server), or a range ``5701-5710`` whose further ids are the
                           snapshot readers' (without a range: the ``parallelism`` ids
                           after it)
key_columns                JSON object ``{"db.table": ["col", …]}`` for tables without a
                           primary key
chunk_size                 rows per snapshot chunk (default 8096)
parallelism                concurrent snapshot readers, 1..64 (default 2)
chunk_key_columns          JSON object ``{"db.table": ["col", …]}``: the columns a table is
                           chunked along (default: its key)
distribution_factor_lower  a single integer chunk key is cut evenly while
distribution_factor_upper  (max - min + 1) / rows lies within these bounds (defaults 0.05
                           and 1000; lower > 0, upper >= 1 and >= lower)
snapshot_batch_rows        rows one Spark task reads in one micro-batch (default 4194304)
incremental_chunks         chunks one incremental-snapshot window reads in parallel, 1..64
                           (default 2)
signal_table               ``db.table`` signals are inserted into (optional; ``tables``
                           captures it, added when no pattern does)
signal_dir                 path of the folder signals are written to as files (optional; the
                           pipeline keeps it beside the checkpoint)
batch_mark                 path of the file the sink rewrites once a micro-batch's log
                           changes are committed; reads ahead of incremental-snapshot windows
                           wait for it (optional; the pipeline sets it)
snapshot_dir               path of the snapshot state folder (optional; the pipeline keeps it
                           beside the checkpoint)
snapshot_delivery          how snapshot rows reach the stream: ``rows`` (default: every row
                           as an ``r`` event) or ``store`` (each chunk as one ``k`` event
                           naming its typed Arrow file in the snapshot folder; the sink
                           reads the rows there: no JSON and no trip through the JVM)
max_bytes                  the event store's memory limit and the largest micro-batch, in
                           bytes
max_items                  the event store's slots (a power of two)
batch_mode                 ``MEMSIZE`` or ``ITEMSIZE`` (Canal's store limits)
item_rows                  the most change events in one store item
schema_history             path of the schema history file (required; keep it beside the
                           checkpoint)
status_file                path of the status file the source process rewrites every second
                           (optional)
reader_factory             ``module:Class`` replacing the MySQL log reader (tests only)
=========================  ==============================================================

Wrong values fail with the sentence the same setting gets in the pipeline YAML, naming the
option: ``the mysql-cdc option 'parallelism': 0 is out of range; use 1..64.``
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from sparkcdc.config.model import SourceConfig
from sparkcdc.config.values import (
    as_server_ids,
    as_signal_table,
    as_snapshot,
    as_startup,
    as_table_name,
    capturing_signal_table,
    check_snapshot_ids,
)
from sparkcdc.core.errors import ConfigError

T = TypeVar("T")
DELIVERIES = ("rows", "store")

# option name -> SnapshotConfig field
SNAPSHOT_OPTIONS = {
    "chunk_size": "chunk_size",
    "parallelism": "parallelism",
    "chunk_key_columns": "chunk_key_columns",
    "distribution_factor_lower": "distribution_factor_lower",
    "distribution_factor_upper": "distribution_factor_upper",
    "snapshot_batch_rows": "batch_rows",
    "incremental_chunks": "incremental_chunks",
    "incremental_window": "incremental_window",
}


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
    snapshot_dir: str | None = None
    snapshot_delivery: str = "rows"
    table: str | None = None  # the one db.table of a batch read
    signal_dir: str | None = None  # the folder of the file signal channel
    batch_mark: str | None = None  # the sink's batch mark (:mod:`.mark`)

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> SourceOptions:
        """Check and convert the options Spark passes (all text); ConfigError names the option."""
        opts = {str(k).lower(): v for k, v in options.items()}

        def given(name: str) -> str | None:
            value = opts.get(name)
            return None if value is None or str(value).strip() == "" else str(value)

        def required(name: str, alternative: str = "") -> str:
            value = given(name)
            if value is None:
                raise ConfigError(
                    f"the mysql-cdc source needs the option '{name}'{alternative}; "
                    f"set it with .option('{name}', ...).",
                    key=name,
                )
            return value

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

        table = given("table")
        if table is not None:
            table = _checked(lambda: as_table_name(table, "table"))
        if table is not None and given("tables") is None:
            tables: tuple[str, ...] = (re.escape(table),)
        else:
            names = required("tables", " (or 'table' for a batch read of one table)")
            tables = tuple(t.strip() for t in names.split(",") if t.strip())
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
        signal_table = given("signal_table")
        if signal_table is not None:
            signal_table = _checked(lambda: as_signal_table(signal_table, "signal_table"))
        startup = _checked(lambda: as_startup(given("startup") or "initial", "startup"))
        server_id, server_id_last = _checked(
            lambda: as_server_ids(given("server_id") or "5701", "server_id")
        )
        snapshot = _checked(
            lambda: as_snapshot(
                _snapshot_values(given), {f: o for o, f in SNAPSHOT_OPTIONS.items()}
            )
        )
        source = SourceConfig(
            host=required("host"),
            port=integer("port", 3306),
            user=required("user"),
            password=str(opts.get("password") or ""),
            tables=capturing_signal_table(tables, signal_table),
            startup=startup,
            server_id=server_id,
            server_id_last=server_id_last,
            key_columns=key_columns,
            connect_timeout=float(opts.get("connect_timeout") or 10.0),
            snapshot=snapshot,
            signal_table=signal_table,
        )
        _checked(lambda: check_snapshot_ids(source, "server_id", "parallelism"))
        delivery = (given("snapshot_delivery") or "rows").lower()
        if delivery not in DELIVERIES:
            raise ConfigError(
                f"the mysql-cdc option 'snapshot_delivery': {delivery!r} is not one of "
                f"{', '.join(DELIVERIES)}.",
                key="snapshot_delivery",
            )
        return cls(
            source=source,
            # a batch read (``table`` alone) reads no log history: only streams need the file
            schema_history=given("schema_history") or ""
            if table is not None and not opts.get("tables")
            else required("schema_history"),
            max_bytes=integer("max_bytes", cls.max_bytes),
            max_items=integer("max_items", cls.max_items),
            batch_mode=str(opts.get("batch_mode") or "MEMSIZE").upper(),
            item_rows=integer("item_rows", cls.item_rows),
            status_file=str(opts["status_file"]) if opts.get("status_file") else None,
            reader_factory=str(opts["reader_factory"]) if opts.get("reader_factory") else None,
            snapshot_dir=given("snapshot_dir"),
            snapshot_delivery=delivery,
            table=table,
            signal_dir=given("signal_dir"),
            batch_mark=given("batch_mark"),
        )


def _snapshot_values(given: Callable[[str], str | None]) -> dict[str, Any]:
    """The snapshot options given, by the name :func:`as_snapshot` checks them under (the
    option's); ``chunk_key_columns`` decoded from JSON."""
    values: dict[str, Any] = {}
    for option, name in SNAPSHOT_OPTIONS.items():
        values[name] = given(option)
    text = values["chunk_key_columns"]
    if text is not None:
        try:
            values["chunk_key_columns"] = json.loads(text)
        except ValueError:
            raise ConfigError(
                f'chunk_key_columns: {text!r} is not a JSON object like {{"db.table": ["col"]}}.',
                key="chunk_key_columns",
            ) from None
    return values


def _checked(check: Callable[[], T]) -> T:
    """Run ``check``; its ConfigError (``"<key>: <problem>."``) becomes the same sentence
    about the option, ``"the mysql-cdc option '<key>': <problem>."``."""
    try:
        return check()
    except ConfigError as exc:
        key = str(exc.fields.get("key") or "")
        option = re.split(r"[.\[]", key, maxsplit=1)[0]
        inner = key[len(option) :].lstrip(".")
        problem = exc.message
        if problem.startswith(f"{key}:"):
            problem = problem[len(key) + 1 :].strip()
        where = f", at {inner}" if inner else ""
        raise ConfigError(
            f"the mysql-cdc option '{option}'{where}: {problem}", key=option
        ) from None


def source_options(
    source: SourceConfig,
    schema_history: str,
    *,
    max_bytes: int,
    max_items: int,
    batch_mode: str,
    item_rows: int,
    status_file: str | None = None,
    snapshot_dir: str | None = None,
    snapshot_delivery: str = "rows",
    signal_dir: str | None = None,
    batch_mark: str | None = None,
) -> dict[str, str]:
    """The ``.option(...)`` values that describe ``source`` to the ``mysql-cdc`` source."""
    snapshot = source.snapshot
    server_id = str(source.server_id)
    if source.server_id_last is not None:
        server_id = f"{source.server_id}-{source.server_id_last}"
    opts = {
        "host": source.host,
        "port": str(source.port),
        "user": source.user,
        "password": source.password,
        "tables": ",".join(source.tables),
        "startup": source.startup,
        "server_id": server_id,
        "connect_timeout": str(source.connect_timeout),
        "chunk_size": str(snapshot.chunk_size),
        "parallelism": str(snapshot.parallelism),
        "distribution_factor_lower": repr(snapshot.distribution_factor_lower),
        "distribution_factor_upper": repr(snapshot.distribution_factor_upper),
        "snapshot_batch_rows": str(snapshot.batch_rows),
        "incremental_chunks": str(snapshot.incremental_chunks),
        "incremental_window": repr(snapshot.incremental_window),
        "max_bytes": str(max_bytes),
        "max_items": str(max_items),
        "batch_mode": batch_mode,
        "item_rows": str(item_rows),
        "schema_history": schema_history,
        "snapshot_delivery": snapshot_delivery,
    }
    if source.key_columns:
        opts["key_columns"] = json.dumps({k: list(v) for k, v in source.key_columns.items()})
    if snapshot.chunk_key_columns:
        opts["chunk_key_columns"] = json.dumps(
            {k: list(v) for k, v in snapshot.chunk_key_columns.items()}
        )
    if status_file:
        opts["status_file"] = status_file
    if snapshot_dir:
        opts["snapshot_dir"] = snapshot_dir
    if source.signal_table:
        opts["signal_table"] = source.signal_table
    if signal_dir:
        opts["signal_dir"] = signal_dir
    if batch_mark:
        opts["batch_mark"] = batch_mark
    return opts
