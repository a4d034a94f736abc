"""``source.on_log_gone: resnapshot``: a pipeline whose log position is gone reads its tables
again and streams on (Debezium's ``snapshot.mode: when_needed``).

1. :func:`begin` (the run stopped with :class:`~sparkcdc.core.errors.LogPositionGone`): a marker
   ``<checkpoint>/sparkcdc/resnapshot.json`` records the log's end now, which every row the
   new snapshot reads and every change after it lies at or after, and each captured table's
   key; then Spark's checkpoint and the source's own state move to ``<checkpoint>/gone-<time>/``
   (kept for a look, never read again) and the source lets go of the old log position (a
   PostgreSQL slot). The run starts again from nothing with ``startup: initial``, as does any
   run while the marker is there (:func:`pending`), so a crash at any step resumes it.
2. :class:`ResnapshotSink`: at the first micro-batch after the snapshot's hand-off (whose end is
   a log offset), before writing it, the replicas' keys the source no longer has are deleted
   and logged as ``d`` rows (the sink type's ``gone_keys``,
   :mod:`sparkcdc.sinks.changes.gone_keys`); then the marker goes.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from sparkcdc.config.model import Config, SinkConfig
from sparkcdc.core.errors import LogPositionGone
from sparkcdc.core.logs import counted
from sparkcdc.core.offset import Offset
from sparkcdc.core.table_name import TableName
from sparkcdc.sinks.port import BatchFrame
from sparkcdc.sinks.registry import sink_type
from sparkcdc.sources.registry import open_source
from sparkcdc.spark.offsets import source_position
from sparkcdc.spark.pipeline.offset_log import read_offset_file
from sparkcdc.spark.pipeline.state import RESNAPSHOT_MARKER as MARKER

log = logging.getLogger("sparkcdc.pipeline")

KEPT = {"run.lock", "log4j2.properties", "metrics.json", MARKER}  # the rest is the old log's


@dataclass(frozen=True)
class Resnapshot:
    """A pending re-snapshot: the log position it began at and each table's key."""

    since: str
    keys: dict[str, list[str]]  # "db.table" -> key columns


def pending(checkpoint: Path) -> Resnapshot | None:
    """The re-snapshot under way for the pipeline at ``checkpoint``, if one is."""
    try:
        found = json.loads((checkpoint / "sparkcdc" / MARKER).read_text())
    except (OSError, ValueError):
        return None
    return Resnapshot(found["since"], found["keys"])


def as_initial(config: Config) -> Config:
    """``config`` starting with a snapshot, as a re-snapshot does."""
    return replace(config, source=replace(config.source, startup="initial"))


def begin(config: Config, checkpoint: Path, gone: LogPositionGone) -> None:
    """Step 1 of the module docstring."""
    source = open_source(config.source)
    keys: dict[str, list[str]] = {}
    with source.catalog() as catalog:
        since = catalog.log_end().position()
        for table in catalog.match_tables(
            list(config.source.tables), exclude=config.source.capture.excluded_tables
        ):
            name = str(TableName(*table))
            schema = catalog.load_schema(*table, config.source.row_keys.get(name, ()))
            keys[name] = list(schema.key)
    own = checkpoint / "sparkcdc"
    _write_json(own / MARKER, {"since": since, "keys": keys, "why": str(gone)})
    aside = checkpoint / f"gone-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}"
    aside.mkdir(parents=True, exist_ok=True)
    if (checkpoint / "spark").exists():
        os.replace(checkpoint / "spark", aside / "spark")
    for path in own.iterdir():
        if path.name not in KEPT:
            os.replace(path, aside / path.name)
    source.release_log()
    log.warning(
        "the log position is gone (%s); source.on_log_gone is resnapshot: reading %s "
        "again (the old checkpoint is kept in %s)", gone, counted(len(keys), "table"), aside,
    )  # fmt: skip


class ResnapshotSink:
    """The sink of a run with a re-snapshot pending: step 2 of the module docstring, then the
    sink's own write of each micro-batch."""

    def __init__(
        self,
        sink: Callable[[BatchFrame, int], None],
        checkpoint: Path,
        sink_config: SinkConfig,
        parse: Callable[[Mapping[str, object]], Offset],
        app_id: Callable[[], str],
    ) -> None:
        self.sink, self.checkpoint, self.sink_config = sink, checkpoint, sink_config
        self.parse, self.app_id = parse, app_id

    def __call__(self, df: BatchFrame, batch_id: int) -> None:
        found = pending(self.checkpoint)
        if found is not None:
            end = read_offset_file(self.checkpoint / "spark" / "offsets" / str(batch_id)).offset
            position = None if end is None else source_position(end)
            if position is not None:  # the first batch in the log: the snapshot was handed off
                self._delete_gone(found, self.parse(position))
                (self.checkpoint / "sparkcdc" / MARKER).unlink(missing_ok=True)
        self.sink(df, batch_id)

    def _delete_gone(self, found: Resnapshot, at: Offset) -> None:
        app_id = f"{self.app_id()}-resnapshot"
        gone_keys = sink_type(self.sink_config.type).gone_keys
        assert gone_keys is not None, "the configuration refuses resnapshot for this sink"
        delete_gone = gone_keys(self.sink_config)
        for name, key in sorted(found.keys.items()):
            count = delete_gone(TableName.parse(name), key, found.since, at, app_id)
            if count:
                log.info("re-snapshot of %s: %d keys gone at the source deleted", name, count)
        log.info("re-snapshot finished: the replicas equal the source as of %s", at)


def _write_json(path: Path, value: Mapping[str, object]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(value))
    os.replace(tmp, path)
