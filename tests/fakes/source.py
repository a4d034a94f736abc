"""The fake source behind the port (:class:`sparkcdc.sources.port.Source`)."""

from __future__ import annotations

from sparkcdc.core.errors import ConfigError
from sparkcdc.core.event import Change
from sparkcdc.core.offset import Offset
from sparkcdc.sources.port import ChangeFilter, SnapshotPin, Source
from sparkcdc.store.ring import EventStore
from tests.fakes.catalog import FakeCatalog, FakeChunks
from tests.fakes.database import FakeDatabase
from tests.fakes.offset import FakeOffset
from tests.fakes.reader import FakeLogReader


class FakeSource(Source):
    offsets = FakeOffset

    def catalog(self) -> FakeCatalog:
        return FakeCatalog(self.config.host)

    def startup_offset(self, startup: str) -> FakeOffset:
        mode, _, arg = startup.partition(":")
        if mode == "earliest":
            return FakeOffset(0)
        if mode == "latest":
            return FakeDatabase(self.config.host).end()
        if mode == "txn" and arg.isdigit():
            return FakeOffset(int(arg))
        raise ConfigError(f"source.startup {startup!r} is not a start mode of the fake source.",
                          key="source.startup")  # fmt: skip

    def open_reader(
        self,
        start: Offset,
        store: EventStore,
        schema_history: str,
        item_rows: int,
        change_filter: ChangeFilter | None = None,
        typed: bool = False,
    ) -> FakeLogReader:
        """A reader of JSON images only (``typed`` asks for typed images where a source has
        them: the sink takes either)."""
        assert isinstance(start, FakeOffset)
        return FakeLogReader(self.config.host, start, store, item_rows, change_filter)

    def back_fill(
        self, db: str, table: str, low: Offset, high: Offset, worker: int
    ) -> list[Change]:
        assert isinstance(low, FakeOffset) and isinstance(high, FakeOffset)
        return FakeDatabase(self.config.host).changes(db, table, low.seq, high.seq)

    def chunks(self, pin: SnapshotPin | None = None) -> FakeChunks:
        if pin is not None:
            raise TypeError("this source pins no snapshot; its chunks are read between watermarks")
        return FakeChunks(self.config.host)
