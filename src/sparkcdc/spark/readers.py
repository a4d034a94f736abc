"""How the stream source reaches a database: resolve the start, read the log end, open a reader.

:class:`MySQLReaders` is the only implementation the product uses. The source option
``reader_factory`` (``module:name``) swaps in another object with the same three methods, which
is how Spark tests run the source without a database.
"""

from __future__ import annotations

import importlib
from typing import Any, Protocol

from sparkcdc.config.model import SourceConfig
from sparkcdc.core.errors import ConfigError
from sparkcdc.core.offset import BinlogOffset
from sparkcdc.store.ring import EventStore


class ReaderFactory(Protocol):
    def initial_offset(self, source: SourceConfig) -> BinlogOffset: ...

    def current_offset(self, source: SourceConfig) -> BinlogOffset: ...

    def captured_tables(self, source: SourceConfig) -> list[str]:
        """The ``db.table`` names the source captures now (a snapshot reads them)."""

    def open(
        self,
        source: SourceConfig,
        start: BinlogOffset,
        store: EventStore,
        schema_history: str,
        item_rows: int,
    ) -> Any:
        """A log reader (``start()``, ``stop()``, ``error``, ``stats()``) putting into ``store``."""


class MySQLReaders:
    """MySQL/MariaDB: the catalog for offsets, the binlog :class:`LogReader` for changes."""

    @staticmethod
    def _catalog(source: SourceConfig) -> Any:
        from sparkcdc.sources.mysql.catalog import MySQLCatalog

        return MySQLCatalog(
            source.host, source.port, source.user, source.password, source.connect_timeout
        )

    def initial_offset(self, source: SourceConfig) -> BinlogOffset:
        from sparkcdc.sources.mysql.startup import resolve_startup

        with self._catalog(source) as catalog:
            return resolve_startup(catalog, source, source.startup)

    def current_offset(self, source: SourceConfig) -> BinlogOffset:
        with self._catalog(source) as catalog:
            offset: BinlogOffset = catalog.current_offset()
            return offset

    def captured_tables(self, source: SourceConfig) -> list[str]:
        with self._catalog(source) as catalog:
            tables = catalog.match_tables(source.tables)
            catalog.check_ready(sorted({db for db, _ in tables}))
            return [f"{db}.{t}" for db, t in tables]

    def open(
        self,
        source: SourceConfig,
        start: BinlogOffset,
        store: EventStore,
        schema_history: str,
        item_rows: int,
        change_filter: Any = None,
    ) -> Any:
        from sparkcdc.sources.mysql.reader import LogReader
        from sparkcdc.sources.mysql.schema_history import SchemaHistory

        history = SchemaHistory(schema_history)
        return LogReader(source, start, store, history, item_rows, change_filter=change_filter)


def load_reader_factory(spec: str | None) -> ReaderFactory:
    """The factory named ``module:name`` (a class is instantiated), or :class:`MySQLReaders`."""
    if not spec:
        return MySQLReaders()
    module_name, _, attr = spec.partition(":")
    try:
        found = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError, ValueError):
        raise ConfigError(
            f"the mysql-cdc option 'reader_factory' names {spec!r}, which cannot be imported; "
            "give it as module:name.",
            key="reader_factory",
        ) from None
    factory: ReaderFactory = found() if isinstance(found, type) else found
    return factory
