"""The options of the ``<type>-cdc`` sources (``mysql-cdc``), parsed once and checked by name.

Every source takes the same options (the table is in docs/spark.md): the server and user, the
tables and startup, the snapshot settings, the event store's limits and the paths the pipeline
keeps beside its checkpoint; each source type adds its own (its
:attr:`~sparkcdc.config.model.SourceSettings.KEYS`, MySQL's ``server_id``). Every option goes
through the converter of the pipeline setting it stands for, so a wrong value fails with the
same sentence, naming the option: ``the mysql-cdc option 'parallelism': 0 is out of range; use
1..64.``
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, NoReturn, TypeVar

from sparkcdc.config.model import DEFAULT_TYPE, SourceConfig
from sparkcdc.config.secret import Secret, unseal
from sparkcdc.config.settings import (
    SOURCE_SETTINGS,
    Setting,
    settings_values,
    source_of,
    value_of,
)
from sparkcdc.config.values import (
    as_bool,
    as_size,
    as_table_name,
    ranged,
)
from sparkcdc.core.errors import ConfigError
from sparkcdc.core.offset import Offset
from sparkcdc.sources.port import Source, SourceType
from sparkcdc.sources.registry import canonical, source_type

T = TypeVar("T")
DELIVERIES = ("rows", "store")
CHANGELOGS = ("debezium", "flink")
OTHER_OPTIONS = (
    "password", "password_sealed", "table", "max_bytes", "max_items", "batch_mode", "item_rows",
    "schema_history", "status_file", "snapshot_dir", "snapshot_delivery", "signal_dir",
    "batch_mark", "log_dir", "stop_file", "start_file", "sink_type", "snapshot_in_changelog",
    "changelog",
)  # fmt: skip
"""The options besides those of the common settings (:data:`SOURCE_SETTINGS`) and of the source
type's own (:attr:`~sparkcdc.config.model.SourceSettings.KEYS`): the password, a batch read's
table, the event store's limits, the paths the pipeline keeps beside its checkpoint and the sink
type whose chunk writer a snapshot's tasks run, and whether that writes the change log's file;
the row shape of a typed table stream (``changelog``)."""


@dataclass(frozen=True)
class SourceOptions:
    source: SourceConfig
    schema_history: str
    max_bytes: int = 64 * 1024 * 1024
    max_items: int = 16384
    batch_mode: str = "MEMSIZE"
    item_rows: int = 2048
    status_file: str | None = None
    snapshot_dir: str | None = None
    snapshot_delivery: str = "rows"
    sink_type: str = "delta"  # whose chunk writer a snapshot task runs (:mod:`sparkcdc.sinks`)
    snapshot_in_changelog: bool = True  # the chunk writer writes the change log's ``r`` rows
    table: str | None = None  # the one db.table of a batch read or of a typed table stream
    signal_dir: str | None = None  # the folder of the file signal channel
    batch_mark: str | None = None  # the sink's batch mark (:mod:`..incremental.batch_mark`)
    log_dir: str | None = None  # micro-batches as files (:mod:`sparkcdc.store.batch_files`)
    stop_file: str | None = None  # once it exists, no micro-batch is planned (a run stopping)
    start_file: str | None = None  # the new stream's first offset, kept (:mod:`.first_offset`)
    changelog: str = "debezium"  # a table stream's rows: envelopes, or Flink's row kinds

    @property
    def table_stream(self) -> bool:
        """A stream of the one ``table`` with typed images (``table`` and the
        ``schema_history`` only streams need; :mod:`~.table_stream`), not a batch read."""
        return self.table is not None and bool(self.schema_history)

    @property
    def kind(self) -> SourceType:
        """The source type (its offsets, its settings, its Spark format)."""
        return source_type(self.source.type)

    def open_source(self) -> Source:
        """The source behind the port (imports its drivers)."""
        return self.kind.open(self.source)

    def offset(self, value: Mapping[str, object]) -> Offset:
        """The source's offset that ``value`` (a Spark offset) names."""
        return self.kind.offsets.from_json(value)

    @classmethod
    def parse(cls, options: Mapping[str, str], source: str = DEFAULT_TYPE) -> SourceOptions:
        """Check and convert the options Spark passes (all text) to the ``source`` type's
        source; ConfigError names the option."""
        opts = _Options(options, source)
        table = opts.given("table")
        if table is not None:
            table = opts.checked(lambda: as_table_name(table, "table"))
        delivery = (opts.given("snapshot_delivery") or "rows").lower()
        if delivery not in DELIVERIES:
            opts.fail("snapshot_delivery", f"{delivery!r} is not one of {', '.join(DELIVERIES)}")
        if table is not None and opts.given("schema_history") and opts.given("log_dir"):
            opts.fail(
                "log_dir",
                "a typed stream of one table (options table and schema_history) carries its "
                "rows itself; leave log_dir out",
            )
        return cls(
            changelog=_changelog(opts, table),
            source=_source_config(opts, table),
            # a batch read (``table`` alone) reads no log history: only streams need the file
            schema_history=opts.given("schema_history") or ""
            if table is not None and not opts.given("tables")
            else opts.required("schema_history"),
            max_bytes=opts.converted("max_bytes", as_size, cls.max_bytes),
            max_items=opts.converted("max_items", ranged(1, 2**31 - 1), cls.max_items),
            batch_mode=_batch_mode(opts),
            item_rows=opts.converted("item_rows", ranged(1, 2**31 - 1), cls.item_rows),
            status_file=opts.given("status_file"),
            snapshot_dir=opts.given("snapshot_dir"),
            snapshot_delivery=delivery,
            sink_type=opts.given("sink_type") or cls.sink_type,
            snapshot_in_changelog=opts.converted("snapshot_in_changelog", as_bool, True),
            table=table,
            signal_dir=opts.given("signal_dir"),
            batch_mark=opts.given("batch_mark"),
            log_dir=opts.given("log_dir"),
            stop_file=opts.given("stop_file"),
            start_file=opts.given("start_file"),
        )


