"""The log between a chunk's low and high watermark, for one table (Flink CDC 2.x, seed 003).

A snapshot split reads its chunk without locks, so rows may change while it reads. The changes
committed between the watermark taken before the SELECT (low) and the one taken after it
(high) are read here with a bounded log reader: its own replication connection and server id,
only the split's table captured, stopping at the high watermark.
"""

from __future__ import annotations

import dataclasses
import re
import tempfile
import time
from pathlib import Path

from sparkcdc.config.model import SourceConfig
from sparkcdc.core.errors import SourceError
from sparkcdc.core.event import OP_SCHEMA, Change
from sparkcdc.core.table_name import TableName
from sparkcdc.sources.mysql.offset import BinlogOffset
from sparkcdc.store.ring import EventStore

WINDOW_TIMEOUT = 120.0


def changes_between(
    source: SourceConfig,
    db: str,
    table: str,
    low: BinlogOffset,
    high: BinlogOffset,
    server_id: int,
) -> list[Change]:
    """The row changes of ``db.table`` committed in ``[low, high)``, in log order."""
    from sparkcdc.sources.mysql.binlog.reader import LogReader
    from sparkcdc.sources.mysql.schema.history import SchemaHistory

    if high <= low:
        return []
    # every change as the log has it: the caller applies the capture rules, skipping none
    only = dataclasses.replace(
        source,
        tables=(f"{re.escape(db)}\\.{re.escape(table)}",),
        columns={},
        skip_operations=(),
        masks=(),
    )
    store = EventStore(64 * 1024 * 1024, 1024)
    out: list[Change] = []
    with tempfile.TemporaryDirectory(prefix="sparkcdc-window-") as tmp:
        history = SchemaHistory(str(Path(tmp) / "schema-history.jsonl"))
        reader = LogReader(
            only, low, store, history, 65536, server_id, reconnect_timeout=30.0, stop_at=high
        )
        reader.start()
        deadline = time.monotonic() + WINDOW_TIMEOUT
        try:
            while True:
                batch = store.get(timeout=0.5)
                if batch is None:
                    if store.closed:
                        break
                    if time.monotonic() > deadline:
                        raise SourceError(
                            f"reading the log from {low} to {high} for {TableName(db, table)} "
                            "took longer "
                            f"than {WINDOW_TIMEOUT:g}s; check the server's load and retry."
                        )
                    continue
                for rb in batch.record_batches():
                    cols = rb.to_pydict()
                    for op, key, before, after in zip(
                        cols["op"], cols["key"], cols["before"], cols["after"], strict=True
                    ):
                        if op != OP_SCHEMA:
                            out.append((op, key, before, after))
                store.ack(batch)
        finally:
            reader.stop()
        if reader.error is not None:
            raise reader.error
    return out
