"""Checking a source before anything runs, written once against the port.

``sparkcdc check`` and the start of ``sparkcdc run`` (before Spark starts) call the same
:func:`check_source`, so whatever the run would refuse before its stream starts, ``check``
refuses with the same sentence, and neither changes anything on the server. In order:

1. the server is ready for change data capture and the user may replicate
   (:meth:`~sparkcdc.sources.port.Catalog.check_ready`);
2. the signal table (``source.signal_table``) exists;
3. every ``source.tables`` pattern matches a table (:mod:`sparkcdc.sources.table_filter`;
   ``source.on_unmatched: warn`` lets one match nothing, with a log line);
4. the user may read the captured tables, and what the log reader needs of them is there or
   may be made (PostgreSQL: replica identities, the publication, the slot);
5. each table's schema and key load;
6. a new pipeline's configured start position resolves
   (:meth:`~sparkcdc.sources.port.Source.check_startup`).

The Spark source asks the catalog again when its stream starts (:func:`captured_tables`), with
no pattern required to match: a table dropped meanwhile does not stop a running pipeline.
"""

from __future__ import annotations

import logging

from sparkcdc.config.model import SourceConfig
from sparkcdc.core import errors
from sparkcdc.core.schema import TableSchema
from sparkcdc.core.table_name import TableName
from sparkcdc.sources.port import Catalog, Source
from sparkcdc.sources.table_filter import unmatched_patterns

log = logging.getLogger("sparkcdc.source")


def captured_tables(source: Source) -> list[str]:
    """The names (text form) of the tables the source captures now, once the server is ready."""
    with source.catalog() as catalog:
        tables = catalog.match_tables(
            source.config.tables, exclude=source.config.capture.excluded_tables
        )
        catalog.check_ready(sorted({db for db, _ in tables}))
        return [str(TableName(*t)) for t in tables]


def check_source(source: Source, startup: bool = True) -> list[TableSchema]:
    """Fail unless the server, the table filter and every table are usable (module
    docstring), and (``startup``: a new pipeline) the configured start position resolves;
    the captured tables' schemas."""
    config = source.config
    each = config.on_unmatched == "fail"
    with source.catalog() as catalog:
        catalog.check_ready()
        if config.signal_table:
            catalog.check_signal_table(config.signal_table)
        _warn_shadow_tables(config, catalog)
        tables = catalog.match_tables(
            list(config.tables), each=each, exclude=config.capture.excluded_tables
        )
        if not each:
            _warn_unmatched(config, [str(TableName(*t)) for t in tables], catalog.address)
        catalog.check_ready(sorted({db for db, _ in tables}))
        try:
            keys = config.row_keys
            schemas = [catalog.load_schema(*t, keys.get(str(TableName(*t)), ())) for t in tables]
        except errors.TableWithoutKey as exc:
            raise _without_chunk_key(config, exc) if config.takes_snapshot else exc from None
    for schema in schemas:  # a key column left out or masked, a mask on a number: refused
        config.capture.check(schema)
    if startup and not config.takes_snapshot:
        source.check_startup(config.startup)
    return schemas


def _warn_shadow_tables(config: SourceConfig, catalog: Catalog) -> None:
    """A warning naming the tables ``source.tables`` matches that are left out only for being
    named as online schema change tools name their tables (``source.shadow_tables: skip``)."""
    if config.capture.shadow_tables:
        return
    try:
        named = catalog.match_tables(list(config.tables), exclude=config.tables_exclude)
    except errors.NoTablesMatched:
        return
    shadows = [
        str(TableName(*t)) for t in named if config.capture.excludes_table(str(TableName(*t)))
    ]
    if shadows:
        log.warning(
            "source.tables matches %s on %s, named as gh-ost's and pt-online-schema-change's "
            "tables are; left out (source.shadow_tables: capture takes them)",
            ", ".join(shadows), catalog.address,
        )  # fmt: skip


def _warn_unmatched(config: SourceConfig, names: list[str], address: str) -> None:
    unmatched = unmatched_patterns(config.tables, names)
    if unmatched:
        log.warning(
            "source.tables %s on %s matches no table (source.on_unmatched: warn); the "
            "pipeline starts with the tables the other patterns match",
            ", ".join(repr(p) for p in unmatched), address,
        )  # fmt: skip


def _without_chunk_key(config: SourceConfig, exc: errors.TableWithoutKey) -> Exception:
    name = str(TableName(str(exc.fields.get("db")), str(exc.fields.get("table"))))
    return errors.TableWithoutKey(
        f"Table {name} has no primary key to identify its rows and cut its snapshot into "
        f"chunks; name a unique column with source.snapshot.chunk_key_columns (or "
        f'source.key_columns): {{"{name}": [col, ...]}}.',
        **exc.fields,
    )
