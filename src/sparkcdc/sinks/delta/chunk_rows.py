"""Snapshot chunks appended to a Delta replica instead of merged (the ``k`` events and their
rows: :mod:`sparkcdc.sinks.changes.chunks`).

A table's snapshot chunks are *appended* to its replica instead of merged while nothing but
chunks of this pipeline has reached it (:class:`AppendBook`): the replica held no row when its
first chunk came, chunks are disjoint key ranges each written once, and every micro-batch with a
log event of the table ends the rule for good. So an append gives what the MERGE would, at a
fraction of its cost; this is the case of ``startup: initial``, whose log events start after the
last chunk. Chunks of an *incremental* snapshot (``"incremental": true`` in the event) end the
rule like a log event, since the replica may hold their keys already: they are merged, unless
the micro-batch holds nothing else of the table and the replica's file statistics prove that no
row of it has a key in the chunks' range (:func:`disjoint`, an integer key), which is the case
of a table added to a running pipeline or first captured with its snapshot.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa
import pyarrow.compute as pc

from sparkcdc.core.table_name import TableName
from sparkcdc.sinks.delta import commits
from sparkcdc.sinks.storage import LakeStorage, as_storage


def disjoint(replica: str, key: Sequence[str], after: pa.StructArray | pa.ChunkedArray) -> bool:
    """Whether no row of the replica can share its key with a row of ``after``: the key is one
    integer column and no data file's statistics (its min and max) reach into the rows' key
    range. Chunks of an incremental snapshot that pass are appended, not merged."""
    if len(key) != 1:
        return False
    name = key[0].lower()
    fields = [after.type.field(i).name for i in range(after.type.num_fields)]
    found = next((f for f in fields if f.lower() == name), None)
    if found is None:
        return False
    parts = after.chunks if isinstance(after, pa.ChunkedArray) else [after]
    values = pa.chunked_array([p.field(found) for p in parts], after.type.field(found).type)
    if not pa.types.is_integer(values.type) or values.null_count:
        return False
    table = commits.open_table(replica)
    if table is None or len(values) == 0:
        return True
    bounds = pc.min_max(values)
    lo, hi = bounds["min"].as_py(), bounds["max"].as_py()
    files = pa.table(table.get_add_actions(flatten=False))
    if files.num_rows == 0:
        return True
    try:
        low = files.column("min").combine_chunks().field(found)
        high = files.column("max").combine_chunks().field(found)
    except KeyError:  # no statistics of the column are kept
        return False
    if low.null_count or high.null_count:
        return False
    overlap = pc.and_(pc.less_equal(low, hi), pc.greater_equal(high, lo))
    return not pc.any(overlap).as_py()


def append_chunks(
    changelog_path: str,
    changelog: pa.Table,
    replica_path: str,
    after: pa.StructArray | pa.ChunkedArray,
    app_id: str,
    batch_id: int,
) -> bool:
    """Append a micro-batch of chunks to the change log and the replica (rows ``after``); False
    if both were written before."""
    # two appends to two tables at once: delta-rs encodes Parquet outside the GIL
    with ThreadPoolExecutor(1) as pool:
        logged = pool.submit(commits.append_changelog, changelog_path, changelog, app_id, batch_id)
        plain = pa.Table.from_struct_array(after)
        wrote_replica = commits.append_replica(replica_path, plain, app_id, batch_id)
        wrote_log = logged.result()
    return wrote_log or wrote_replica


class AppendBook:
    """Per table and pipeline: may snapshot chunks be appended to the replica? Decided when the
    table's first chunk arrives (yes if the replica has no row), revoked by the first log event
    of the table, and kept in ``<sink>/_sparkcdc/snapshots/`` so a restart decides the same."""

    def __init__(self, lake: str | LakeStorage) -> None:
        self.storage = as_storage(lake)
        self._known: dict[tuple[str, str, str], bool | None] = {}

    def may_append(self, db: str, table: str, app_id: str, replica: str) -> bool:
        """For a micro-batch holding only chunks of ``db.table``."""
        found = self._read(db, table, app_id)
        if found is None:
            opened = commits.open_table(replica)
            found = opened is None or not opened.file_uris()
            self._write(db, table, app_id, found)
        return found

    def streamed(self, db: str, table: str, app_id: str) -> None:
        """A micro-batch holds log events of ``db.table``: chunks are merged from now on."""
        if self._read(db, table, app_id) is True:
            self._write(db, table, app_id, False)

    def _path(self, db: str, table: str) -> str:
        return self.storage.join("_sparkcdc", "snapshots", f"{TableName(db, table)}.json")

    def _read(self, db: str, table: str, app_id: str) -> bool | None:
        key = (db, table, app_id)
        if key not in self._known:
            try:
                found = json.loads(self.storage.read_text(self._path(db, table)) or "{}")
            except ValueError:
                found = {}
            self._known[key] = found.get("append") if found.get("app_id") == app_id else None
        return self._known[key]

    def _write(self, db: str, table: str, app_id: str, append: bool) -> None:
        self.storage.write_text(
            self._path(db, table), json.dumps({"app_id": app_id, "append": append})
        )
        self._known[(db, table, app_id)] = append
