"""One ordinary client connection to a MySQL/MariaDB server (PyMySQL), its refusals as sentences.

Every question the catalog and the chunk dialect ask goes through :meth:`ServerConnection.query`:
a lost connection is reopened once, and a refusal becomes the :mod:`sparkcdc.core.errors`
sentence that names the server and what to change on it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any, Self

import pymysql

from sparkcdc.config.model import SourceConfig, TlsConfig
from sparkcdc.config.secret import Secret
from sparkcdc.core.errors import ConnectionFailed, LogNotReady, MissingPrivilege, SourceError
from sparkcdc.sources.mysql.server.connect import connect
from sparkcdc.sources.mysql.server.tls import pymysql_options
from sparkcdc.sources.tls import handshake_failed, not_encrypted


class ServerConnection:
    """A client connection to one server (also a context manager)."""

    @classmethod
    def of(cls, source: SourceConfig) -> Self:
        return cls(
            source.host, source.port, source.user, source.password, source.connect_timeout,
            source.tls,
        )  # fmt: skip

    def __init__(
        self,
        host: str,
        port: int,
        user: str,
        password: Secret,
        connect_timeout: float = 10.0,
        tls: TlsConfig | None = None,
    ) -> None:
        self.host = host
        self.port = int(port)
        self.user = user
        self.connect_timeout = float(connect_timeout)
        self.tls = tls or TlsConfig()
        self._password = Secret.of(password)
        self._conn = self._connect()
        self.version = str(self.query("SELECT VERSION()")[0][0])

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def _connect(self) -> pymysql.Connection:
        try:
            conn = connect(
                host=self.host,
                port=self.port,
                user=self.user,
                password=self._password.reveal(),
                connect_timeout=self.connect_timeout,
                autocommit=True,
                charset="utf8mb4",
                **pymysql_options(self.tls),
            )
        except pymysql.err.OperationalError as exc:
            raise self._connection_error(exc) from exc
        if self.tls.required and not conn.encrypted:
            conn.close()
            raise not_encrypted(self.address, self.tls)
        self.encrypted = conn.encrypted
        return conn

    def _connection_error(self, exc: pymysql.err.MySQLError) -> ConnectionFailed:
        code = exc.args[0] if exc.args else 0
        detail = _detail(exc)
        fields = {"host": self.host, "port": self.port, "user": self.user, "code": code}
        if code in (1045, 1698):
            return ConnectionFailed(
                f"The server at {self.address} refused user '{self.user}' (access denied); "
                "check source.user and source.password"
                + (
                    " (a server that requires TLS refuses clear text: source.tls)."
                    if self.tls.mode == "disabled"
                    else "."
                ),
                **fields,
            )
        if any(word in detail.lower() for word in ("ssl", "certificate", "tls")):
            return handshake_failed(self.address, detail, **fields)
        if "timed out" in detail.lower():
            return ConnectionFailed(
                f"The server at {self.address} did not answer within "
                f"{self.connect_timeout:g}s; check source.host, source.port and any firewall "
                "in between.",
                **fields,
            )
        return ConnectionFailed(
            f"Cannot connect to {self.address} as user '{self.user}' ({detail}); check "
            "source.host and source.port and that the server is running and accepts TCP "
            "connections.",
            **fields,
        )

    def query(self, sql: str, args: Sequence[Any] | None = None) -> list[tuple[Any, ...]]:
        """Run one query; a lost connection is reopened once, refusals become sparkcdc errors."""
        for attempt in (0, 1):
            try:
                with self._conn.cursor() as cur:
                    cur.execute(sql, args)
                    return list(cur.fetchall())
            except pymysql.err.MySQLError as exc:
                code = exc.args[0] if exc.args and isinstance(exc.args[0], int) else 0
                if code in (2006, 2013, 0) and attempt == 0:
                    self._conn = self._connect()
                    continue
                if code == 1381:
                    raise binlog_off(self.address) from exc
                if code in (1227, 1142, 1143, 1044):
                    raise MissingPrivilege(
                        f"User '{self.user}' may not run \"{sql}\" on {self.address} "
                        f"({_detail(exc)}); grant the privilege it names to '{self.user}'.",
                        host=self.host,
                        port=self.port,
                        user=self.user,
                    ) from exc
                if code >= 2000:
                    raise self._connection_error(exc) from exc
                raise SourceError(
                    f'The server at {self.address} refused "{sql}" ({_detail(exc)}); fix the '
                    "cause it names and try again.",
                    host=self.host,
                    port=self.port,
                    detail=_detail(exc),
                ) from exc
        raise AssertionError("unreachable")

    def close(self) -> None:
        with contextlib.suppress(pymysql.err.Error):
            self._conn.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def binlog_off(address: str) -> LogNotReady:
    return LogNotReady(
        f"The binary log is off on {address}; start the server with --log-bin=mysql-bin and a "
        "server-id.",
        variable="log_bin",
        value="OFF",
        expected="ON",
    )


def _detail(exc: pymysql.err.MySQLError) -> str:
    """The server's own words for an error."""
    return str(exc.args[1]) if len(exc.args) > 1 else str(exc)
