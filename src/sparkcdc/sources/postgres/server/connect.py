"""Ordinary client connections to PostgreSQL (psycopg2), their refusals as one sentence each.

:func:`connect` opens an autocommit :class:`Session` to ``source.database`` with fixed session
settings (:data:`SESSION_OPTIONS`, sent in the start-up packet, so they cost no round trip):

* ``TimeZone=UTC``: timestamptz text in UTC, as on the replication connection;
* ``DateStyle=ISO``: ``2024-01-31 12:00:00``, the style sparkcdc's parsers read;
* ``IntervalStyle=iso_8601``: ``P1Y2M3DT4H``, the form sparkcdc keeps intervals in
  (:mod:`..pgoutput.literals`), so a snapshot read and the log give one text; psycopg2 cannot
  parse that style, so the session returns intervals (and their arrays) as that text;
* ``extra_float_digits=3``: the shortest exact float text (PostgreSQL 12+ gives it anyway);
* ``bytea_output=hex``: one bytea form; and ``client_encoding=UTF8``.

A refused login becomes a :class:`~sparkcdc.core.errors.ConnectionFailed` naming the setting to
fix (``source.host``/``port``, ``source.user``/``password``, ``source.database``, ``source.tls``)
or the ``pg_hba.conf`` line an administrator adds. libpq reports no SQLSTATE for a refused
login, so the server's (English) words are matched.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import ssl
from collections.abc import Callable, Sequence
from typing import Any, Self, TypeVar

import psycopg2
import psycopg2.errors
import psycopg2.extensions

from sparkcdc.config.model import SourceConfig, TlsConfig
from sparkcdc.core.errors import (
    ConfigError,
    ConnectionFailed,
    MissingPrivilege,
    SourceError,
    SparkCDCError,
)
from sparkcdc.core.table_name import TableName
from sparkcdc.sources.postgres.settings import PostgresSettings
from sparkcdc.sources.postgres.wire.connection import SERVER_TLS_SETTINGS
from sparkcdc.sources.postgres.wire.errors import CLEAR_TEXT_REFUSED, CLIENT_CERTIFICATE
from sparkcdc.sources.tls import handshake_failed, not_encrypted

Row = tuple[Any, ...]
T = TypeVar("T")

SESSION_OPTIONS: dict[str, str] = {
    "TimeZone": "UTC",
    "DateStyle": "ISO",
    "IntervalStyle": "iso_8601",
    "extra_float_digits": "3",
    "bytea_output": "hex",
}
SSL_MODES = {
    "disabled": "disable",
    "preferred": "prefer",
    "required": "require",
    "verify-ca": "verify-ca",
    "verify-identity": "verify-full",
}
INTERVAL_TEXT = psycopg2.extensions.new_type((1186,), "INTERVAL_ISO", lambda value, _: value)
INTERVAL_ARRAY_TEXT = psycopg2.extensions.new_array_type((1187,), "INTERVAL_ISO[]", INTERVAL_TEXT)
_PLAIN = re.compile(r"[a-z_][a-z0-9_$]*")
_CLIENT_HOST = re.compile(r'for host "([^"]+)"')


class Session:
    """One autocommit client connection (also a context manager); :meth:`query` turns refusals
    into sparkcdc errors and reopens a lost connection (:func:`connection_lost`) once."""

    def __init__(
        self, source: SourceConfig, database: str, application_name: str = "sparkcdc"
    ) -> None:
        self.host, self.port, self.user = source.host, int(source.port), source.user
        self.database, self.application_name = database, application_name
        self._source = source
        self._conn = self._open()
        self.server_version: int = int(self._conn.server_version)  # 150004 for 15.4
        self._keywords: frozenset[str] | None = None

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def _open(self) -> Any:
        source = self._source
        try:
            params: dict[str, Any] = dict(
                host=source.host,
                port=source.port,
                user=source.user,
                password=source.password.reveal(),
                dbname=self.database,
                application_name=self.application_name,
                client_encoding="UTF8",
                connect_timeout=max(1, math.ceil(source.connect_timeout)),
                options=" ".join(f"-c {k}={v}" for k, v in SESSION_OPTIONS.items()),
                **tls_options(source.tls),
            )
            conn = psycopg2.connect(**params)
        except psycopg2.OperationalError as exc:
            raise login_error(str(exc), source, self.database) from exc
        conn.autocommit = True
        for caster in (INTERVAL_TEXT, INTERVAL_ARRAY_TEXT):
            psycopg2.extensions.register_type(caster, conn)
        return conn

    def query(self, sql: str, args: Sequence[object] | None = None) -> list[Row]:
        """Run one statement; its rows (none for a statement without a result). A refusal is
        a sparkcdc error carrying the server's ``sqlstate``."""

        def fetch(cur: Any) -> list[Row]:
            cur.execute(sql, args)
            return list(cur.fetchall()) if cur.description is not None else []

        return self._with_cursor(sql, fetch)

    def _with_cursor(self, sql: str, work: Callable[[Any], T]) -> T:
        """``work(cursor)`` for the statement ``sql``; a refusal as a sparkcdc error carrying
        the server's ``sqlstate``; a lost connection reopened once (ConnectionFailed if the
        statement fails again so)."""
        for attempt in (0, 1):
            try:
                with self._conn.cursor() as cur:
                    return work(cur)
            except psycopg2.Error as exc:
                lost = connection_lost(self._conn, exc)
                if lost and attempt == 0:
                    self.reopen()
                    continue
                raise self._refusal(sql, exc, lost) from exc
        raise AssertionError("unreachable")

    def reopen(self) -> None:
        """A new connection in place of this one (which the server may have ended)."""
        self.close()
        self._conn = self._open()

    def _refusal(self, sql: str, exc: psycopg2.Error, lost: bool) -> SourceError:
        fields = {"host": self.host, "port": self.port, "sqlstate": exc.pgcode or ""}
        if lost:
            return ConnectionFailed(
                f"The connection to PostgreSQL at {self.address} broke ({_words(exc)}); check "
                "that the server is running and try again.",
                **fields,
            )
        if isinstance(exc, psycopg2.errors.InsufficientPrivilege):
            return MissingPrivilege(
                f"User '{self.user}' may not run \"{_short(sql)}\" on {self.address} "
                f"({_words(exc)}); grant the privilege it names to {self.ident(self.user)}.",
                user=self.user,
                **fields,
            )
        return SourceError(
            f'"{_short(sql)}" failed on PostgreSQL at {self.address} ({_words(exc)}); fix the '
            "cause it names and try again.",
            detail=_words(exc),
            **fields,
        )

    def notifications(self) -> list[str]:
        """The payloads of the notifications received since the last call (after LISTEN)."""
        self._conn.poll()
        found = [str(n.payload) for n in self._conn.notifies]
        self._conn.notifies.clear()
        return found

    def ident(self, name: str) -> str:
        """``name`` as SQL writes it: bare if PostgreSQL would keep it as it is, else quoted."""
        if self._keywords is None:
            rows = self.query("SELECT word FROM pg_get_keywords() WHERE catcode <> 'U'")
            self._keywords = frozenset(str(r[0]) for r in rows)
        if _PLAIN.fullmatch(name) and name not in self._keywords:
            return name
        return '"' + name.replace('"', '""') + '"'

    def qualified(self, schema: str, table: str) -> str:
        """``schema.table`` as SQL writes it."""
        return TableName(schema, table).sql(self.ident)

    def close(self) -> None:
        with contextlib.suppress(psycopg2.Error):
            self._conn.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def connect(source: SourceConfig, database: str | None = None) -> Session:
    """A session to ``database`` (default: the source's ``source.database``)."""
    return Session(source, database or PostgresSettings.of(source).database)


