"""What the log reader reads a slot through: a started logical replication stream.

:class:`LogStream` is the little the reader asks of it (the shape of
:class:`~sparkcdc.sources.postgres.wire.stream.ReplicationStream`); :func:`open_wire_stream`
opens one with sparkcdc's own wire client, over TLS as ``source.tls`` says, asking pgoutput
for protocol version 2 (transactions streamed while they run) where the server has it. The
reader takes another opener as an argument, so the benchmarks can feed it the same slot through
another client (bench/RESULTS.md section 7).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Protocol

from sparkcdc.config.model import SourceConfig
from sparkcdc.sources.postgres.settings import PostgresSettings
from sparkcdc.sources.postgres.wire.connection import PgConnection
from sparkcdc.sources.postgres.wire.replication import publication_names, start_logical
from sparkcdc.sources.postgres.wire.stream import ReplicationStream

STREAM_SETTINGS = {"IntervalStyle": "iso_8601", "bytea_output": "hex"}  # pgoutput's text forms
STREAMING_VERSION = 140000  # pgoutput streams transactions in progress (protocol version 2)


class LogStream(Protocol):
    """A started stream of XLogData items (``b"w"``, walStart, walEnd, sendTime, payload:
    :data:`~sparkcdc.sources.postgres.wire.stream.XLOG_HEADER`), confirming only what
    :meth:`confirm` says."""

    @property
    def server_wal_end(self) -> int: ...

    def batches(
        self, wait: float | None = 1.0, idle: Callable[[], None] | None = None
    ) -> Iterator[list[bytes]]: ...

    def confirm(self, lsn: int) -> None: ...

    def send_status(self, force: bool = False) -> bool: ...

    def stop(self, timeout: float = 10.0) -> None: ...

    def close(self) -> None: ...


# (source, slot, publication, start LSN, confirmed LSN, status interval) -> a started stream
OpenStream = Callable[[SourceConfig, str, str, int, int, float], LogStream]


def pgoutput_options(publication: str, server_version_num: int) -> dict[str, str]:
    """START_REPLICATION's pgoutput options: protocol 2 with streaming on PostgreSQL 14+."""
    options = {"proto_version": "1", "publication_names": publication_names(publication)}
    if server_version_num >= STREAMING_VERSION:  # large transactions as they run
        options |= {"proto_version": "2", "streaming": "on"}
    return options


def open_wire_stream(
    source: SourceConfig,
    slot: str,
    publication: str,
    start: int,
    confirmed: int,
    status_interval: float,
) -> ReplicationStream:
    """``slot`` streamed from ``start`` on a replication connection of sparkcdc's wire client
    (reporting ``confirmed`` until told more)."""
    conn = PgConnection(
        source.host, source.port, source.user, source.password.reveal(),
        PostgresSettings.of(source).database, replication=True,
        connect_timeout=source.connect_timeout, settings=STREAM_SETTINGS, tls=source.tls,
    )  # fmt: skip
    try:
        options = pgoutput_options(publication, conn.server_version_num)
        return start_logical(
            conn, slot, start, options, status_interval=status_interval, confirmed=confirmed
        )
    except BaseException:
        conn.close()
        raise
