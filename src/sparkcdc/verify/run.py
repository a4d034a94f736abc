"""``sparkcdc verify``: every captured table (or those named) verified against its replica."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from sparkcdc.config.model import Config
from sparkcdc.core.errors import ConfigError
from sparkcdc.core.table_name import TableName
from sparkcdc.sinks.registry import sink_type
from sparkcdc.sources.readiness import captured_tables
from sparkcdc.sources.registry import open_source
from sparkcdc.verify.committed import CommittedPosition, pipeline_running
from sparkcdc.verify.table import Progress, TableReport, TableVerifier


def verify_pipeline(
    config: Config,
    tables: Sequence[str],
    chunk_size: int | None,
    progress: Progress,
    wait: float = 60.0,
) -> list[TableReport]:
    """One report per captured table whose ``db.table`` name matches one of ``tables``
    (regular expressions; all when empty)."""
    source = open_source(config.source)
    names = chosen(captured_tables(source), tables)
    checkpoint = Path(config.pipeline.checkpoint)
    committed = CommittedPosition(
        checkpoint / "spark", source.offset, lambda: pipeline_running(checkpoint), wait
    )
    skipped = ", ".join(config.source.skip_operations)
    if skipped:
        raise ConfigError(
            f"source.skip_operations: the pipeline leaves {skipped} changes out of its replicas "
            "on purpose, so they are not meant to equal the source and verify cannot judge "
            "them; verify a pipeline that skips no operation.",
            key="source.skip_operations",
        )
    reader = sink_type(config.sink.type).reader
    if reader is None:
        raise ConfigError(
            f"sink.type: verify cannot read the tables of a {config.sink.type} sink (its type "
            "gives no reader)",
            key="sink.type",
        )
    reports = []
    with source.chunks() as dialect, source.catalog() as catalog:
        verifier = TableVerifier(
            config.source, dialect, reader(config.sink), committed,
            chunk_size or config.source.snapshot.chunk_size,
        )  # fmt: skip
        for name in names:
            db, table = TableName.parse(name)
            schema = catalog.load_schema(db, table, config.source.row_keys.get(name, ()))
            chunk_key = config.source.snapshot.chunk_key_columns.get(name) or schema.key
            keys = dialect.key_columns(db, table, chunk_key)
            reports.append(verifier.verify(schema, keys, progress))
    return reports


def chosen(captured: Sequence[str], patterns: Sequence[str]) -> list[str]:
    """The captured tables matching any of ``patterns`` (all of them without patterns)."""
    if not patterns:
        return sorted(captured)
    found = sorted(n for n in captured if any(re.fullmatch(p, n) for p in patterns))
    if not found:
        raise ConfigError(
            f"--tables {' '.join(patterns)} matches none of the captured tables "
            f"({', '.join(sorted(captured)) or 'none'}); name them as db.table.",
            key="--tables",
        )
    return found