def connection_lost(conn: psycopg2.extensions.connection, exc: psycopg2.Error) -> bool:
    """Whether ``conn`` is gone after a statement failed with ``exc``. libpq mostly marks such
    a connection bad and psycopg2 closes it, on a server's FATAL (57P01 of
    ``pg_terminate_backend`` or a shutdown) or on its own "server closed the connection
    unexpectedly"; but a reset (RST) met while sending is reported as a failed statement on a
    connection libpq still calls open. An error without SQLSTATE is libpq's or psycopg2's own,
    not the server's answer: one ``SELECT 1`` then tells a gone connection (it fails, and
    psycopg2 closes it) from a statement psycopg2 refused (it passes)."""
    if conn.closed:
        return True
    if exc.pgcode is not None:
        return False
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT 1")
    except psycopg2.Error:
        return True
    return False


def tls_options(tls: TlsConfig) -> dict[str, str]:
    """libpq's ``sslmode`` and certificate options for ``source.tls``. The CA goes to the
    verifying modes only: libpq's ``require`` with a root certificate verifies it, where
    ``required`` trusts any certificate, as on the replication connection."""
    options = {"sslmode": SSL_MODES.get(tls.mode, "prefer")}
    if tls.verifies:
        options["sslrootcert"] = tls.ca or system_authorities()
    if tls.cert:
        options["sslcert"] = tls.cert
    if tls.key:
        options["sslkey"] = tls.key
    return options


def system_authorities() -> str:
    """The system's certificate authorities as libpq's ``sslrootcert``: the file Python's ssl
    reads them from (libpq refuses its own word for them, ``system``, with ``verify-ca``:
    ``verify-ca`` without ``ca`` trusts what the replication connection trusts); ``system``
    where there is no such file."""
    cafile = ssl.get_default_verify_paths().cafile
    return cafile if cafile and os.path.isfile(cafile) else "system"


