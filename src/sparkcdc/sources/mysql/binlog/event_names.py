"""Binlog event type codes by name (MySQL's ``binlog_event.h``, MariaDB's ``log_event.h``), for
sentences that name an event, and the advice when one cannot be decoded."""

from __future__ import annotations

NAMES = {
    1: "START_V3", 2: "QUERY", 3: "STOP", 4: "ROTATE", 5: "INTVAR", 6: "LOAD", 7: "SLAVE",
    8: "CREATE_FILE", 9: "APPEND_BLOCK", 10: "EXEC_LOAD", 11: "DELETE_FILE", 12: "NEW_LOAD",
    13: "RAND", 14: "USER_VAR", 15: "FORMAT_DESCRIPTION", 16: "XID", 17: "BEGIN_LOAD_QUERY",
    18: "EXECUTE_LOAD_QUERY", 19: "TABLE_MAP", 20: "PRE_GA_WRITE_ROWS",
    21: "PRE_GA_UPDATE_ROWS", 22: "PRE_GA_DELETE_ROWS", 23: "WRITE_ROWS_V1",
    24: "UPDATE_ROWS_V1", 25: "DELETE_ROWS_V1", 26: "INCIDENT", 27: "HEARTBEAT",
    28: "IGNORABLE", 29: "ROWS_QUERY", 30: "WRITE_ROWS", 31: "UPDATE_ROWS", 32: "DELETE_ROWS",
    33: "GTID", 34: "ANONYMOUS_GTID", 35: "PREVIOUS_GTIDS", 36: "TRANSACTION_CONTEXT",
    37: "VIEW_CHANGE", 38: "XA_PREPARE", 39: "PARTIAL_UPDATE_ROWS", 40: "TRANSACTION_PAYLOAD",
    41: "HEARTBEAT_V2", 42: "GTID_TAGGED", 160: "ANNOTATE_ROWS", 161: "BINLOG_CHECKPOINT",
    162: "GTID (MariaDB)", 163: "GTID_LIST", 164: "START_ENCRYPTION", 165: "QUERY_COMPRESSED",
    166: "WRITE_ROWS_COMPRESSED_V1", 167: "UPDATE_ROWS_COMPRESSED_V1",
    168: "DELETE_ROWS_COMPRESSED_V1", 169: "WRITE_ROWS_COMPRESSED",
    170: "UPDATE_ROWS_COMPRESSED", 171: "DELETE_ROWS_COMPRESSED",
}  # fmt: skip

ADVICE = (
    "the stream stops here rather than skip or guess its changes: look at the event with "
    "mysqlbinlog (or mariadb-binlog) --start-position on that file, and report it with the "
    "server's version if the server reads it"
)


def event_name(data: bytes) -> str:
    """``data``'s kind as a sentence names it: "WRITE_ROWS event" ("event of type 77" for a
    type nobody named, "event cut before its type" for fewer than 5 bytes)."""
    if len(data) < 5:
        return "event cut before its type"
    etype = data[4]
    name = NAMES.get(etype)
    return f"{name} event" if name else f"event of type {etype}"
