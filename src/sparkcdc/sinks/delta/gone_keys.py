"""After a re-snapshot, the replica's rows whose keys the source no longer has, deleted.

A re-snapshot (``source.on_log_gone: resnapshot``) reads every captured table again and
upserts its rows into the replica; a key deleted at the source while the log was lost is in no
chunk, so an upsert alone would keep it for ever. Every row the re-snapshot reads, and every
change the log brings after it, lands in the change log at or after ``since`` (the log's end
when the re-snapshot began). So once the snapshot is whole, a replica key that no change-log row
at or after ``since`` holds as its after image is a key the source deleted: :func:`delete_gone`
appends a ``d`` row for each to the change log and deletes them from the replica, both
idempotent (the change log's append by its transaction id, the delete by nature).
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import pyarrow as pa
import pyarrow.dataset as ds

from sparkcdc.core.event import OP_CREATE, OP_DELETE, OP_READ, OP_UPDATE
from sparkcdc.core.offset import Offset, position_text
from sparkcdc.sinks.changes.latest import OP_COLUMN, ORDER_COLUMN
from sparkcdc.sinks.delta import commits


def live_keys(changelog: str, key: Sequence[str], since: str) -> pa.Table:
    """The distinct keys of the after images of ``r``/``c``/``u`` rows at or after ``since``."""
    empty = pa.table({k: pa.array([], pa.null()) for k in key})
    if commits.open_table(changelog) is None:
        return empty
    wanted = ds.field("op").isin([OP_READ, OP_CREATE, OP_UPDATE]) & (
        ds.field("source", "position") >= since
    )
    rows = commits.table(changelog).to_pyarrow_dataset().to_table(columns=["after"], filter=wanted)
    after = rows.column("after").combine_chunks()
    if len(after) == 0:
        return empty
    keys = pa.Table.from_arrays([after.field(k) for k in key], names=list(key))
    return keys.group_by(list(key)).aggregate([])


def gone_rows(replica: str, changelog: str, key: Sequence[str], since: str) -> pa.Table:
    """The replica's rows whose key is not among :func:`live_keys`."""
    if commits.open_table(replica) is None:
        return pa.table({})
    rows = commits.table(replica).to_pyarrow_table()
    live = live_keys(changelog, key, since)
    if live.num_rows == 0:
        return rows
    live = live.cast(rows.select(list(key)).schema)
    return rows.join(live, list(key), join_type="left anti")


def delete_gone(
    replica: str,
    changelog: str,
    key: Sequence[str],
    since: str,
    at: Offset,
    app_id: str,
) -> int:
    """Delete the gone keys (module docstring); ``at`` is the hand-off offset the ``d`` rows
    carry. The number of keys deleted."""
    gone = gone_rows(replica, changelog, key, since)
    if gone.num_rows == 0:
        return 0
    log_schema = pa.schema(commits.table(changelog).schema().to_arrow())
    log_rows = _delete_rows(gone, log_schema, at, _names(changelog))
    commits.append_once(changelog, log_rows, app_id, 0)
    deletes = gone.select(list(key)).append_column(
        OP_COLUMN, pa.array([OP_DELETE] * gone.num_rows, pa.string())
    )
    deletes = deletes.append_column(ORDER_COLUMN, pa.array(range(gone.num_rows), pa.int64()))
    commits.merge_replica(replica, deletes, key, app_id, 0)
    return int(gone.num_rows)


def _names(changelog: str) -> tuple[str | None, str | None, str | None]:
    """The ``source`` struct's db, schema and table, as a row of the change log has them."""
    source = commits.table(changelog).to_pyarrow_dataset().head(1, columns=["source"])
    first = source.column("source").to_pylist()[0] if source.num_rows else {}
    return first.get("db"), first.get("schema"), first.get("table")


def _delete_rows(
    gone: pa.Table,
    log_schema: pa.Schema,
    at: Offset,
    names: tuple[str | None, str | None, str | None],
) -> pa.Table:
    """The change log's ``d`` rows of ``gone``: before = the replica's row, after null."""
    count = gone.num_rows
    image = _plain_struct(log_schema.field("before").type)
    before = pa.StructArray.from_arrays(
        [gone.column(f.name).combine_chunks().cast(f.type) for f in image], fields=list(image)
    )
    source_type = _plain_struct(log_schema.field("source").type)
    db, schema, table = names
    values = {
        "db": db, "schema": schema, "table": table, "ts_ms": int(time.time() * 1000),
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
    arrays = [columns.get(f.name, pa.nulls(count, _plain_type(f.type))) for f in log_schema]
    return pa.Table.from_arrays(arrays, names=log_schema.names)


def _plain_struct(kind: pa.DataType) -> pa.StructType:
    return pa.struct([commits.plain_field(kind.field(i)) for i in range(kind.num_fields)])


def _plain_type(kind: pa.DataType) -> pa.DataType:
    return commits.plain_field(pa.field("x", kind)).type
