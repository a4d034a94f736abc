"""The registry of sink types: ``sink.type`` to the package that implements the sink port.

A type is a built-in name (one line of :data:`BUILT_IN` each) or the dotted name of a module of
one's own whose ``SINK_TYPE`` is a :class:`~sparkcdc.sinks.port.SinkType` (how tests plug in
their in-memory sink). Looking a type up imports its package's light module only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from sparkcdc.config.model import SinkConfig
from sparkcdc.core.plugins import module_value, unknown_type
from sparkcdc.core.table_name import TableName
from sparkcdc.sinks.port import ChunkWriter, Sink, SinkContext, SinkType

BUILT_IN = {"delta": "sparkcdc.sinks.delta", "iceberg": "sparkcdc.sinks.iceberg"}


def canonical(name: str) -> str:
    """A built-in type's name in lower case, or a module's dotted name as written."""
    text = name.strip()
    return text if "." in text else text.lower()


def sink_type(name: str, key: str = "sink.type") -> SinkType:
    """The sink type ``name`` names (ConfigError naming ``key`` and the known types if none;
    for a module of one's own, also why it could not be imported)."""
    kept = canonical(name)
    module = BUILT_IN.get(kept) or (kept if "." in kept else None)
    found, why = (
        (None, "") if module is None else module_value(module, "SINK_TYPE", kept in BUILT_IN)
    )
    if not isinstance(found, SinkType):
        raise unknown_type(key, name, "sink", why, BUILT_IN, "SINK_TYPE")
    return found


def check_sink(config: SinkConfig) -> None:
    """The sink's storage checked before Spark starts (ConfigError naming the setting)."""
    sink_type(config.type).check(config)


def open_tables_ahead(config: SinkConfig, tables: Sequence[TableName]) -> Callable[[], None]:
    """Let the sink open the captured ``tables`` while Spark starts (if its type does); what
    stops it, once the table being opened is."""
    found = sink_type(config.type).open_ahead
    return (lambda: None) if found is None else found(config, tables)


def open_sink(config: SinkConfig, context: SinkContext) -> Sink:
    """The ``foreachBatch`` writer that ``config`` describes."""
    return sink_type(config.type).open(config, context)


def chunk_writer(name: str) -> ChunkWriter | None:
    """The executor-side snapshot chunk writer of sink type ``name`` (None: it has none)."""
    return sink_type(name).chunk_writer


def batch_holders(config: SinkConfig) -> Callable[[str, int], list[str]] | None:
    """What names the sink's tables holding a micro-batch's id (None: the sink cannot tell)."""
    found = sink_type(config.type).batch_holders
    return None if found is None else (lambda app, batch_id: found(config, app, batch_id))
