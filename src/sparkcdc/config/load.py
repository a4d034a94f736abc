"""Reading a pipeline YAML file into a checked :class:`~sparkcdc.config.model.Config`.

Every scalar is read as text (so ``password: 0123`` stays ``"0123"`` and ``no`` stays ``"no"``),
``${VAR}`` / ``${VAR:-default}`` are replaced from the environment (``$${`` writes a literal
``${``), and each value is converted by the key it belongs to. Any mistake is a
:class:`~sparkcdc.core.errors.ConfigError` naming the full key path, e.g.
``pipeline.store.max_bytes: '64XB' is not a size; use e.g. 64MB``.

Sizes: a number of bytes or ``<n>B|KB|KiB|MB|MiB|GB|GiB`` (KB = KiB = 1024 bytes).
Durations: seconds, or ``<n>ms|s|m|h``. Relative paths are taken from the file's folder.
"""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from sparkcdc.config.history import as_history, check_captured
from sparkcdc.config.model import (
    DEFAULT_TYPE,
    Config,
    MaintenanceConfig,
    MetricsConfig,
    PipelineConfig,
    SinkConfig,
    SourceConfig,
    StoreConfig,
)
from sparkcdc.config.schema_changes import as_schema_changes
from sparkcdc.config.secret import Secret
from sparkcdc.config.settings import Setting, keys_at, settings_values, source_of
from sparkcdc.config.storage import OBJECT_SCHEMES, as_storage_options
from sparkcdc.config.values import (
    STARTUP_FORMS,
    as_bool,
    as_duration,
    as_size,
    as_text,
    fail,
    ranged,
)
from sparkcdc.core.errors import ConfigError
from sparkcdc.core.history_spec import HistorySpec
from sparkcdc.sinks.registry import canonical as canonical_sink
from sparkcdc.sinks.registry import sink_type
from sparkcdc.sources.registry import canonical, source_type

_ENV = re.compile(r"\$\$\{|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")

SECTIONS = ("source", "sink", "pipeline")
SINK_KEYS = (
    "type", "path", "maintenance", "storage_options", "snapshot_in_changelog", "history"
)  # fmt: skip
MAINTENANCE_KEYS = ("compact_every", "retain")
PIPELINE_KEYS = (
    "checkpoint", "trigger", "store", "spark", "metrics", "schema_changes", "transactions"
)  # fmt: skip
STORE_KEYS = ("max_bytes", "max_items", "batch_mode", "item_rows")
METRICS_KEYS = ("port", "host")
SPARK_KEYS = ("master", "ui", "conf")

__all__ = ["STARTUP_FORMS", "load_config", "load_config_text"]


_PASSWORD_KEY = "source.password"


class _TextLoader(yaml.SafeLoader):
    """A safe loader that resolves no implicit types: every plain scalar is a string."""


_TextLoader.yaml_implicit_resolvers = {}
_TextLoader.add_implicit_resolver("tag:yaml.org,2002:merge", re.compile(r"^(?:<<)$"), ["<"])


