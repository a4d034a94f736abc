"""A snapshot pinned for every chunk read: a temporary slot's exported snapshot (PeerDB's and
dlt's way of copying PostgreSQL tables).

``CREATE_REPLICATION_SLOT … TEMPORARY LOGICAL pgoutput EXPORT_SNAPSHOT`` on a replication
connection returns the slot's consistent point ``c`` and the name of a snapshot that sees
exactly the transactions committed before ``c``. Other sessions take it with ``SET TRANSACTION
SNAPSHOT`` as long as the exporting connection stays open and idle, so chunks read in parallel
on Spark's tasks all show the tables as of ``c``, without locks and without a watermark window.
The pipeline's own slot, made before, holds the log from ``c`` on: the stream starts there.

The temporary slot goes with the connection. If the snapshot is lost before every chunk is read
(the driver crashed, the connection broke), the chunks left are read in a new pin at a later
point; the snapshot's hand-off then goes from each chunk's own point
(:mod:`sparkcdc.snapshot.handoff`). A read that finds it lost while the run goes on ends the run
with a sentence saying so (:func:`.copy.snapshot_gone`); the restart pins anew.
"""

from __future__ import annotations

import logging
import secrets

from sparkcdc.config.model import SourceConfig
from sparkcdc.sources.port import SnapshotPin
from sparkcdc.sources.postgres.offset import LsnOffset
from sparkcdc.sources.postgres.settings import PostgresSettings
from sparkcdc.sources.postgres.wire.connection import PgConnection
from sparkcdc.sources.postgres.wire.lsn import format_lsn
from sparkcdc.sources.postgres.wire.replication import create_logical_slot

log = logging.getLogger("sparkcdc.snapshot")


class ExportedSnapshot:
    """A pin (the port's :class:`~sparkcdc.sources.port.PinHolder` with :mod:`.pin_view`): the
    replication connection that created the temporary slot ``<slot>_pin_<random>``, kept open
    and idle until :meth:`close`."""

    def __init__(self, source: SourceConfig, slot: str) -> None:
        self._conn = PgConnection(
            source.host, source.port, source.user, source.password.reveal(),
            PostgresSettings.of(source).database, replication=True,
            connect_timeout=source.connect_timeout, tls=source.tls,
        )  # fmt: skip
        name = f"{slot[:48]}_pin_{secrets.token_hex(4)}"
        try:
            created = create_logical_slot(self._conn, name, snapshot="export", temporary=True)
        except BaseException:
            self._conn.close()
            raise
        assert created.snapshot_name is not None
        self.pin = SnapshotPin(created.snapshot_name, LsnOffset(created.consistent_point))
        log.info(
            "the snapshot's chunks are read as of %s (exported snapshot %s of slot %s)",
            format_lsn(created.consistent_point), created.snapshot_name, name,
        )  # fmt: skip

    def close(self) -> None:
        """Let the snapshot go (the temporary slot goes with the connection)."""
        self._conn.close()
