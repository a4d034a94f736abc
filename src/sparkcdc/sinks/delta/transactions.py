"""The transaction records in a Delta table, ``<sink>/_sparkcdc/transactions`` (their rows:
:mod:`sparkcdc.sinks.changes.transactions`)."""

from __future__ import annotations

import pyarrow as pa

from sparkcdc.sinks.changes import transactions
from sparkcdc.sinks.delta import commits
from sparkcdc.sinks.storage import LakeStorage, as_storage

TRANSACTIONS_DIR = "_sparkcdc/transactions"


def write_transactions(
    lake: str | LakeStorage, envelope: pa.Table, open_end: bool, app_id: str, batch_id: int
) -> int:
    """Append the ``BEGIN``/``END`` rows of a micro-batch as batch ``batch_id`` of pipeline
    ``app_id`` (a batch written before is not written again); how many the batch holds."""
    rows = transactions.transaction_records(envelope, open_end)
    if rows.num_rows == 0:
        return 0
    where = as_storage(lake)
    path = where.join(*TRANSACTIONS_DIR.split("/"))
    where.mkdir(path)
    commits.append_once(path, transactions.with_batch_id(rows, batch_id), app_id, batch_id)
    return int(rows.num_rows)
