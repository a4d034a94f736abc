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

The table formats' sinks share this; appending chunks instead of merging them is each
format's own (Delta: :mod:`sparkcdc.sinks.delta.chunk_rows`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sparkcdc.core import columns as col
from sparkcdc.core.convert import cast_struct
from sparkcdc.core.event import OP_CHUNK, OP_READ, TRANSACTION_TYPE
from sparkcdc.sinks.batch_events import chunk_table
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
