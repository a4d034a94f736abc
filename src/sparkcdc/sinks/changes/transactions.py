"""Transaction records (``pipeline.transactions: true``), Debezium's transaction metadata.

Each source transaction whose changes reach the change log gets a ``BEGIN`` row in the
micro-batch of its first change and an ``END`` row in the micro-batch of its last, appended by
each sink to one table of its format with the columns of :data:`TRANSACTIONS_SCHEMA`, once per
micro-batch (the commit carries the pipeline id and batch id, as the change logs' do).

Built from the micro-batch alone, without state kept between batches:

- a transaction's changes are consecutive in log order, and ``transaction.total_order`` rises
  by one from change to change; a run of changes of one ``transaction.id`` whose
  ``total_order`` keeps rising is one transaction's part in the batch;
- ``BEGIN`` when the part holds ``total_order = 1`` (a transaction resumed inside, after a
  crash or a split across batches, starts higher);
- ``END`` for every part but the batch's last when the batch ends inside a transaction
  (``open_end``: the stream's end offset holds a resume counter, a transaction larger than
  the event store); its ``event_count`` is the last change's ``total_order`` and each table's
  count the largest ``data_collection_order`` of its changes (both count from the
  transaction's first change, also across batches).

Only row changes (``c``, ``u``, ``d``) are counted: snapshot reads carry no transaction, and a
``t`` row (a TRUNCATE) numbers its tables apart from the rows. ``position`` is the
``source.position`` of the transaction's first change (``BEGIN``) or last change (``END``), so
the records sort beside their changes; ``ts_ms`` is the commit time.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc

from sparkcdc.core.event import OP_CREATE, OP_DELETE, OP_UPDATE
from sparkcdc.core.table_name import TableName

BEGIN = "BEGIN"
END = "END"

DATA_COLLECTION = pa.struct([("data_collection", pa.string()), ("event_count", pa.int64())])

TRANSACTIONS_SCHEMA = pa.schema(
    [
        ("batch_id", pa.int64()),
        ("status", pa.string()),  # BEGIN or END
        ("id", pa.string()),  # the change log's transaction.id
        ("ts_ms", pa.int64()),  # commit time at the source
        ("position", pa.string()),  # source.position of the first (BEGIN) or last (END) change
        ("event_count", pa.int64()),  # END only
        ("data_collections", pa.list_(DATA_COLLECTION)),  # END only: "db.table" and its count
    ]
)

_ROW_CHANGES = pa.array([OP_CREATE, OP_UPDATE, OP_DELETE])


@dataclass
class _Part:
    """One transaction's changes in a micro-batch."""

    id: str
    ts_ms: int | None
    first_order: int
    first_position: str | None
    last_order: int = 0
    last_position: str | None = None
    tables: dict[str, int] = field(default_factory=dict)  # "db.table" -> max collection order


def transaction_records(envelope: pa.Table, open_end: bool = False) -> pa.Table:
    """The ``BEGIN`` and ``END`` rows of a micro-batch's envelope, in log order: the columns of
    :data:`TRANSACTIONS_SCHEMA` but ``batch_id`` (module docstring for the rules)."""
    fields = pa.schema([f for f in TRANSACTIONS_SCHEMA if f.name != "batch_id"])
    parts = _parts(envelope)
    rows: list[dict[str, object]] = []
    for i, part in enumerate(parts):
        if part.first_order == 1:
            rows.append({"status": BEGIN, "id": part.id, "ts_ms": part.ts_ms,
                         "position": part.first_position})  # fmt: skip
        if open_end and i == len(parts) - 1:
            continue  # its last change comes in a later batch
        collections = [{"data_collection": name, "event_count": n}
                       for name, n in part.tables.items()]  # fmt: skip
        rows.append({"status": END, "id": part.id, "ts_ms": part.ts_ms,
                     "position": part.last_position, "event_count": part.last_order,
                     "data_collections": collections})  # fmt: skip
    return pa.Table.from_pylist(rows, schema=fields)


def with_batch_id(rows: pa.Table, batch_id: int) -> pa.Table:
    """``rows`` (:func:`transaction_records`) with their micro-batch's id: rows of the table."""
    ids = pa.repeat(pa.scalar(batch_id, pa.int64()), rows.num_rows)
    return rows.add_column(0, TRANSACTIONS_SCHEMA.field("batch_id"), ids).cast(TRANSACTIONS_SCHEMA)


def _parts(envelope: pa.Table) -> list[_Part]:
    """The transactions' parts among the batch's row changes, in log order."""
    if envelope.num_rows == 0:
        return []
    keep = pc.and_(
        pc.is_in(envelope.column("op"), _ROW_CHANGES),
        pc.is_valid(envelope.column("transaction")),
    )
    picked = envelope.filter(keep)
    if picked.num_rows == 0:
        return []
    txn = picked.column("transaction").combine_chunks()
    source = picked.column("source").combine_chunks()
    columns = zip(
        txn.field("id").to_pylist(),
        txn.field("total_order").to_pylist(),
        txn.field("data_collection_order").to_pylist(),
        picked.column("db").to_pylist(),
        picked.column("table").to_pylist(),
        source.field("position").to_pylist(),
        source.field("ts_ms").to_pylist(),
        strict=True,
    )
    parts: list[_Part] = []
    for tid, order, table_order, db, table, position, ts_ms in columns:
        last = parts[-1] if parts else None
        if last is None or tid != last.id or order <= last.last_order:
            last = _Part(str(tid), ts_ms, int(order), position)
            parts.append(last)
        last.last_order, last.last_position = int(order), position
        name = str(TableName(db, table))
        last.tables[name] = max(last.tables.get(name, 0), int(table_order))
    return parts
