"""The low watermark of PostgreSQL: a WAL position every transaction before which is visible
to any read started afterwards.

A transaction's commit record enters the WAL before the transaction becomes visible:
``RecordTransactionCommit`` inserts the record, flushes it, sets the commit log and waits for
synchronous standbys, and only then does ``ProcArrayEndTransaction`` take the transaction out
of the running ones, which new snapshots then see as committed. So
``pg_current_wal_insert_lsn()`` can be past the commit of a transaction a read started now does
not see: for an instant, or for as long as a synchronous standby lags. :func:`visible_lsn`::

    L = pg_current_wal_insert_lsn()          every commit so far has its record before L
    R = xids whose ExclusiveLock is held     pg_locks, read after L: a transaction locks its
                                             xid when it gets it (before it writes anything)
                                             and keeps the lock until after
                                             ProcArrayEndTransaction (prepared ones too)
        minus those of idle backends         pg_stat_activity, read after L: a backend idle
                                             (in a transaction) is not committing, so its
                                             commit, if any, comes after L
    wait until no xid of R is locked         poll, backing off
    return L

After the wait every transaction whose commit record lies before L has left the running ones,
so every snapshot taken later sees it. Two shortcuts are not enough:
``pg_current_snapshot()``'s ``xip`` leaves out running xids at or past its ``xmax`` (one past
the last *completed* xid, which a committing transaction may be past), and
``pg_xact_status()`` says 'in progress' until the very end, so it cannot tell a committing
transaction from a long one. The price: a statement running at L (busy, or committing) is
waited for however long it runs, and so are prepared transactions and the backends of roles
whose state the user may not see (without pg_read_all_stats): WARN_AFTER seconds into a wait a
warning names them.
"""

from __future__ import annotations

import logging
import time

from sparkcdc.sources.postgres.server.connect import Session
from sparkcdc.sources.postgres.wire.lsn import parse_lsn

log = logging.getLogger("sparkcdc.source")

WARN_AFTER = 10.0  # seconds a wait goes on before a warning names what it waits for
_INSERT_SQL = "SELECT pg_current_wal_insert_lsn()::text"
_XID_LOCKS = "l.locktype = 'transactionid' AND l.mode = 'ExclusiveLock' AND l.granted"
_RUNNING_SQL = (
    "SELECT l.transactionid::text, l.pid, a.state FROM pg_locks l"
    f" LEFT JOIN pg_stat_activity a ON a.pid = l.pid WHERE {_XID_LOCKS}"
)
_HELD_SQL = (
    "SELECT DISTINCT l.transactionid::text FROM pg_locks l"
    f" WHERE {_XID_LOCKS} AND l.transactionid::text = ANY(%s)"
)
IDLE = frozenset({"idle", "idle in transaction", "idle in transaction (aborted)"})


def visible_lsn(session: Session) -> int:
    """The current WAL insert position, returned once every transaction that could have
    committed before it is visible (see the module docstring)."""
    lsn = parse_lsn(str(session.query(_INSERT_SQL)[0][0]))
    busy = {str(xid): pid for xid, pid, state in session.query(_RUNNING_SQL) if state not in IDLE}
    pending = set(busy)
    started, delay, warned = time.monotonic(), 0.0005, False
    while pending:
        time.sleep(delay)
        delay = min(2 * delay, 0.05)
        held = session.query(_HELD_SQL, (sorted(pending),))
        pending &= {str(r[0]) for r in held}
        if pending and not warned and time.monotonic() - started > WARN_AFTER:
            warned = True
            log.warning(
                "the snapshot's watermark on %s waits for transactions running since it was "
                "taken to end (xid %s, backend pid %s); a long statement or a prepared "
                "transaction holds it up",
                session.address,
                ", ".join(sorted(pending)),
                ", ".join(str(busy[x]) for x in sorted(pending)),
            )
    return lsn
