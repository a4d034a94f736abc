"""After a re-snapshot, the replica's rows whose keys the source no longer has: which they are,
and the change log's ``d`` rows that record their deletion, for every table format.

A re-snapshot (``source.on_log_gone: resnapshot``) reads every captured table again and
upserts its rows into the replica; a key deleted at the source while the log was lost is in no
chunk, so an upsert alone would keep it for ever. Every row the re-snapshot reads, and every
change the log brings after it, lands in the change log at or after ``since`` (the log's end
when the re-snapshot began). So once the snapshot is whole, a replica key that no change-log row
at or after ``since`` holds as its after image is a key the source deleted. Each table format
(its :data:`~sparkcdc.sinks.port.GoneKeys`) reads the two tables, appends these ``d`` rows to
the change log, closes the keys' open versions in the history table (``sink.history``) at those
rows, and deletes the keys from the replica, each once (idempotent per re-snapshot) and in that
order, so a second try after a crash finds the same keys in the replica. The ``d`` rows carry the
newest ``ts_ms`` of the re-snapshot's rows (when its reads ended): the same on a second try.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc

from sparkcdc.core.event import OP_CREATE, OP_DELETE, OP_READ, OP_UPDATE
from sparkcdc.core.offset import Offset, position_text
from sparkcdc.core.table_name import TableName
from sparkcdc.sinks.changes.history_plan import HistoryBatch

LIVE_OPS = (OP_READ, OP_CREATE, OP_UPDATE)  # the ops whose after image holds a live key


def live_after(changelog: pa.Table, since: str) -> pa.Table:
    """The rows of ``changelog`` (``op``, ``after`` and ``source`` at least) that hold a live
    key as their after image: ``r``/``c``/``u`` at or after ``since``."""
    position = pc.struct_field(changelog.column("source"), "position")
    wanted = pc.and_(
        pc.is_in(changelog.column("op"), pa.array(LIVE_OPS)),
        pc.greater_equal(position, since),
    )
    return changelog.filter(wanted)


def gone_rows(replica: pa.Table, live: pa.Table, key: Sequence[str]) -> pa.Table:
    """The rows of ``replica`` whose key no after image of ``live`` (:func:`live_after`) holds."""
    after = live.column("after").combine_chunks()
    if len(after) == 0:
        return replica
    keys = pa.Table.from_arrays([after.field(k) for k in key], names=list(key))
    keys = keys.group_by(list(key)).aggregate([]).cast(replica.select(list(key)).schema)
    return replica.join(keys, list(key), join_type="left anti")


def observed_at(live: pa.Table) -> int:
    """The ``ts_ms`` of the ``d`` rows: the newest of ``live``'s rows (:func:`live_after`),
    else now (no row of the re-snapshot's to go by)."""
    if live.num_rows:
        newest = pc.max(pc.struct_field(live.column("source"), "ts_ms")).as_py()
        if newest is not None:
            return int(newest)
    return int(time.time() * 1000)


def delete_rows(
    gone: pa.Table,
    log_schema: pa.Schema,
    at: Offset,
    names: tuple[str | None, str | None, str | None],
    ts_ms: int,
) -> pa.Table:
    """The change log's ``d`` rows of ``gone`` in ``log_schema`` (plain types): before = the
    replica's row, after null, ``source`` naming ``names`` (db, schema, table) at ``at`` and
    ``ts_ms``."""
    count = gone.num_rows
    image = log_schema.field("before").type
    before = pa.StructArray.from_arrays(
        [gone.column(f.name).combine_chunks().cast(f.type) for f in image], fields=list(image)
    )
    source_type = log_schema.field("source").type
    db, schema, table = names
    values = {
        "db": db, "schema": schema, "table": table, "ts_ms": ts_ms,
        "snapshot": True, "position": position_text(*at.position_key, 0),
        **at.source_fields(),
    }  # fmt: skip
    source = pa.StructArray.from_arrays(
        [pa.array([values.get(f.name)] * count, f.type) for f in source_type],
        fields=list(source_type),
    )
    columns = {
        "op": pa.array([OP_DELETE] * count, pa.string()),
        "before": before,
        "after": pa.nulls(count, before.type),
        "source": source,
    }
    arrays = [columns.get(f.name, pa.nulls(count, f.type)) for f in log_schema]
    return pa.Table.from_arrays(arrays, names=log_schema.names)


def source_names(changelog: pa.Table) -> tuple[str | None, str | None, str | None]:
    """The ``source`` struct's db, schema and table of the first row of ``changelog``."""
    first = changelog.column("source").to_pylist()[0] if changelog.num_rows else {}
    return first.get("db"), first.get("schema"), first.get("table")


def history_batch(
    name: TableName, key: Sequence[str], gone: pa.Table, deleted: pa.Table
) -> HistoryBatch:
    """The history batch that closes the open versions of the replica's rows ``gone`` at their
    ``d`` rows ``deleted`` (:func:`delete_rows`)."""
    count, columns = gone.num_rows, list(gone.schema)
    before = pa.StructArray.from_arrays(
        [gone.column(f.name).combine_chunks() for f in columns], fields=columns
    )
    rows = pa.table({
        "op": deleted.column("op"), "source": deleted.column("source"),
        "_pos": pa.array(range(count), pa.int64()),
    })  # fmt: skip
    return HistoryBatch(name, tuple(key), columns, rows, before, pa.nulls(count, before.type))