def load_config(path: str | os.PathLike[str], connects: bool = True) -> Config:
    """Read and check the pipeline file at ``path``. A command that never connects to the
    source (``connects`` false: ``status``, ``compact``) needs no password: an environment
    variable ``source.password`` refers to may then be unset."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(
            f"Cannot read the pipeline file {file} ({exc.strerror}); check the path.", key=""
        ) from exc
    return load_config_text(text, file.resolve().parent, name=str(file), connects=connects)


def load_config_text(
    text: str,
    base_dir: str | os.PathLike[str] = ".",
    name: str = "The pipeline file",
    connects: bool = True,
) -> Config:
    """Check pipeline YAML given as text; relative paths are taken from ``base_dir``."""
    try:
        hidden, refs = _hide_references(text)
        doc = yaml.load(hidden, Loader=_TextLoader)  # noqa: S506 - a safe loader subclass
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise ConfigError(
            f"{name} is not valid YAML{line} ({exc.problem}); fix the syntax there.",
            key="",
            line=mark.line + 1 if mark else None,
        ) from exc
    except yaml.YAMLError as exc:
        raise ConfigError(f"{name} is not valid YAML ({exc}); fix the syntax.", key="") from exc
    if doc is None:
        doc = {}
    unneeded = () if connects else (_PASSWORD_KEY,)
    root = _section(_substitute(doc, "", refs, unneeded), "", SECTIONS)
    base = Path(base_dir)
    source = _source(root.get("source"))
    sink = _sink(root.get("sink"), base)
    if source.on_log_gone == "resnapshot" and sink_type(sink.type).gone_keys is None:
        fail("source.on_log_gone", f"resnapshot deletes the keys gone at the source from the "
             f"replicas, which the sink {sink.type} cannot do; use on_log_gone: fail")  # fmt: skip
    if source.on_log_gone == "resnapshot" and not sink.snapshot_in_changelog:
        fail("source.on_log_gone", "resnapshot finds the keys gone at the source by the "
             "re-snapshot's rows in the change log, and sink.snapshot_in_changelog is false; use "
             "on_log_gone: fail, or leave sink.snapshot_in_changelog out")  # fmt: skip
    check_captured(sink.history, source.tables, source.tables_exclude)
    pipeline = _pipeline(
        _section(root.get("pipeline"), "pipeline", PIPELINE_KEYS, required=True), base
    )
    if pipeline.transactions and set(source.skip_operations) & {"c", "u", "d"}:
        fail("pipeline.transactions", "the transaction records count every row change of a "
             "transaction, and source.skip_operations leaves some out of the change log; take "
             "c, u and d out of source.skip_operations, or turn pipeline.transactions "
             "off")  # fmt: skip
    settings = source.settings.for_pipeline(str(pipeline.checkpoint))
    return Config(source=replace(source, settings=settings), sink=sink, pipeline=pipeline)


def _hide_references(text: str) -> tuple[str, dict[str, re.Match[str]]]:
    """Swap each ``${...}`` for a plain token, so references may stand anywhere YAML allows a
    word (also inside ``{...}`` flow mappings) and values with YAML syntax stay literal."""
    nonce = uuid.uuid4().hex[:8]
    found: dict[str, re.Match[str]] = {}

    def token(match: re.Match[str]) -> str:
        name = f"sparkcdcref{nonce}n{len(found)}x"
        found[name] = match
        return name

    return _ENV.sub(token, text), found


def _substitute(
    value: Any, key: str, refs: dict[str, re.Match[str]], unneeded: tuple[str, ...] = ()
) -> Any:
    """Put the environment's values where the references were, in every string; a reference
    to an unset variable under a key of ``unneeded`` becomes empty."""
    if isinstance(value, dict):
        return {
            k: _substitute(v, f"{key}.{k}" if key else str(k), refs, unneeded)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_substitute(v, f"{key}[{i}]", refs, unneeded) for i, v in enumerate(value)]
    if not isinstance(value, str) or not refs:
        return value

    def replace(match: re.Match[str]) -> str:
        ref = refs[match.group(0)]
        if ref.group(0) == "$${":
            return "${"
        var, default = ref.group(1), ref.group(2)
        found = os.environ.get(var)
        if found is None or (found == "" and default is not None):
            if default is None and key in unneeded:
                return ""
            if default is None:
                fail(
                    key,
                    f"refers to the environment variable {var}, which is not set; "
                    f"export {var} or write ${{{var}:-default}}",
                )
            return default
        return found

    return re.sub("|".join(map(re.escape, refs)), replace, value)


def _section(
    value: Any, key: str, allowed: tuple[str, ...], required: bool = False
) -> dict[str, Any]:
    """A mapping whose keys are all among ``allowed``."""
    where = key or "the file"
    if value is None or value == "":
        if required:
            fail(key, f"is missing; add a {key} section with {', '.join(allowed)}")
        return {}
    if not isinstance(value, dict):
        fail(key or "(top level)", f"must be a mapping of {', '.join(allowed)}")
    for name in value:
        if name not in allowed:
            path = f"{key}.{name}" if key else str(name)
            fail(path, f"is not a known key of {where}; allowed keys are {', '.join(allowed)}")
    return value


def _get(
    section: dict[str, Any], key: str, path: str, convert: Callable[[Any, str], Any], default: Any
) -> Any:
    full = f"{path}.{key}"
    if key not in section or section[key] is None:
        if default is _REQUIRED:
            fail(full, "is missing; it is required")
        return default
    return convert(section[key], full)


_REQUIRED = object()


def _one_of(*choices: str, aliases: dict[str, str] | None = None) -> Callable[[object, str], str]:
    def convert(value: object, key: str) -> str:
        text = as_text(value, key).strip()
        text = (aliases or {}).get(text.lower(), text)
        if text.lower() not in [c.lower() for c in choices]:
            fail(key, f"{text!r} is not supported; use one of {', '.join(choices)}")
        return next(c for c in choices if c.lower() == text.lower())

    return convert


def _source(section: Any) -> SourceConfig:
    p = "source"
    named = section.get("type") if isinstance(section, dict) else None
    kind = source_type(as_text(named or DEFAULT_TYPE, f"{p}.type"), f"{p}.type")
    allowed = ("type", "password", *keys_at(""), *kind.settings.KEYS)
    s = _section(section, p, allowed, required=True)
    own = kind.settings.from_values(s.get, lambda name: f"{p}.{name}")

    def found(setting: Setting) -> Any:
        *within, last = setting.key.split(".")
        mapping = s
        for depth in range(len(within)):
            at = ".".join(within[: depth + 1])
            mapping = _section(mapping.get(within[depth]), f"{p}.{at}", keys_at(at))
        raw = mapping.get(last)
        return None if raw is None else setting.convert(raw, f"{p}.{setting.key}", kind.settings)

    def missing(setting: Setting) -> Any:
        fail(f"{p}.{setting.key}", "is missing; it is required")

    source = source_of(
        settings_values(found, missing),
        lambda setting: f"{p}.{setting.key}",
        type=canonical(named or DEFAULT_TYPE),
        port_default=kind.default_port,
        password=Secret(_get(s, "password", p, as_text, "")),
        settings=own,
    )
    own.check(source, lambda name: f"{p}.{name}")
    return source


def _path(base: Path, remote: bool = False) -> Callable[[object, str], str]:
    """A folder (relative to the pipeline file's), a ``file://`` URI (made a folder), or with
    ``remote`` a bucket URI (:data:`~sparkcdc.config.storage.OBJECT_SCHEMES`), kept as written."""

    def convert(value: object, key: str) -> str:
        text = as_text(value, key).strip()
        if not text:
            fail(key, "is empty; give a folder path")
        scheme = re.match(r"^([A-Za-z][A-Za-z0-9+.-]*)://", text)
        if scheme and scheme.group(1).lower() != "file":
            if not remote:
                fail(
                    key,
                    f"{text!r} is not a folder: Spark's checkpoint must be on a local or "
                    "shared disk; keep the Delta tables on object storage with sink.path",
                )
            if scheme.group(1).lower() not in OBJECT_SCHEMES:
                fail(
                    key,
                    f"{text!r} names a storage delta-rs cannot write; use a folder, "
                    "file://, s3://, gs:// or abfss://",
                )
            return text.rstrip("/")
        path = Path(os.path.expanduser(urlsplit(text).path if scheme else text))
        return str(path if path.is_absolute() else (base / path).resolve())

    return convert


def _sink(section: Any, base: Path) -> SinkConfig:
    """The ``sink`` section: the common keys and the sink type's own (``SinkType.keys``)."""
    named = section.get("type") if isinstance(section, dict) else None
    kind = _get({"type": named}, "type", "sink", _sink_type, "delta")
    s = _section(section, "sink", SINK_KEYS + sink_type(kind).keys, required=True)
    own = _own_keys({k: v for k, v in s.items() if k not in SINK_KEYS})
    return SinkConfig(
        type=kind,
        path=(path := _get(s, "path", "sink", _path(base, remote=True), _REQUIRED)),
        maintenance=_maintenance(_section(s.get("maintenance"), "sink.maintenance",
                                          MAINTENANCE_KEYS)),
        storage_options=as_storage_options(s.get("storage_options"), path),
        snapshot_in_changelog=_get(s, "snapshot_in_changelog", "sink", as_bool, True),
        history=_get(s, "history", "sink", as_history, HistorySpec()),
        settings=own,
    )  # fmt: skip


def _own_keys(given: dict[str, Any]) -> dict[str, str]:
    """A sink type's own keys as text; a mapping's entries as ``<key>.<name>`` (an Iceberg
    catalog's properties: ``catalog: {type: rest, uri: …}``)."""
    own: dict[str, str] = {}
    for key, value in given.items():
        if isinstance(value, dict):
            own.update({f"{key}.{k}": as_text(v, f"sink.{key}.{k}") for k, v in value.items()})
        else:
            own[key] = as_text(value, f"sink.{key}")
    return own


def _sink_type(value: object, key: str) -> str:
    """A type the sink registry knows (:mod:`sparkcdc.sinks.registry`), by its kept name."""
    text = as_text(value, key)
    sink_type(text, key)
    return canonical_sink(text)


def _maintenance(s: dict[str, Any]) -> MaintenanceConfig:
    p, defaults = "sink.maintenance", MaintenanceConfig()
    return MaintenanceConfig(
        compact_every=_get(s, "compact_every", p, _every, defaults.compact_every),
        retain=_get(s, "retain", p, _retain, defaults.retain),
    )


def _every(value: object, key: str) -> float:
    """A duration; ``off`` (or 0): never."""
    if isinstance(value, str) and value.strip().lower() == "off":
        return 0.0
    try:
        return as_duration(value, key)
    except ConfigError:
        fail(key, f"{value!r} is not a duration; use e.g. 10m or 1h, or off")


def _retain(value: object, key: str) -> float:
    """A duration, at most 10 years (Delta keeps it as an interval of whole seconds)."""
    seconds = as_duration(value, key)
    if seconds > 10 * 365 * 86400:
        fail(key, f"{value!r} is more than 10 years; use e.g. 1h or 7d")
    return seconds


def _pipeline(s: dict[str, Any], base: Path) -> PipelineConfig:
    p = "pipeline"
    st = _section(s.get("store"), f"{p}.store", STORE_KEYS)
    sp = _section(s.get("spark"), f"{p}.spark", SPARK_KEYS)
    conf = _section(sp.get("conf"), f"{p}.spark.conf", tuple(sp.get("conf") or ()))
    defaults = StoreConfig()
    store = StoreConfig(
        max_bytes=_get(st, "max_bytes", f"{p}.store", as_size, defaults.max_bytes),
        max_items=_get(st, "max_items", f"{p}.store", ranged(1, 2**31 - 1), defaults.max_items),
        batch_mode=_get(
            st, "batch_mode", f"{p}.store", _one_of("MEMSIZE", "ITEMSIZE"), defaults.batch_mode
        ),
        item_rows=_get(st, "item_rows", f"{p}.store", ranged(1, 2**31 - 1), defaults.item_rows),
    )
    return PipelineConfig(
        checkpoint=_get(s, "checkpoint", p, _path(base), _REQUIRED),
        trigger_seconds=_get(s, "trigger", p, as_duration, 1.0),
        store=store,
        metrics=_metrics(_section(s.get("metrics"), f"{p}.metrics", METRICS_KEYS)),
        schema_changes=as_schema_changes(s.get("schema_changes")),
        transactions=_get(s, "transactions", p, as_bool, False),
        spark_master=_get(sp, "master", f"{p}.spark", as_text, "local[*]"),
        spark_ui=_get(sp, "ui", f"{p}.spark", as_bool, True),
        spark_conf={
            str(k): as_text("" if v is None else v, f"{p}.spark.conf.{k}") for k, v in conf.items()
        },
    )


def _metrics(s: dict[str, Any]) -> MetricsConfig:
    p = "pipeline.metrics"
    defaults = MetricsConfig()
    return MetricsConfig(
        port=_get(s, "port", p, ranged(0, 65535), defaults.port),
        host=_get(s, "host", p, _host, defaults.host),
    )


def _host(value: object, key: str) -> str:
    text = as_text(value, key).strip()
    if not text or any(c.isspace() for c in text):
        fail(key, f"{text!r} is not a host name or address; use e.g. 127.0.0.1 or 0.0.0.0")
    return text
