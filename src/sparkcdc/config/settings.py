"""The source settings every source type shares, declared once.

Each :class:`Setting` names its key in the pipeline file's ``source`` section, the field of
:class:`~sparkcdc.config.model.SourceConfig` it fills, how a value is checked, its default, and
the option(s) of the ``<type>-cdc`` Spark source that carry it. The YAML loader
(:mod:`sparkcdc.config.load`), the Spark options (:mod:`sparkcdc.spark.stream.options`: reading
and writing them) and the reference tables' test all read this list, so a new common setting is
one entry here. A source type's own settings (MySQL's ``server_id``) are its
:class:`~sparkcdc.config.model.SourceSettings`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from typing import Any

from sparkcdc.config.capture_values import (
    as_columns,
    as_masks,
    as_skip_operations,
    as_tables_exclude,
    masks_from_option,
    masks_option,
)
from sparkcdc.config.model import (
    LOG_GONE_ACTIONS,
    SHADOW_TABLES_ACTIONS,
    UNMATCHED_ACTIONS,
    HeartbeatConfig,
    SnapshotConfig,
    SourceConfig,
    SourceSettings,
    TlsConfig,
)
from sparkcdc.config.values import (
    MAX_PARALLELISM,
    MAX_ROWS,
    as_duration,
    as_heartbeat,
    as_key_columns,
    as_number,
    as_patterns,
    as_signal_table,
    as_startup,
    as_text,
    as_tls,
    as_window,
    capturing_signal_table,
    fail,
    heartbeat_of,
    ranged,
)

Convert = Callable[[Any, str, type[SourceSettings]], Any]
Given = Callable[[str], str | None]
REQUIRED = object()  # the default of a setting that must be given


def _plain(convert: Callable[[Any, str], Any]) -> Convert:
    return lambda value, key, _own: convert(value, key)


def _json_object(text: str, key: str) -> Any:
    """An option's JSON text (a mapping of tables to columns)."""
    try:
        return json.loads(text)
    except ValueError:
        fail(key, f'{text!r} is not a JSON object like {{"db.table": ["col"]}}')


def _json_value(text: str, key: str) -> Any:
    """An option's JSON text (a list, or a mapping of lists)."""
    try:
        return json.loads(text)
    except ValueError:
        fail(key, f"{text!r} is not JSON")


def _json_list(value: tuple[str, ...]) -> str | None:
    return json.dumps(list(value)) if value else None


def _columns_text(value: dict[str, tuple[str, ...]]) -> str | None:
    return json.dumps({k: list(v) for k, v in value.items()}) if value else None


@dataclass(frozen=True)
class Setting:
    """One common source setting (see the module docstring). ``options`` are the Spark options
    that carry it: one option holds its value as text (``decode`` turns the text into what the
    YAML would hold, ``encode`` the value into the text; None: no option), several are read by
    ``read_options`` and written by ``write_options``."""

    key: str
    field: str
    convert: Convert
    default: Any
    shown: str
    options: tuple[str, ...] = ()
    decode: Callable[[str, str], Any] | None = None
    encode: Callable[[Any], str | None] = str
    read_options: Callable[[Given], Any] | None = None
    write_options: Callable[[Any], dict[str, str]] | None = None

    def from_options(self, given: Given, own: type[SourceSettings]) -> Any:
        """The value the options hold (None: not given, or no option carries it)."""
        if not self.options:
            return None
        if self.read_options is not None:
            return self.read_options(given)
        (option,) = self.options
        text = given(option)
        if text is None:
            return None
        raw = text if self.decode is None else self.decode(text, option)
        return self.convert(raw, option, own)

    def to_options(self, value: Any) -> dict[str, str]:
        """The options that carry ``value`` (none where it is the empty or off value)."""
        if self.write_options is not None:
            return self.write_options(value)
        if not self.options or value is None:
            return {}
        text = self.encode(value)
        return {} if text is None else {self.options[0]: text}


TLS_OPTIONS = {"tls": "mode", "tls_ca": "ca", "tls_cert": "cert", "tls_key": "key"}
HEARTBEAT_OPTIONS = ("heartbeat_interval", "heartbeat_action_query")


def _tls_from(given: Given) -> TlsConfig | None:
    values = {field: given(name) for name, field in TLS_OPTIONS.items()}
    present = {field: value for field, value in values.items() if value is not None}
    return as_tls(present, "tls") if present else None


def _tls_to(tls: TlsConfig) -> dict[str, str]:
    return {name: value for name, field in TLS_OPTIONS.items() if (value := getattr(tls, field))}


def _heartbeat_from(given: Given) -> HeartbeatConfig | None:
    interval, query = HEARTBEAT_OPTIONS
    found = given(interval), given(query)
    return None if found == (None, None) else heartbeat_of(*found, interval, query)


def _heartbeat_to(heartbeat: HeartbeatConfig) -> dict[str, str]:
    if not heartbeat.enabled:
        return {}
    interval, query = HEARTBEAT_OPTIONS
    written = {interval: repr(heartbeat.interval)}
    if heartbeat.action_query:
        written[query] = heartbeat.action_query
    return written


