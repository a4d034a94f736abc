"""PostgreSQL's ErrorResponse turned into sparkcdc's one-sentence errors (see
:mod:`sparkcdc.core.errors`), by SQLSTATE ("PostgreSQL Error Codes") and, where one code covers
several cases, by words of the message: one table, :data:`RULES`, read by :func:`pg_error`.

Every error carries the server's fields: ``fields["sqlstate"]``, ``"server_message"``,
``"detail"``, ``"hint"``, ``"severity"``.
"""

from __future__ import annotations

from dataclasses import dataclass

from sparkcdc.core.errors import (
    ConnectionFailed,
    LogNotReady,
    LogPositionGone,
    MissingPrivilege,
    SourceError,
)
from sparkcdc.sources.postgres.wire.messages import ServerError


class PgError(SourceError):
    """An ErrorResponse no rule of :data:`RULES` names more precisely."""

    @property
    def sqlstate(self) -> str:
        return str(self.fields.get("sqlstate", ""))

    @property
    def server_message(self) -> str:
        return str(self.fields.get("server_message", ""))

    @property
    def detail(self) -> str:
        return str(self.fields.get("detail", ""))

    @property
    def hint(self) -> str:
        return str(self.fields.get("hint", ""))


@dataclass(frozen=True)
class Rule:
    """SQLSTATEs (empty: any), words one of which the message or detail holds (lower case;
    empty: any), the error class and its sentence (``str.format`` with ``where``, ``user``,
    ``database``, ``slot``, ``statement``, ``message``, ``detail``); ``tls_off``: only for a
    TCP connection that did not ask for TLS (``source.tls: disabled``)."""

    sqlstates: tuple[str, ...]
    words: tuple[str, ...]
    kind: type[SourceError]
    text: str
    tls_off: bool = False


# also the catalog's (libpq's) refusals, :func:`..server.connect.login_error`
CLEAR_TEXT_REFUSED = (
    "{where} has no pg_hba.conf line letting user '{user}' in without TLS ({message}), and "
    "source.tls is disabled; set source.tls to preferred or a stronger mode if the server takes "
    "the user over TLS (a hostssl line), else an administrator adds a host line for them."
)
CLIENT_CERTIFICATE = (
    "{where} asks user '{user}' for a client certificate ({message}); set source.tls's cert and "
    "key to a certificate signed by a CA the server trusts (its ssl_ca_file)."
)
_AFRESH = "drop the slot and start the pipeline afresh with a new snapshot"
_SLOT_STATE = "SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots"
_REFUSED = "{where} refused user '{user}' ({message}); check source.user and source.password."

