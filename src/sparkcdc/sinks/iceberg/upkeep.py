"""Upkeep of the sink's Iceberg tables: small data files compacted, old snapshots expired and
the files only they read deleted. Each run, for each replica and change log:

1. sets the table's ``history.expire.max-snapshot-age-ms`` to ``retain`` and
   ``history.expire.min-snapshots-to-keep`` to 1, so another engine's expiry keeps what this
   one keeps, and ``write.metadata.delete-after-commit.enabled``, so each commit deletes the
   metadata files past the newest ``write.metadata.previous-versions-max`` (100) (one commit,
   only if they differ);
2. compacts (:mod:`.rewrite`): once ``small_files`` data files are below the target size
   (32 MiB for a replica, 128 MiB for a change log), bin-packed into files of about that size,
   one ``replace`` snapshot. The table property that tells which batch the table holds
   (:mod:`.tables`) is not touched, so a replayed micro-batch still finds itself applied;
3. expires (:mod:`.expiry`): the snapshots older than ``retain`` but the current one, then the
   files no remaining snapshot reads. Every snapshot committed within ``retain`` stays readable;
4. sweeps (:mod:`.orphans`): the data files no snapshot reads, written more than ``retain`` ago
   (a micro-batch's write a crash cut before its commit).

It runs where no commit of the tables can run at the same time and no micro-batch may be written
again (which may read the replica as it was before that batch, :func:`.tables.rows_before`): in
the sink's thread between two micro-batches, once Spark committed the one before, and from
``sparkcdc compact`` on a stopped pipeline. The tables are the sink's own (:class:`.IcebergTables`),
so the sink's next commit starts from what the upkeep committed.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from pyiceberg.table import Table

from sparkcdc.sinks.iceberg.expiry import Reach, expire
from sparkcdc.sinks.iceberg.orphans import sweep
from sparkcdc.sinks.iceberg.rewrite import compact, data_file_sizes
from sparkcdc.sinks.iceberg.tables import BATCH_PROPERTY, CHANGELOG_SUFFIX, IcebergTables
from sparkcdc.sinks.port import TableUpkeep
from sparkcdc.sinks.upkeep import target_size

RETENTION_PROPERTIES = (
    "history.expire.max-snapshot-age-ms",
    "history.expire.min-snapshots-to-keep",
    "write.metadata.delete-after-commit.enabled",
)
OWN_NAMESPACE_PREFIX = "_"  # the sink's own tables (_sparkcdc.notifications) are left alone


class IcebergKeeper:
    """The :class:`~sparkcdc.sinks.port.TableKeeper` of the Iceberg tables of one catalog."""

    def __init__(self, tables: IcebergTables) -> None:
        self.found = tables

    def tables(self, patterns: Sequence[str] = ()) -> list[str]:
        """``db.table`` of every replica and change log (``db.table__changelog``) whose
        ``db.table`` fully matches one of ``patterns`` (none: all). Only tables a pipeline
        wrote (they carry its batch marker): a catalog shared with other writers keeps theirs
        as they are."""
        catalog, names = self.found.catalog, []
        for namespace in catalog.list_namespaces():
            if len(namespace) != 1 or namespace[0].startswith(OWN_NAMESPACE_PREFIX):
                continue
            for ident in catalog.list_tables(namespace):
                db, table = ident[-2], ident[-1]
                base = f"{db}.{table.removesuffix(CHANGELOG_SUFFIX)}"
                if patterns and not any(re.fullmatch(p, base) for p in patterns):
                    continue
                found = self.found.table((db, table))
                if found is not None and _written_here(found):
                    names.append(f"{db}.{table}")
        return sorted(names)

    def keep(self, name: str, retain: float, small_files: int) -> TableUpkeep:
        """Steps 1–4 of the module docstring on the table ``name``; ``small_files``: how many
        files below the target make it compact (2: any two)."""
        db, _, rest = name.partition(".")
        table = self.found.table((db, rest))
        if table is None:
            return TableUpkeep(name, 0, 0, 0, 0, 0, 0)
        _keep_for(table, retain)
        rewritten = compact(table, target_size(name, CHANGELOG_SUFFIX), small_files)
        reach = Reach(table)
        expired = expire(table, retain, reach=reach)
        swept = sweep(table, reach.files(table.snapshots()), retain)
        sizes = data_file_sizes(table)
        return TableUpkeep(
            name, rewritten.removed, rewritten.added, expired.files + swept.files,
            expired.bytes + swept.bytes, len(sizes), sum(sizes), expired=expired.snapshots,
        )  # fmt: skip


def _written_here(table: Table) -> bool:
    """Whether a sparkcdc pipeline committed a micro-batch to ``table`` (its batch marker)."""
    return any(key.startswith(BATCH_PROPERTY) for key in table.properties)


def _keep_for(table: Table, retain: float) -> None:
    """Set the table's expiry properties (step 1; one commit, only if they differ)."""
    values = (str(math.ceil(retain * 1000)), "1", "true")
    wanted = dict(zip(RETENTION_PROPERTIES, values, strict=True))
    if any(table.properties.get(key) != value for key, value in wanted.items()):
        with table.transaction() as tx:
            tx.set_properties(wanted)