def login_error(text: str, source: SourceConfig, database: str) -> SparkCDCError:
    """The sentence for libpq's message ``text`` about a failed login; a database the server
    does not have is the pipeline file's error (ConfigError naming ``source.database``)."""
    where, user = f"PostgreSQL at {source.host}:{source.port}", source.user
    detail = _libpq_words(text)
    lower = detail.lower()
    fields = {"host": source.host, "port": source.port, "user": user, "database": database}
    if "password authentication failed" in lower or "no password supplied" in lower:
        message = (
            f"{where} refused user '{user}' (password authentication failed; PostgreSQL also "
            "says so for a role that does not exist); check source.user and source.password."
        )
    elif "does not exist" in lower and "role" in lower:
        message = (
            f"{where} has no role '{user}'; check source.user, or as an administrator run "
            f"CREATE ROLE \"{user}\" LOGIN REPLICATION PASSWORD '...'."
        )
    elif "not permitted to log in" in lower:
        message = (
            f"Role '{user}' may not log in to {where}; as an administrator run "
            f'ALTER ROLE "{user}" LOGIN, or check source.user.'
        )
    elif "database" in lower and "does not exist" in lower:
        return ConfigError(
            f"{where} has no database '{database}'; check source.database.",
            key="source.database", **fields,
        )  # fmt: skip
    elif (
        "no pg_hba.conf entry" in lower
        and "no encryption" in lower
        and source.tls.mode == "disabled"
    ):
        message = CLEAR_TEXT_REFUSED.format(where=where, user=user, message=detail)
    elif "no pg_hba.conf entry" in lower:
        found = _CLIENT_HOST.search(detail)
        client = found[1] if found else "<this host's address>"
        message = (
            f"{where} has no pg_hba.conf line letting user '{user}' into database "
            f"'{database}' from {client}; an administrator adds the line "
            f"'host {database} {user} {client}/32 scram-sha-256' (hostssl for TLS only) to "
            "pg_hba.conf and runs SELECT pg_reload_conf()."
        )
    elif "pg_hba.conf rejects" in lower:
        message = (
            f"{where} rejects user '{user}' for database '{database}' by a pg_hba.conf reject "
            "line; an administrator puts a host line for them above it and runs SELECT "
            "pg_reload_conf()."
        )
    else:
        message = _other_login_error(where, detail, source)
    return ConnectionFailed(message, **fields)


def _other_login_error(where: str, detail: str, source: SourceConfig) -> str:
    lower = detail.lower()
    if "does not support ssl" in lower:
        address = f"{source.host}:{source.port}"
        return not_encrypted(address, source.tls, SERVER_TLS_SETTINGS).message
    if "client certificate" in lower:
        return CLIENT_CERTIFICATE.format(where=where, user=source.user, message=detail)
    if "timeout expired" in lower:
        return (
            f"{where} did not answer within {source.connect_timeout:g}s; check source.host, "
            "source.port and any firewall in between."
        )
    if "ssl" in lower or "certificate" in lower:
        return handshake_failed(where, detail).message
    if "too many" in lower or "connection slots" in lower:
        return (
            f"{where} has no free connection ({detail}); raise max_connections or close idle "
            "connections."
        )
    if "starting up" in lower or "shutting down" in lower or "recovery mode" in lower:
        return f"{where} is not accepting connections now ({detail}); try again once it runs."
    return (
        f"Cannot reach {where} ({detail}); check source.host and source.port and that the "
        "server is running and listens on TCP (listen_addresses)."
    )


def _libpq_words(text: str) -> str:
    """libpq's message without its ``connection to server at … failed:`` and ``FATAL:``; of a
    host name's several addresses tried, the last one's (``localhost``: ``::1`` refused, then
    ``127.0.0.1`` answered)."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    attempts = [line for line in lines if line.startswith("connection to server")]
    first = attempts[-1] if attempts else lines[0] if lines else text.strip()
    first = re.sub(r"^connection to server (at|on) .*? failed:\s*", "", first)
    return re.sub(r"^(FATAL|ERROR):\s*", "", first).rstrip(".") or "no reason given"


def _words(exc: psycopg2.Error) -> str:
    """The server's own words for an error (its first line)."""
    primary = getattr(getattr(exc, "diag", None), "message_primary", None)
    return str(primary or _libpq_words(str(exc))).rstrip(".")


def _short(sql: str) -> str:
    """One line of ``sql`` for a message."""
    flat = " ".join(sql.split())
    return flat if len(flat) <= 160 else flat[:157] + "..."
