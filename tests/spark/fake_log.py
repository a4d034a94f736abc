"""A fake binary log for Spark tests: transactions in a JSON-lines file, read by a fake log reader.

The source option ``reader_factory=tests.spark.fake_log:FakeReaders`` swaps the MySQL log reader
for :class:`FakeLogReader`; ``host`` is then the path of the log file. The first line holds the
table schemas; every further line is one transaction ``{"file", "pos", "ts_ms", "rows": [...]}``
where each row is ``[op, db, table, key, before, after]`` (JSON text). The fake follows the
log reader's contract: one schema announcement at the start (``after`` = start), items of at most
``item_rows`` rows, inner items ending at (txn start, skip = rows so far), a transaction's last
item ending at the next transaction's start; lines appended later are picked up while running.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sparkcdc.config.model import SourceConfig
from sparkcdc.core import errors
from sparkcdc.core.event import EnvelopeBuilder
from sparkcdc.core.logitem import LogItem
from sparkcdc.core.offset import BinlogOffset
from sparkcdc.core.schema import TableSchema
from sparkcdc.store.ring import EventStore

FILE = "mysql-bin.000001"
FIRST_POS = 4
TXN_BYTES = 100  # every fake transaction occupies 100 bytes of the fake log


class FakeLog:
    """Writes the fake log file that a test's stream reads."""

    def __init__(self, path: Path, schemas: list[TableSchema]) -> None:
        self.path = path
        self.pos = FIRST_POS
        path.write_text(json.dumps([s.to_json() for s in schemas]) + "\n")

    def commit(self, rows: list[list[Any]], ts_ms: int = 1_700_000_000_000) -> BinlogOffset:
        """Append one transaction; returns the offset after it."""
        with self.path.open("a") as f:
            f.write(
                json.dumps({"file": FILE, "pos": self.pos, "ts_ms": ts_ms, "rows": rows}) + "\n"
            )
        self.pos += TXN_BYTES
        return BinlogOffset(FILE, self.pos)

    def fail(self, error: str, message: str) -> None:
        """Make the reader stop with ``errors.<error>(message)`` when it reaches this point."""
        with self.path.open("a") as f:
            f.write(json.dumps({"error": error, "message": message}) + "\n")

    @property
    def end(self) -> BinlogOffset:
        return BinlogOffset(FILE, self.pos)


@dataclass
class FakeStats:
    events: int
    rows: int
    position: BinlogOffset
    last_event_ts_ms: int | None
    connected: bool = True


class FakeLogReader(threading.Thread):
    def __init__(self, path: str, start: BinlogOffset, store: EventStore, item_rows: int) -> None:
        super().__init__(daemon=True)
        self.path, self.start_at, self.store, self.item_rows = Path(path), start, store, item_rows
        self.error: BaseException | None = None
        self._stop_event = threading.Event()
        self._stats = FakeStats(0, 0, start, None)

    def stats(self) -> FakeStats:
        return self._stats

    def stop(self) -> None:
        self._stop_event.set()

    def run(self) -> None:
        try:
            self._run()
        except BaseException as exc:
            self.error = exc

    def _run(self) -> None:
        lines = self.path.read_text().splitlines()
        schemas = [TableSchema.from_json(s) for s in json.loads(lines[0])]
        self.schema_ids = {(s.db, s.table): s.schema_id() for s in schemas}
        b = EnvelopeBuilder()
        for i, s in enumerate(schemas):
            b.append(
                "s",
                s.db,
                s.table,
                None,
                None,
                None,
                s.schema_id(),
                server_id=1,
                file=self.start_at.file,
                pos=self.start_at.pos,
                row=i,
                gtid="",
                ts_ms=0,
                total_order=0,
                data_collection_order=0,
                schema=json.dumps(s.to_json()),
            )
        self.store.put(LogItem(self.start_at, b.build(), is_ddl=True))
        done = 1
        while not self._stop_event.is_set():
            lines = self.path.read_text().splitlines()
            for line in lines[done:]:
                if not line.endswith("}"):
                    break
                self._transaction(json.loads(line))
                done += 1
            time.sleep(0.05)

    def _transaction(self, txn: dict[str, Any]) -> None:
        if "error" in txn:  # the fake server refuses: the reader stops with this error
            raise getattr(errors, txn["error"])(txn["message"])
        start = BinlogOffset(txn["file"], txn["pos"])
        nxt = BinlogOffset(txn["file"], txn["pos"] + TXN_BYTES)
        self._stats.position = nxt
        if nxt <= self.start_at:
            return
        rows = txn["rows"]
        first = (
            self.start_at.skip
            if start == BinlogOffset(self.start_at.file, self.start_at.pos)
            else 0
        )
        for lo in range(first, len(rows), self.item_rows):
            hi = min(lo + self.item_rows, len(rows))
            b = EnvelopeBuilder()
            for i in range(lo, hi):
                op, db, table, key, before, after = rows[i]
                b.append(
                    op,
                    db,
                    table,
                    key,
                    before,
                    after,
                    self.schema_ids[(db, table)],
                    server_id=1,
                    file=txn["file"],
                    pos=txn["pos"] + 1,
                    row=i,
                    gtid=f"0-1-{txn['pos']}",
                    ts_ms=txn["ts_ms"],
                    total_order=i + 1,
                    data_collection_order=i + 1,
                )
            after_off = nxt if hi == len(rows) else BinlogOffset(start.file, start.pos, skip=hi)
            while not self.store.put(LogItem(after_off, b.build()), timeout=0.2):
                if self._stop_event.is_set():
                    return
            self._stats.rows += hi - lo
        self._stats.events += 1
        self._stats.last_event_ts_ms = txn["ts_ms"]


class FakeReaders:
    def initial_offset(self, source: SourceConfig) -> BinlogOffset:
        return BinlogOffset(FILE, FIRST_POS)

    def current_offset(self, source: SourceConfig) -> BinlogOffset:
        lines = Path(source.host).read_text().splitlines()
        return BinlogOffset(FILE, FIRST_POS + TXN_BYTES * (len(lines) - 1))

    def captured_tables(self, source: SourceConfig) -> list[str]:
        """The tables of the fake log's first line (its schemas)."""
        first = Path(source.host).read_text().splitlines()[0]
        return [f"{s['db']}.{s['table']}" for s in json.loads(first)]

    def open(
        self,
        source: SourceConfig,
        start: BinlogOffset,
        store: EventStore,
        schema_history: str,
        item_rows: int,
    ) -> FakeLogReader:
        return FakeLogReader(source.host, start, store, item_rows)