# first match wins
RULES: tuple[Rule, ...] = (
    Rule(("28P01",), (), ConnectionFailed, _REFUSED),
    Rule(("42501", "28000"), ("replication role", "wal sender", "walsender"), MissingPrivilege,
         "user '{user}' may not open a replication connection to {where} ({message}); run "
         'ALTER ROLE "{user}" WITH REPLICATION (or connect as a role that has it).'),
    Rule(("28000",), ("no encryption",), ConnectionFailed, CLEAR_TEXT_REFUSED, tls_off=True),
    Rule(("28000",), ("client certificate",), ConnectionFailed, CLIENT_CERTIFICATE),
    Rule(("28000",), ("pg_hba.conf",), ConnectionFailed,
         "{where} has no pg_hba.conf line letting user '{user}' into database '{database}' "
         "from here ({message}); add one (method scram-sha-256) and reload the server."),
    Rule(("28000",), (), ConnectionFailed, _REFUSED),
    Rule(("3D000",), (), ConnectionFailed,
         "{where} has no database '{database}' ({message}); check source.database."),
    Rule(("53300",), ("max_wal_senders",), ConnectionFailed,
         "{where} has no free WAL sender ({message}); raise max_wal_senders (a restart) or end "
         "unused replication connections."),
    Rule(("53300",), (), ConnectionFailed,
         "{where} has no free connection ({message}); raise max_connections or close idle "
         "connections."),
    Rule(("57P01", "57P02", "57P05"), (), ConnectionFailed,
         "{where} ended the connection ({message}); reconnect once it accepts connections "
         "again (the log reader does so within source.reconnect_timeout)."),
    Rule(("57P03",), (), ConnectionFailed,
         "{where} is not accepting connections yet ({message}); wait until it has started, "
         "the connection will be retried."),
    Rule(("42704",), ("publication",), SourceError,
         "{where} has no such publication ({message}); create it (CREATE PUBLICATION ... FOR "
         "TABLE ...) in database '{database}' or fix the publication name."),
    Rule(("42704",), ("replication slot",), SourceError,
         'replication slot "{slot}" does not exist on {where}; create it (start the pipeline '
         "afresh) or fix the configured slot name."),
    Rule(("42710",), ("replication slot",), SourceError,
         'replication slot "{slot}" already exists on {where}; choose another slot name or drop '
         "it with SELECT pg_drop_replication_slot('{slot}')."),
    Rule(("55006",), (), SourceError,
         'replication slot "{slot}" on {where} is held by another process ({message}); stop '
         f"that reader or end it with {_SLOT_STATE} WHERE slot_name = '{{slot}}'."),
    Rule(("55000",), ("wal_level",), LogNotReady,
         "{where} does not write logical WAL ({message}); set wal_level = logical "
         "(ALTER SYSTEM SET wal_level = logical) and restart the server."),
    Rule(("55000",), ("max_replication_slots",), LogNotReady,
         "{where} allows no replication slots ({message}); set max_replication_slots to 1 or "
         "more and restart the server."),
    Rule(("55000",), ("invalidated",), LogPositionGone,
         'replication slot "{slot}" on {where} was invalidated and can no longer stream '
         f"({{detail}}); {_AFRESH}, and raise max_slot_wal_keep_size so its WAL is kept."),
    Rule((), ("has already been removed",), LogPositionGone,
         "{where} has already removed WAL that replication slot \"{slot}\" needs ({message}); "
         f"{_AFRESH}, and raise max_slot_wal_keep_size so its WAL is kept."),
    Rule(("53400",), ("replication slot",), SourceError,
         "{where} has no free replication slot ({message}); drop a slot no longer used (see "
         "pg_replication_slots) or raise max_replication_slots and restart the server."),
    Rule(("42501",), (), MissingPrivilege,
         "user '{user}' lacks a privilege on {where} for {statement} ({message}); grant it to "
         "the user."),
)  # fmt: skip

_FALLBACK = "{where} rejected {statement} ({message}{hint}); fix what the server names."


def pg_error(
    error: ServerError,
    where: str,
    *,
    user: str = "",
    database: str = "",
    slot: str = "",
    statement: str = "",
    tls_off: bool = False,
) -> SourceError:
    """The sparkcdc error for ``error`` (from ``where``, e.g. ``PostgreSQL at host:5432``; on a
    TCP connection that did not ask for TLS: ``tls_off``): the first rule of :data:`RULES` that
    matches, else a :class:`PgError`."""
    found = f"{error.message} {error.detail}".lower()
    rule = next(
        (
            r
            for r in RULES
            if (not r.sqlstates or error.sqlstate in r.sqlstates)
            and (not r.words or any(w in found for w in r.words))
            and (tls_off or not r.tls_off)
        ),
        None,
    )
    values = {
        "where": where,
        "user": user,
        "database": database,
        "slot": slot,
        "statement": f"`{statement}`" if statement else "the request",
        "message": error.message.rstrip("."),
        "detail": (error.detail or error.message).rstrip("."),
        "hint": f"; hint: {error.hint.rstrip('.')}" if error.hint else "",
    }
    fields = {
        "sqlstate": error.sqlstate,
        "server_message": error.message,
        "detail": error.detail,
        "hint": error.hint,
        "severity": error.severity,
    }
    if rule is None:
        return PgError(_FALLBACK.format(**values), **fields)
    return rule.kind(rule.text.format(**values), **fields)