def _patterns_from(given: Given) -> tuple[str, ...] | None:
    text = given("tables")
    if text is None:
        return None
    return as_patterns([t.strip() for t in text.split(",") if t.strip()] or "", "tables")


def _snapshot(
    key: str, field: str, convert: Callable[[Any, str], Any], option: str, shown: str = ""
) -> Setting:
    default = getattr(SnapshotConfig(), field)
    encode = repr if isinstance(default, float) else str
    shown = shown or (f"{default:g}" if isinstance(default, float) else str(default))
    return Setting(f"snapshot.{key}", f"snapshot.{field}", _plain(convert), default, shown,
                   (option,), encode=encode)  # fmt: skip


SOURCE_SETTINGS: tuple[Setting, ...] = (
    Setting("host", "host", _plain(as_text), REQUIRED, "—", ("host",)),
    Setting(
        "port",
        "port",
        _plain(ranged(1, 65535)),
        None,
        "the type's",
        ("port",),
        encode=lambda port: str(port) if port else None,
    ),  # fmt: skip
    Setting("user", "user", _plain(as_text), REQUIRED, "—", ("user",)),
    Setting(
        "tables",
        "tables",
        _plain(as_patterns),
        REQUIRED,
        "—",
        ("tables",),
        read_options=_patterns_from,
        write_options=lambda tables: {"tables": ",".join(tables)},
    ),  # fmt: skip
    Setting(
        "startup",
        "startup",
        lambda v, k, own: as_startup(v, k, own),
        "initial",
        "initial",
        ("startup",),
    ),  # fmt: skip
    Setting(
        "key_columns",
        "key_columns",
        _plain(as_key_columns),
        {},
        "{}",
        ("key_columns",),
        decode=_json_object,
        encode=_columns_text,
    ),  # fmt: skip
    Setting(
        "connect_timeout", "connect_timeout", _plain(as_duration), 10.0, "10s", ("connect_timeout",)
    ),  # fmt: skip
    Setting(
        "reconnect_timeout",
        "reconnect_timeout",
        _plain(as_duration),
        300.0,
        "5m",
        ("reconnect_timeout",),
    ),  # fmt: skip
    _snapshot("chunk_size", "chunk_size", ranged(1, MAX_ROWS), "chunk_size"),
    _snapshot("parallelism", "parallelism", ranged(1, MAX_PARALLELISM), "parallelism"),
    Setting(
        "snapshot.chunk_key_columns",
        "snapshot.chunk_key_columns",
        _plain(as_key_columns),
        {},
        "{}",
        ("chunk_key_columns",),
        decode=_json_object,
        encode=_columns_text,
    ),  # fmt: skip
    _snapshot(
        "distribution_factor.lower",
        "distribution_factor_lower",
        as_number,
        "distribution_factor_lower",
    ),  # fmt: skip
    _snapshot(
        "distribution_factor.upper",
        "distribution_factor_upper",
        as_number,
        "distribution_factor_upper",
    ),  # fmt: skip
    _snapshot("batch_rows", "batch_rows", ranged(1, MAX_ROWS), "snapshot_batch_rows"),
    _snapshot(
        "incremental_chunks", "incremental_chunks", ranged(1, MAX_PARALLELISM), "incremental_chunks"
    ),  # fmt: skip
    _snapshot("incremental_window", "incremental_window", as_window, "incremental_window", "300ms"),
    Setting(
        "signal_table", "signal_table", _plain(as_signal_table), None, "—", ("signal_table",)
    ),  # fmt: skip
    Setting(
        "tls",
        "tls",
        _plain(as_tls),
        TlsConfig(),
        "preferred",
        tuple(TLS_OPTIONS),
        read_options=_tls_from,
        write_options=_tls_to,
    ),  # fmt: skip
    Setting(
        "heartbeat",
        "heartbeat",
        _plain(as_heartbeat),
        HeartbeatConfig(),
        "off",
        HEARTBEAT_OPTIONS,
        read_options=_heartbeat_from,
        write_options=_heartbeat_to,
    ),  # fmt: skip
    Setting(
        "on_log_gone", "on_log_gone", _plain(lambda v, k: _on_log_gone(v, k)), "fail", "fail"
    ),  # fmt: skip
    Setting(
        "on_unmatched", "on_unmatched", _plain(lambda v, k: _on_unmatched(v, k)), "fail", "fail"
    ),  # fmt: skip
    Setting(
        "tables_exclude",
        "tables_exclude",
        _plain(as_tables_exclude),
        (),
        "[]",
        ("tables_exclude",),
        decode=_json_value,
        encode=_json_list,
    ),  # fmt: skip
    Setting(
        "columns",
        "columns",
        _plain(as_columns),
        {},
        "all",
        ("columns",),
        decode=_json_value,
        encode=_columns_text,
    ),  # fmt: skip
    Setting(
        "skip_operations",
        "skip_operations",
        _plain(as_skip_operations),
        (),
        "none",
        ("skip_operations",),
        decode=_json_value,
        encode=_json_list,
    ),  # fmt: skip
    Setting(
        "masks",
        "masks",
        _plain(as_masks),
        (),
        "none",
        ("masks",),
        decode=masks_from_option,
        encode=masks_option,
    ),  # fmt: skip
    Setting(
        "shadow_tables",
        "shadow_tables",
        _plain(lambda v, k: _shadow_tables(v, k)),
        "skip",
        "skip",
        ("shadow_tables",),
    ),  # fmt: skip
)
"""Every source type's settings besides ``type`` and the password (which the loader and the
options handle themselves: a secret, and sealed between processes)."""


