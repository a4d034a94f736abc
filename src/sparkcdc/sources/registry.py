"""The registry of source types: ``source.type`` to the package that implements the port.

A type is a built-in name (``mysql``, ``mariadb``) or the dotted name of a module of one's own
whose ``SOURCE_TYPE`` is a :class:`~sparkcdc.sources.port.SourceType` (how tests plug in their
fake source). Looking a type up imports its light modules only (settings, offsets); its drivers
are imported when a :class:`~sparkcdc.sources.port.Source` is opened.
"""

from __future__ import annotations

import functools
import importlib

from sparkcdc.config.model import SourceConfig
from sparkcdc.core.errors import ConfigError
from sparkcdc.sources.port import Source, SourceType

BUILT_IN = {"mysql": "sparkcdc.sources.mysql", "postgres": "sparkcdc.sources.postgres"}


@functools.cache
def _built_in_names() -> dict[str, str]:
    """Each built-in type's name and aliases (its ``SourceType.aliases``) to its name."""
    names: dict[str, str] = {}
    for name, module in BUILT_IN.items():
        kind: SourceType = importlib.import_module(module).SOURCE_TYPE
        names |= {alias: name for alias in (name, *kind.aliases)}
    return names


def canonical(name: str) -> str:
    """The name a source type is kept under: a built-in type's own name (``mariadb`` is
    ``mysql``), or a module's dotted name as written."""
    text = name.strip()
    if "." in text:
        return text
    return _built_in_names().get(text.lower(), text.lower())


def source_type(name: str, key: str = "source.type") -> SourceType:
    """The source type ``name`` names (ConfigError naming ``key`` if none; for a module of
    one's own, also why it could not be imported)."""
    kept = canonical(name)
    module = BUILT_IN.get(kept) or (kept if "." in kept else None)
    found, why = None, ""
    if module is not None:
        try:
            found = getattr(importlib.import_module(module), "SOURCE_TYPE", None)
        except ImportError as exc:
            why = f" (importing {module} failed: {exc})"
        else:
            why = "" if module in BUILT_IN.values() else f" ({module} has no SOURCE_TYPE)"
    if not isinstance(found, SourceType):
        raise ConfigError(
            f"{key}: {name!r} is not a supported source{why}; use one of "
            f"{', '.join(_built_in_names())} or a module of your own with a SOURCE_TYPE.",
            key=key,
        )
    return found


def open_source(config: SourceConfig) -> Source:
    """The source that ``config`` describes."""
    return source_type(config.type).open(config)
