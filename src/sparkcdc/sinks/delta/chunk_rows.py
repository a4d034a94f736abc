"""Snapshot chunks that reach the sink as ``k`` events: their rows come from the split store.

With ``snapshot_delivery = store`` a snapshot task keeps each corrected chunk as an Arrow file of
typed columns in the split store (:mod:`sparkcdc.snapshot.split_store`) and sends Spark one ``k``
event naming the file, instead of one ``r`` event with a JSON row image per row. Here the sink
turns each ``k`` event back into the ``r`` rows it stands for: ``op = 'r'``, no ``before``, the
typed row as ``after``, and the chunk's ``source`` (its high watermark, ``snapshot = true``,
the rows numbered from 0 by the source's event counter), exactly what the ``r`` events would
have given after decoding. The file is still there when the sink runs: the store releases a
chunk's rows only once Spark committed its micro-batch, and a replayed batch names the same
files.

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
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sparkcdc.core import columns as col
from sparkcdc.core.convert import cast_struct
from sparkcdc.core.event import OP_CHUNK, OP_READ, TRANSACTION_TYPE
from sparkcdc.core.table_name import TableName
from sparkcdc.sinks.batch_events import chunk_table
from sparkcdc.sinks.delta import commits
from sparkcdc.sinks.delta.storage import LakeStorage, as_storage
from sparkcdc.sinks.port import ChunkRef


def has_chunks(rows: pa.Table) -> bool:
    return bool(pc.any(pc.equal(rows.column("op"), OP_CHUNK)).as_py())


def only_chunks(rows: pa.Table) -> bool:
    return bool(pc.all(pc.equal(rows.column("op"), OP_CHUNK)).as_py())


def is_incremental(after: str | None) -> bool:
    """Whether a ``k`` event (its ``after``) stands for a chunk of an incremental snapshot."""
    try:
        ref = json.loads(after or "null")
    except ValueError:
        return False
    return isinstance(ref, dict) and ref.get("incremental") is True


def only_initial_chunks(rows: pa.Table) -> bool:
    """Whether ``rows`` (one table's) are nothing but chunks of an initial snapshot: the
    micro-batches :class:`AppendBook` may let append."""
    if not only_chunks(rows):
        return False
    return not any(is_incremental(after) for after in rows.column("after").to_pylist())


def only_incremental_chunks(rows: pa.Table) -> bool:
    """Whether ``rows`` (one table's) are nothing but chunks of an incremental snapshot."""
    if not only_chunks(rows):
        return False
    return all(is_incremental(after) for after in rows.column("after").to_pylist())


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


def chunk_refs(rows: pa.Table) -> list[ChunkRef]:
    """What the ``k`` events among ``rows`` name: their chunk files, rows and data files."""
    picked = rows.filter(pc.equal(rows.column("op"), OP_CHUNK)).column("after")
    return [cast(ChunkRef, json.loads(after)) for after in picked.to_pylist()]


def expand(rows: pa.Table, columns: list[pa.Field]) -> tuple[pa.Table, pa.ChunkedArray]:
    """The ``r`` rows of the ``k`` events among ``rows`` (envelope rows of one table with
    ``_pos``): (rows with op, source, transaction and ``_pos``, their typed ``after``).

    Built in bulk: the chunks' typed columns are not copied (each record batch becomes one
    chunk of ``after``), and every row's ``source`` is its event's, taken per row and numbered
    from 0 inside its chunk (:func:`_numbered`)."""
    picked = rows.filter(pc.equal(rows.column("op"), OP_CHUNK))
    counts, afters, counter = [], [], None
    for after in picked.column("after").to_pylist():
        typed = chunk_table(after)
        counts.append(typed.num_rows)
        counter = cast(ChunkRef, json.loads(after)).get("counter")
        for batch in typed.to_batches():
            struct = pa.StructArray.from_arrays(batch.columns, names=batch.schema.names)
            afters.append(cast_struct(struct, columns))
    n = sum(counts)
    which = pa.array(np.repeat(np.arange(len(counts), dtype=np.int64), counts))
    source = _numbered(picked.column("source").combine_chunks(), which, counts, counter)
    table = pa.table(
        {
            "op": pa.repeat(pa.scalar(OP_READ, pa.string()), n),
            "source": source,
            "transaction": pa.nulls(n, TRANSACTION_TYPE),
            "_pos": picked.column("_pos").combine_chunks().take(which),
        }
    )
    return table, pa.chunked_array(afters, pa.struct(columns))


def _numbered(
    events: pa.Array, which: pa.Array, counts: list[int], counter: str | None
) -> pa.StructArray:
    """The ``source`` of each chunk's rows: its ``k`` event's (``which``), with the ``counter``
    field counting from 0 in each chunk, as the chunk's ``r`` events count
    (:func:`~sparkcdc.core.offset_events.offset_source`)."""
    assert isinstance(events, pa.StructArray)
    taken = events.take(which)
    assert isinstance(taken, pa.StructArray)
    if counter is None:
        return taken
    kind = taken.type.field(counter).type
    numbered = col.counters(kind, [0] * len(counts), counts, len(taken))
    fields = list(taken.type)
    return pa.StructArray.from_arrays(
        [numbered if f.name == counter else taken.field(f.name) for f in fields], fields=fields
    )


def with_chunk_rows(
    rows: pa.Table,
    columns: list[pa.Field],
    typed_images: Callable[[pa.Table], tuple[pa.StructArray, pa.StructArray]],
) -> tuple[pa.Table, pa.StructArray, pa.StructArray | pa.ChunkedArray]:
    """``rows`` (one table's, with ``_pos``) with each ``k`` event replaced by its ``r`` rows,
    in log order, and their typed before and after images (``typed_images`` decodes the
    other events' row images)."""
    read, chunked = expand(rows, columns)
    inline = rows.filter(pc.invert(pc.equal(rows.column("op"), OP_CHUNK)))
    if inline.num_rows == 0:
        return read, pa.nulls(read.num_rows, chunked.type), chunked  # no copy of the rows
    read_after = chunked.combine_chunks()
    assert isinstance(read_after, pa.StructArray)
    before, after = typed_images(inline)
    keep = ["op", "source", "transaction", "_pos"]
    both = pa.concat_tables([inline.select(keep), read.select(keep)])
    order = pc.sort_indices(both.column("_pos"))  # stable: a chunk's rows stay together
    befores = pa.concat_arrays([before, _nulls_like(read_after)]).take(order)
    afters = pa.concat_arrays([after, read_after]).take(order)
    assert isinstance(befores, pa.StructArray) and isinstance(afters, pa.StructArray)
    return both.take(order), befores, afters


def _nulls_like(values: pa.StructArray) -> pa.StructArray:
    nulls = pa.nulls(len(values), values.type)
    assert isinstance(nulls, pa.StructArray)
    return nulls


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
