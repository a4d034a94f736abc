"""The fake source's log reader (:class:`sparkcdc.sources.port.LogReader`): a thread that follows
the fake database's file and cuts its transactions into store items with the shared
:class:`~sparkcdc.store.cutter.TransactionCutter`, as a real source's reader does.

``ack`` appends the acknowledged offset to ``<file>.acks`` (one JSON line each), so a test can
tell, from any process, what the stream acknowledged and when.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

from sparkcdc.core import errors
from sparkcdc.core.logitem import LogItem
from sparkcdc.core.offset import Offset, position_text
from sparkcdc.core.offset_events import own_values, schema_batch
from sparkcdc.sources.port import ChangeFilter, ReaderStats, TableView
from sparkcdc.store.cutter import TransactionCutter
from sparkcdc.store.ring import EventStore
from tests.fakes.database import FakeDatabase, Transaction
from tests.fakes.offset import FakeOffset

POLL_SECONDS = 0.05


class FakeLogReader:
    def __init__(
        self,
        path: str,
        start: FakeOffset,
        store: EventStore,
        item_rows: int,
        change_filter: ChangeFilter | None = None,
    ) -> None:
        self.db = FakeDatabase(path)
        self.acks = Path(f"{path}.acks")
        self.start_at, self.store, self.change_filter = start, store, change_filter
        self.cutter = TransactionCutter(item_rows, self._put, FakeOffset)
        self._error: BaseException | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="fake-log-reader", daemon=True)
        self._events = self._rows = 0
        self._read = start.seq  # the next transaction to read
        self._position: FakeOffset = start
        self._last_ts: int | None = None

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    @property
    def error(self) -> BaseException | None:
        return self._error

    def stats(self) -> ReaderStats:
        return ReaderStats(self._events, self._rows, self._position, self._last_ts, True)

    def passed(self, offset: Offset) -> bool:
        assert isinstance(offset, FakeOffset)
        return self._read >= offset.seq and self.cutter.pending is None and not self.cutter.open

    def ack(self, offset: Offset) -> None:
        with self.acks.open("a") as f:
            f.write(json.dumps(offset.to_json()) + "\n")

    def table_view(self, name: str) -> TableView | None:
        return None  # the fake database's DDL is in its log in order, as a binlog's

    def _run(self) -> None:
        try:
            schemas = self.db.schemas()
            rows = [(s.db, s.table, json.dumps(s.to_json()), None, '{"kind":"announce"}',
                     s.schema_id()) for s in schemas]  # fmt: skip
            batch = schema_batch(rows, FakeOffset, position=self.start_at.position(),
                                 own=own_values(FakeOffset, self.start_at), ts_ms=0)  # fmt: skip
            self._put(LogItem(self.start_at, batch, is_ddl=True))
            while not self._stop.is_set():
                for txn in self.db.transactions(self._read):
                    self._transaction(txn)
                self.cutter.flush()
                time.sleep(POLL_SECONDS)
        except errors.StoreClosed:
            pass
        except BaseException as exc:  # noqa: BLE001 - handed to the consumer through the store
            self._error = exc
            self.store.close(exc)

    def _put(self, item: LogItem) -> None:
        while not self.store.put(item, timeout=0.2):
            if self._stop.is_set():
                raise errors.StoreClosed("stopped")
        self._rows += item.rows if not item.is_ddl else 0

    def _transaction(self, txn: Transaction) -> None:
        if txn.error is not None:  # the fake server refuses: the reader stops with this error
            kind, message = txn.error
            raise getattr(errors, kind)(message)
        start = FakeOffset(txn.seq)
        skip = self.start_at.skip if txn.seq == self.start_at.seq else 0
        self.cutter.begin(start, str(txn.seq), txn.ts_ms, skip)
        schemas = {(s.db, s.table): s.schema_id() for s in self.db.schemas()}
        for i, (op, db, table, key, before, after) in enumerate(txn.rows):
            changes = [(op, key, before, after)]
            record = FakeOffset(txn.seq)
            if self.change_filter is not None:
                changes = self.change_filter(db, table, record, changes)
            place = position_text(txn.seq, i + 1)
            self.cutter.add(db, table, schemas[(db, table)], place, (txn.seq, None), changes)
        self._read = txn.seq + 1
        self._position = FakeOffset(self._read)
        self.cutter.commit(self._position)
        self._events += 1
        self._last_ts = txn.ts_ms
