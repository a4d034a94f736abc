"""A pinned snapshot that outlives the process that asked for it: the batch read's.

``spark.read.format("postgres-cdc")`` plans its tasks in a Python process that ends before the
tasks run, and an exported snapshot dies with the connection that exported it. So the planner
starts this module as a process of its own (a new session, so the planner's end does not take
it along). It exports the snapshot (:class:`~.export.ExportedSnapshot`), writes the pin as one
JSON line, and holds the snapshot until each of the ``readers`` tasks has said it is done
(``NOTIFY`` on the pin's channel, :func:`release`), or until nothing has happened for
ABANDONED_SECONDS: no reader connected (``pg_stat_activity``, by the sessions'
``application_name``, :func:`.copy.reader_name`) and none done (the job failed or was
cancelled). Both go through the database, so it works wherever Spark runs the tasks.
"""

from __future__ import annotations

import json
import logging
import os
import pickle
import re
import select
import subprocess
import sys
import time

from sparkcdc.config.model import SourceConfig
from sparkcdc.core.errors import SourceError, SparkCDCError
from sparkcdc.sources.port import SnapshotPin
from sparkcdc.sources.postgres.chunks.copy import reader_name
from sparkcdc.sources.postgres.chunks.export import ExportedSnapshot
from sparkcdc.sources.postgres.offset import LsnOffset
from sparkcdc.sources.postgres.server.connect import Session
from sparkcdc.sources.postgres.settings import PostgresSettings
from sparkcdc.sources.postgres.wire.lsn import format_lsn, parse_lsn

log = logging.getLogger("sparkcdc.snapshot")

ABANDONED_SECONDS = 600.0
_READERS_SQL = "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s"


def channel(token: str) -> str:
    """The notification channel of the pin ``token`` (a plain lower-case identifier)."""
    return "sparkcdc_pin_" + re.sub(r"[^0-9a-z]", "_", token.lower())


def hold_for_readers(source: SourceConfig, slot: str, readers: int) -> SnapshotPin:
    """Start the holder process for ``source`` and return its pin (its error as ours)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", __name__, slot, str(readers)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        start_new_session=True,
    )  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(pickle.dumps(source))
    proc.stdin.close()
    ready, _, _ = select.select([proc.stdout], [], [], source.connect_timeout + 60)
    line = proc.stdout.readline() if ready else b""
    proc.stdout.close()
    if not line:
        proc.kill()
        raise SourceError(
            f"no snapshot could be exported on {source.host}:{source.port} for the batch read "
            "(its holder process gave no answer); check the server's log."
        )
    answer = json.loads(line)
    if "error" in answer:
        raise SourceError(str(answer["error"]))
    return SnapshotPin(str(answer["token"]), LsnOffset(parse_lsn(str(answer["lsn"]))))


def release(session: Session, pin: SnapshotPin, reader: int) -> None:
    """Tell the pin's holder that the reader numbered ``reader`` is done with it."""
    session.query("SELECT pg_notify(%s, %s)", (channel(pin.token), str(reader)))


def hold(session: Session, token: str, readers: int) -> None:
    """Return once every reader is done, or nothing happened for ABANDONED_SECONDS."""
    name = reader_name(token)
    done: set[str] = set()
    last_activity = time.monotonic()
    while len(done) < readers:
        now = time.monotonic()
        fresh = set(session.notifications()) - done
        if fresh or int(session.query(_READERS_SQL, (name,))[0][0]):
            done |= fresh
            last_activity = now
        elif now - last_activity > ABANDONED_SECONDS:
            log.warning("snapshot %s: %d of %d readers done, none seen since; let go",
                        token, len(done), readers)  # fmt: skip
            return
        time.sleep(0.2)


def main(slot: str, readers: int) -> int:
    """The holder process: the source from stdin (pickled), the pin or the error to stdout."""
    source: SourceConfig = pickle.loads(sys.stdin.buffer.read())
    try:
        session = Session(source, PostgresSettings.of(source).database)
        exported = ExportedSnapshot(source, slot)
    except SparkCDCError as exc:
        print(json.dumps({"error": str(exc)}), flush=True)
        return 1
    token = exported.pin.token
    try:
        session.query(f"LISTEN {channel(token)}")  # before any reader can be done
        point = LsnOffset.of(exported.pin.point).lsn
        print(json.dumps({"token": token, "lsn": format_lsn(point)}), flush=True)
        os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
        hold(session, token, readers)
    finally:
        exported.close()
        session.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], int(sys.argv[2])))
