"""Section 7's transports: sparkcdc's PostgreSQL log reader fed by psycopg2's
``LogicalReplicationConnection`` (libpq: its TLS, SCRAM and CopyBoth handling) in place of
sparkcdc's own wire client, everything after the transport the same.

:class:`Psycopg2Stream` is a :class:`~sparkcdc.sources.postgres.stream.transport.LogStream`:
the session settings and pgoutput options of :func:`~.transport.open_wire_stream`, libpq's
``sslmode`` options of the catalog connection, ``read_message()`` until it has nothing, each
XLogData message rebuilt as the wire's item (its 25-byte header + payload, the one extra copy
this transport costs), ``select`` on the socket when nothing is buffered. Enough for the
measurement: psycopg2's errors are not turned into sparkcdc's sentences here.

:func:`reader_over` drains the reader (built as the source port builds it, with an opener) as
``bench.run.reader_only`` does.
"""

from __future__ import annotations

import select
import struct
from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg2
from psycopg2.extras import LogicalReplicationConnection

from bench import baselines
from sparkcdc.config.model import SourceConfig
from sparkcdc.sources.postgres.server.connect import tls_options
from sparkcdc.sources.postgres.settings import PostgresSettings
from sparkcdc.sources.postgres.source import PostgresSource
from sparkcdc.sources.postgres.stream.transport import (
    STREAM_SETTINGS,
    OpenStream,
    pgoutput_options,
)
from sparkcdc.sources.postgres.wire.connection import DEFAULT_SETTINGS

_ITEM_HEADER = struct.Struct(">cQQq")  # b"w", walStart, walEnd, sendTime
BATCH_ITEMS = 4096  # messages per list at most (the wire client's lists: one socket read)


class Psycopg2Stream:
    """A started stream of ``slot`` on a psycopg2 replication connection (module docstring)."""

    def __init__(
        self,
        source: SourceConfig,
        slot: str,
        publication: str,
        start: int,
        confirmed: int,
        status_interval: float,
    ) -> None:
        settings = {**DEFAULT_SETTINGS, **STREAM_SETTINGS}
        self.conn = psycopg2.connect(
            host=source.host, port=source.port, user=source.user, password=source.password.reveal(),
            dbname=PostgresSettings.of(source).database, application_name="sparkcdc",
            connection_factory=LogicalReplicationConnection,
            options=" ".join(f"-c {k}={v}" for k, v in settings.items()),
            **tls_options(source.tls),
        )  # fmt: skip
        self.encrypted = bool(self.conn.info.ssl_in_use)
        self.cur = self.conn.cursor()
        options = pgoutput_options(publication, self.conn.server_version)
        self.cur.start_replication(
            slot_name=slot, decode=False, start_lsn=start, options=options,
            status_interval=status_interval,
        )  # fmt: skip
        self.cur.send_feedback(flush_lsn=min(confirmed, start))  # the wire's rule

    @property
    def server_wal_end(self) -> int:
        return int(self.cur.wal_end)

    def batches(
        self, wait: float | None = 1.0, idle: Callable[[], None] | None = None
    ) -> Iterator[list[bytes]]:
        read, pack = self.cur.read_message, _ITEM_HEADER.pack
        while True:
            items: list[bytes] = []
            append = items.append
            while len(items) < BATCH_ITEMS:
                msg = read()
                if msg is None:
                    break
                append(pack(b"w", msg.data_start, msg.wal_end, 0) + msg.payload)  # no sendTime
            if items:
                yield items
                continue
            if idle is not None:
                idle()
            if not select.select([self.conn], [], [], wait)[0]:
                yield []

    def confirm(self, lsn: int) -> None:
        self.cur.send_feedback(flush_lsn=lsn)

    def send_status(self, force: bool = False) -> bool:
        if force:
            self.cur.send_feedback(force=True)
        return force

    def stop(self, timeout: float = 10.0) -> None:
        self.close()

    def close(self) -> None:
        self.conn.close()


def reader_over(
    open_stream: OpenStream, name: str
) -> Callable[[SourceConfig, int, Path], baselines.Measurement]:
    """A measurement of sparkcdc's log reader (typed images, the store drained) streaming over
    ``open_stream``, as ``bench.run.reader_only`` measures it over the source port."""

    def measure(config: SourceConfig, rows: int, work: Path) -> baselines.Measurement:
        from sparkcdc.store.ring import EventStore

        source = PostgresSource(config)
        start = source.startup_offset("earliest")
        store = EventStore(max_bytes=64 * 1024 * 1024, max_items=16384, batch_mode="MEMSIZE")
        history = str(work / f"history-{name.replace(' ', '-')}.jsonl")
        reader = source.open_reader(
            start, store, history, 2048, typed=True, open_stream=open_stream
        )
        return baselines.drain_reader(name, reader, store, rows)

    return measure
