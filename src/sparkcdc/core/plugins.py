"""A type of one's own named by a dotted module name (``source.type``, ``sink.type``): the
module's registered value, or why there is none, for the registry's one sentence."""

from __future__ import annotations

import importlib
from collections.abc import Iterable

from sparkcdc.core.errors import ConfigError


def module_value(module: str, attribute: str, built_in: bool) -> tuple[object | None, str]:
    """``module``'s ``attribute`` (None if it has none or cannot be imported) and why not, as
    `` (…)`` for an error sentence (nothing for a ``built_in`` module without it)."""
    try:
        found = getattr(importlib.import_module(module), attribute, None)
    except ImportError as exc:
        return None, f" (importing {module} failed: {exc})"
    if found is None and not built_in:
        return None, f" ({module} has no {attribute})"
    return found, ""


def unknown_type(
    key: str, name: str, kind: str, why: str, known: Iterable[str], attribute: str
) -> ConfigError:
    """The one sentence for a ``key`` that names no ``kind`` (``source``, ``sink``): the known
    names, and a module of one's own with its ``attribute``."""
    return ConfigError(
        f"{key}: {name!r} is not a supported {kind}{why}; use one of {', '.join(known)} or a "
        f"module of your own with a {attribute}.",
        key=key,
    )