class _Options:
    """The options Spark passed, read by name, with errors naming the option."""

    def __init__(self, options: Mapping[str, str], name: str) -> None:
        self.values = {str(k).lower(): v for k, v in options.items()}
        self.name = canonical(name)
        self.kind = source_type(name)
        self.format = self.kind.format

    def given(self, name: str) -> str | None:
        value = self.values.get(name)
        return None if value is None or str(value).strip() == "" else str(value)

    def fail(self, name: str, problem: str) -> NoReturn:
        raise ConfigError(f"the {self.format} option '{name}': {problem}.", key=name)

    def required(self, name: str, alternative: str = "") -> str:
        value = self.given(name)
        if value is None:
            raise ConfigError(
                f"the {self.format} source needs the option '{name}'{alternative}; "
                f"set it with .option('{name}', ...).",
                key=name,
            )
        return value

    def converted(self, name: str, convert: Callable[[str, str], T], default: T) -> T:
        """The option converted as the pipeline file's setting is (``default`` if not given)."""
        value = self.given(name)
        if value is None:
            return default
        return self.checked(lambda: convert(value, name))

    def checked(self, check: Callable[[], T]) -> T:
        return _checked(check, self.format)


def _source_config(opts: _Options, table: str | None) -> SourceConfig:
    """The source described by the options (``table``: a batch read's one table)."""
    kind = opts.kind

    def given(name: str) -> str | None:
        if name == "tables" and table is not None and opts.given("tables") is None:
            return re.escape(table)
        return opts.given(name)

    def missing(setting: Setting) -> Any:
        batch_read = " (or 'table' for a batch read of one table)"
        opts.required(setting.options[0], batch_read if setting.key == "tables" else "")

    values = settings_values(
        lambda setting: opts.checked(lambda: setting.from_options(given, kind.settings)), missing
    )
    own = opts.checked(lambda: kind.settings.from_values(opts.given, _option_name))
    source = opts.checked(
        lambda: source_of(
            values,
            lambda setting: setting.options[0],
            type=opts.name,
            port_default=kind.default_port,
            password=_password(opts),
            settings=own,
        )
    )
    opts.checked(lambda: own.check(source, _option_name))
    return source


def _password(opts: _Options) -> Secret:
    """The password: ``password_sealed`` (how ``sparkcdc run`` passes it: :func:`source_options`)
    opened with this process's key, else ``password`` as given."""
    sealed = opts.given("password_sealed")
    if sealed is not None:
        return Secret(unseal(sealed, f"the {opts.format} option 'password_sealed'"))
    return Secret(opts.given("password") or "")


def _batch_mode(opts: _Options) -> str:
    mode = (opts.given("batch_mode") or "MEMSIZE").upper()
    if mode not in ("MEMSIZE", "ITEMSIZE"):
        opts.fail("batch_mode", f"{mode!r} is not one of MEMSIZE, ITEMSIZE")
    return mode


def _changelog(opts: _Options, table: str | None) -> str:
    """The ``changelog`` option: the rows of a typed stream of one table (``table`` and
    ``schema_history``), ``debezium`` envelopes (default) or ``flink`` row kinds."""
    given = opts.given("changelog")
    if given is None:
        return "debezium"
    changelog = given.strip().lower()
    if changelog not in CHANGELOGS:
        opts.fail("changelog", f"{given!r} is not one of {', '.join(CHANGELOGS)}")
    if table is None or not opts.given("schema_history"):
        opts.fail(
            "changelog",
            "it shapes the typed change stream of one table; set the options 'table' and "
            "'schema_history' with it (on spark.readStream)",
        )
    return changelog


def _option_name(key: str) -> str:
    """The option of a setting (``snapshot.parallelism`` is the option ``parallelism``)."""
    return key.rsplit(".", 1)[-1]


def _checked(check: Callable[[], T], format: str) -> T:
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
        raise ConfigError(f"the {format} option '{option}'{where}: {problem}", key=option) from None


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
    sink_type: str = "delta",
    snapshot_in_changelog: bool = True,
    signal_dir: str | None = None,
    batch_mark: str | None = None,
    log_dir: str | None = None,
    stop_file: str | None = None,
    start_file: str | None = None,
) -> dict[str, str]:
    """The ``.option(...)`` values that describe ``source`` to its ``<type>-cdc`` source; the
    password sealed (``password_sealed``) when this process holds a sealing key
    (:mod:`sparkcdc.config.secret`), so Spark never holds it in clear text."""
    sealed = source.password.sealed()
    opts = {
        **(
            {"password": source.password.reveal()}
            if sealed is None
            else {"password_sealed": sealed}
        ),
        **source.settings.to_options(),
        "max_bytes": str(max_bytes),
        "max_items": str(max_items),
        "batch_mode": batch_mode,
        "item_rows": str(item_rows),
        "schema_history": schema_history,
        "snapshot_delivery": snapshot_delivery,
        "sink_type": sink_type,
        "snapshot_in_changelog": "true" if snapshot_in_changelog else "false",
    }
    for setting in SOURCE_SETTINGS:
        opts.update(setting.to_options(value_of(source, setting.field)))
    paths = {
        "status_file": status_file,
        "snapshot_dir": snapshot_dir,
        "signal_dir": signal_dir,
        "batch_mark": batch_mark,
        "log_dir": log_dir,
        "stop_file": stop_file,
        "start_file": start_file,
    }
    opts.update({name: value for name, value in paths.items() if value})  # fmt: skip
    return opts
