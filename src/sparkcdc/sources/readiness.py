"""Checking a source before anything runs, written once against the port.

``sparkcdc check``, the start of ``sparkcdc run`` and the Spark source's first offset all ask
the same questions of the source's catalog: is the server ready for change data capture, which
tables does ``source.tables`` match, can each one's schema and key be loaded, and (a new
pipeline) does the configured startup position resolve.
"""

from __future__ import annotations

from sparkcdc.config.model import SourceConfig
from sparkcdc.core import errors
from sparkcdc.core.schema import TableSchema
from sparkcdc.sources.port import Source


def captured_tables(source: Source) -> list[str]:
    """The ``a.b`` names of the tables the source captures now, once the server is ready."""
    with source.catalog() as catalog:
        tables = catalog.match_tables(source.config.tables)
        catalog.check_ready(sorted({db for db, _ in tables}))
        return [f"{db}.{t}" for db, t in tables]


def check_source(source: Source, startup: bool = True) -> list[TableSchema]:
    """Fail unless the server, the table filter and every table are usable, and (``startup``)
    the configured start position resolves; the captured tables' schemas."""
    config = source.config
    with source.catalog() as catalog:
        catalog.check_ready()
        tables = catalog.match_tables(list(config.tables))
        catalog.check_ready(sorted({db for db, _ in tables}))
        try:
            schemas = [
                catalog.load_schema(db, t, config.row_keys.get(f"{db}.{t}", ())) for db, t in tables
            ]
        except errors.TableWithoutKey as exc:
            raise _without_chunk_key(config, exc) if config.takes_snapshot else exc from None
    if startup and not config.takes_snapshot:
        source.startup_offset(config.startup)
    return schemas


def _without_chunk_key(config: SourceConfig, exc: errors.TableWithoutKey) -> Exception:
    name = f"{exc.fields.get('db')}.{exc.fields.get('table')}"
    return errors.TableWithoutKey(
        f"Table {name} has no primary key to identify its rows and cut its snapshot into "
        f"chunks; name a unique column with source.snapshot.chunk_key_columns (or "
        f'source.key_columns): {{"{name}": [col, ...]}}.',
        **exc.fields,
    )