def _on_log_gone(value: object, key: str) -> str:
    text = as_text(value, key).strip().lower()
    if text not in LOG_GONE_ACTIONS:
        fail(key, f"{value!r} is not one of {', '.join(LOG_GONE_ACTIONS)} (fail: stop with the "
                  "way out; resnapshot: read the tables again and stream on)")  # fmt: skip
    return text


def _shadow_tables(value: object, key: str) -> str:
    text = as_text(value, key).strip().lower()
    if text not in SHADOW_TABLES_ACTIONS:
        choices = ", ".join(SHADOW_TABLES_ACTIONS)
        fail(key, f"{text!r} is not one of {choices} (skip: leave the tables of gh-ost and "
                  "pt-online-schema-change out; capture: take them too)")  # fmt: skip
    return text


def _on_unmatched(value: object, key: str) -> str:
    text = as_text(value, key).strip().lower()
    if text not in UNMATCHED_ACTIONS:
        fail(key, f"{text!r} is not supported; use one of {', '.join(UNMATCHED_ACTIONS)}")
    return text


def settings_values(
    found: Callable[[Setting], Any], missing: Callable[[Setting], Any]
) -> dict[str, Any]:
    """Every setting's value by its field: ``found(setting)`` (None: not given, its default;
    ``missing(setting)`` for a required one, which raises)."""
    values: dict[str, Any] = {}
    for setting in SOURCE_SETTINGS:
        value = found(setting)
        if value is None:
            value = missing(setting) if setting.default is REQUIRED else setting.default
        values[setting.field] = value
    return values


def setting(field: str) -> Setting:
    """The setting that fills ``field``."""
    return next(s for s in SOURCE_SETTINGS if s.field == field)


def value_of(source: SourceConfig, field: str) -> Any:
    """The value of ``field`` (``snapshot.chunk_size``: a field of the snapshot settings)."""
    found: Any = source
    for part in field.split("."):
        found = getattr(found, part)
    return found


def source_of(
    values: Mapping[str, Any],
    name: Callable[[Setting], str],
    **given: Any,
) -> SourceConfig:
    """The source of ``values`` (by field, from :func:`settings_values`) and the fields
    ``given`` besides (type, port default, password, the type's settings); the snapshot's
    bounds checked together, the signal table captured. ``name(setting)`` names a setting in
    errors."""
    snapshot = SnapshotConfig(
        **{f.name: values[f"snapshot.{f.name}"] for f in fields(SnapshotConfig)}
    )
    lower, upper = snapshot.distribution_factor_lower, snapshot.distribution_factor_upper
    lower_key = name(setting("snapshot.distribution_factor_lower"))
    upper_key = name(setting("snapshot.distribution_factor_upper"))
    if lower <= 0:
        fail(lower_key, f"{lower:g} is not above 0; use a small fraction such as 0.05")
    if upper < 1:
        fail(upper_key, f"{upper:g} is below 1; use at least 1, e.g. 1000")
    if upper < lower:
        if upper == SnapshotConfig.distribution_factor_upper:
            fail(lower_key, f"{lower:g} is above {upper_key} ({upper:g}); lower it or raise that")
        fail(upper_key, f"{upper:g} is below {lower_key} ({lower:g}); use at least {lower:g}")
    common = {k: v for k, v in values.items() if not k.startswith("snapshot.")}
    port_default = given.pop("port_default")
    common["port"] = port_default if common["port"] is None else common["port"]
    common["tables"] = capturing_signal_table(common["tables"], common["signal_table"])
    return SourceConfig(snapshot=snapshot, **common, **given)


def keys_at(prefix: str) -> tuple[str, ...]:
    """The keys of the mapping at ``prefix`` (``""``: the source section, ``snapshot``, …)."""
    depth = prefix.count(".") + 1 if prefix else 0
    found: dict[str, None] = {}
    for setting in SOURCE_SETTINGS:
        parts = setting.key.split(".")
        if ".".join(parts[:depth]) == prefix and len(parts) > depth:
            found[parts[depth]] = None
    return tuple(found)


def option_names() -> tuple[str, ...]:
    """Every option the settings travel in."""
    return tuple(option for setting in SOURCE_SETTINGS for option in setting.options)
