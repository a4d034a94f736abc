"""The binlog event types the log reader skips, by a written list, and the sentence that stops
the stream at any other type it does not decode.

The dispatch (:mod:`.dispatch`) decodes what a row-based change stream is made of: ROTATE,
FORMAT_DESCRIPTION, heartbeats, both flavours' GTID events (MySQL's tagged ones too),
MySQL's PREVIOUS_GTIDS, TABLE_MAP, rows events (MySQL's partial JSON updates too), XID, QUERY
(transaction boundaries and DDL), MariaDB's compressed query and rows events and MySQL's
compressed transactions. Everything
else is either in :data:`SKIPPED`, because it carries no row change in a ROW-format binlog, or
stops the stream: an event nobody listed may carry changes, and skipping it would lose them
without a word.
"""

from __future__ import annotations

from sparkcdc.core.errors import SourceError

SKIPPED = {
    3: "STOP (the server stopped)",
    5: "INTVAR (a statement's auto-increment or insert id; rows carry their values)",
    13: "RAND (a statement's random seed)",
    14: "USER_VAR (a statement's user variable)",
    28: "IGNORABLE (flagged safe to ignore by the server)",
    29: "ROWS_QUERY (the statement text of the rows events that follow)",
    36: "TRANSACTION_CONTEXT (group replication certification)",
    37: "VIEW_CHANGE (group replication membership)",
    160: "ANNOTATE_ROWS (the statement text of the rows events that follow)",
    161: "BINLOG_CHECKPOINT (crash recovery bookkeeping)",
    163: "GTID_LIST (the GTID position at the start of a file)",
    164: "START_ENCRYPTION (the server decrypts before sending)",
}
"""Event types without row changes in a ROW-format binlog: type -> what it is."""

_ADVICE = {
    **dict.fromkeys(
        (6, 8, 9, 10, 11, 12, 17, 18),
        "a statement-based LOAD DATA, whose rows are not in the binlog; set binlog_format=ROW "
        "on the server",
    ),
    **dict.fromkeys(
        (20, 21, 22), "rows events of MySQL 5.1.0-5.1.15, whose layout sparkcdc does not read"
    ),
    26: "the server recorded an incident (changes may be missing from its binlog); check it, "
    "then take a new snapshot (startup: initial)",
    38: "an XA PREPARE, whose changes sparkcdc does not deliver",
}


def unknown_event_error(event_type: int, file: str, pos: int) -> SourceError:
    """The sentence for an event of ``event_type`` at ``file:pos`` that is neither decoded nor
    in :data:`SKIPPED`."""
    why = _ADVICE.get(event_type, "a type sparkcdc does not know")
    return SourceError(
        f"the binlog holds an event of type {event_type} at {file}:{pos} that sparkcdc does not "
        f"decode ({why}); the stream stops here rather than skip changes it may carry.",
        event_type=event_type,
        file=file,
        pos=pos,
    )
