"""One PostgreSQL session spoken directly on a socket (PostgreSQL docs, "Frontend/Backend
Protocol": "Start-up", "Simple Query", "Termination"): the StartupMessage, the password login
(:mod:`.auth`), the ParameterStatus/BackendKeyData the server reports until ReadyForQuery, then
simple-protocol queries whose rows come back as text. With ``replication=True`` the startup asks
for a logical replication walsender (``replication=database``), which also runs SQL and takes
the Streaming Replication Protocol's commands (:mod:`.replication`).

TLS ("SSL Session Encryption"), as ``source.tls`` says (:mod:`sparkcdc.sources.tls`): before the
StartupMessage an SSLRequest, which the server answers with one byte, ``S`` (the TLS handshake
follows on the socket, then everything else goes inside TLS: :class:`~.tls.TlsSocket`) or
``N`` (no TLS: ``preferred`` goes on in clear text, the modes that require TLS stop). That byte
is read alone from the socket, so nothing the server sent before the handshake can be taken for
data sent inside it.
As libpq does, a unix-domain socket (``host`` a folder) is never encrypted.
"""

from __future__ import annotations

import contextlib
import re
import socket
import ssl
import struct
from collections.abc import Mapping

from sparkcdc.config.model import TlsConfig
from sparkcdc.core.errors import ConnectionFailed, SourceError
from sparkcdc.sources.postgres.wire import messages as m
from sparkcdc.sources.postgres.wire.auth import SCRAM_SHA_256, ScramSha256, md5_password
from sparkcdc.sources.postgres.wire.errors import pg_error
from sparkcdc.sources.postgres.wire.tls import TlsSocket
from sparkcdc.sources.tls import context, handshake_failed, not_encrypted

Row = tuple[str | None, ...]

# session settings sent in the StartupMessage: fixed text forms for the values the server
# formats (query results and pgoutput's tuples alike); ``settings=`` adds to / overrides them
DEFAULT_SETTINGS: dict[str, str] = {
    "client_encoding": "UTF8",
    "DateStyle": "ISO",
    "TimeZone": "UTC",
    "extra_float_digits": "3",
}

_AUTH_OK, _AUTH_CLEARTEXT, _AUTH_MD5 = 0, 3, 5
_AUTH_SASL, _AUTH_SASL_CONTINUE, _AUTH_SASL_FINAL = 10, 11, 12
_AUTH_NAMES = {2: "Kerberos V5", 6: "SCM credential", 7: "GSSAPI", 9: "SSPI"}
_I32 = struct.Struct(">i")
SSL_REQUEST = struct.pack(">ii", 8, 80877103)  # length, the SSLRequest code
SERVER_TLS_SETTINGS = "ssl = on, ssl_cert_file, ssl_key_file"  # postgresql.conf's TLS


class PgConnection:
    """A logged-in session; ``parameters`` holds what the server reported (server_version,
    integer_datetimes, server_encoding, ...), ``status`` the last ReadyForQuery state (``I``
    idle, ``T`` in a transaction, ``E`` in a failed one); ``tls_off``: a TCP session that did
    not ask for TLS (``source.tls: disabled``)."""

    tls_off = False

    def __init__(
        self,
        host: str,
        port: int,
        user: str,
        password: str,
        database: str,
        *,
        replication: bool = False,
        application_name: str = "sparkcdc",
        connect_timeout: float = 10.0,
        settings: Mapping[str, str] | None = None,
        tls: TlsConfig | None = None,
    ) -> None:
        self.address = f"{host}:{port}"
        self.where = f"PostgreSQL at {self.address}"
        self.user, self.database, self.replication = user, database, replication
        self.parameters: dict[str, str] = {}
        self.columns: list[tuple[str, int]] = []  # the last result's (name, type OID)
        self.backend_pid, self.cancel_key, self.status = 0, b"", "I"
        tls = tls or TlsConfig()
        self.tls_off = tls.mode == "disabled" and not host.startswith("/")
        raw = _open_socket(host, port, connect_timeout, self.where)
        self.sock: socket.socket | TlsSocket = raw
        try:
            if not host.startswith("/"):
                self._start_tls(raw, tls, host)
            self.reader = m.MessageReader(self.sock, self.where)
            startup = {"user": user, "database": database, "application_name": application_name}
            if replication:
                startup["replication"] = "database"
            self.send(m.startup_message({**startup, **DEFAULT_SETTINGS, **(settings or {})}))
            self._login(password)
            self._until_ready()
        except ConnectionFailed as exc:
            self._close_socket()
            if isinstance(exc.__cause__, ssl.SSLError):  # the server refused our certificate
                raise handshake_failed(self.where, exc.__cause__) from exc
            if isinstance(exc.__cause__, TimeoutError):
                raise ConnectionFailed(
                    f"{self.where} did not answer within {connect_timeout:g}s; check "
                    "source.host, source.port and any firewall in between.",
                    where=self.where,
                ) from exc
            raise
        except BaseException:
            self._close_socket()
            raise
        self.sock.settimeout(None)

    @property
    def encrypted(self) -> bool:
        """Whether the session runs inside TLS."""
        return isinstance(self.sock, TlsSocket)

    def _start_tls(self, raw: socket.socket, tls: TlsConfig, host: str) -> None:
        """SSLRequest and, on ``S``, the TLS handshake (see the module docstring)."""
        ctx = context(tls)
        if ctx is None:
            return
        self.send(SSL_REQUEST)
        try:
            answer = raw.recv(1)
        except OSError as exc:
            raise ConnectionFailed(
                f"the connection to {self.where} broke ({exc}); it will be retried",
                where=self.where,
            ) from exc
        if answer == b"N":
            if tls.required:
                raise not_encrypted(self.address, tls, SERVER_TLS_SETTINGS)
            return
        if answer != b"S":
            raise ConnectionFailed(
                f"{self.where} answered the TLS request with {answer!r}; check that "
                "source.host and source.port name a PostgreSQL server.",
                where=self.where,
            )
        try:
            name = host if ctx.check_hostname else None
            self.sock = TlsSocket(raw, ctx, server_hostname=name)
        except ssl.SSLError as exc:  # a certificate not trusted or not naming the host, too
            raise handshake_failed(self.where, exc) from exc
        except OSError as exc:
            raise ConnectionFailed(
                f"the connection to {self.where} broke during the TLS handshake ({exc}); it "
                "will be retried",
                where=self.where,
            ) from exc

    @property
    def server_version(self) -> str:
        return self.parameters.get("server_version", "")

    @property
    def server_version_num(self) -> int:
        """``server_version`` as PostgreSQL's number: 15.8 -> 150008, 9.6.3 -> 90603."""
        found = re.match(r"(\d+)(?:\.(\d+))?(?:\.(\d+))?", self.server_version)
        if found is None:
            return 0
        major, minor, patch = (int(part or 0) for part in found.groups())
        return major * 10000 + minor if major >= 10 else major * 10000 + minor * 100 + patch

    def send(self, data: bytes) -> None:
        try:
            self.sock.sendall(data)
        except OSError as exc:
            raise ConnectionFailed(
                f"the connection to {self.where} broke ({exc}); it will be retried",
                where=self.where,
            ) from exc

    def error(self, error: m.ServerError, *, slot: str = "", statement: str = "") -> SourceError:
        """The sparkcdc error for an ErrorResponse on this connection (:func:`.pg_error`)."""
        return pg_error(
            error,
            self.where,
            user=self.user,
            database=self.database,
            slot=slot,
            statement=statement,
            tls_off=self.tls_off,
        )

    def _login(self, password: str) -> None:
        """Answer Authentication requests until AuthenticationOk."""
        scram: ScramSha256 | None = None
        while True:
            kind, body = self.reader.read()
            if kind == m.ERROR_RESPONSE:
                raise self.error(m.parse_error(body))
            if kind == m.NEGOTIATE_PROTOCOL:
                continue  # a newer server's minor version: 3.0 it is
            if kind != m.AUTHENTICATION:
                raise ConnectionFailed(
                    f"{self.where} answered the login with message {chr(kind)!r}; check that "
                    "source.host and source.port name a PostgreSQL server.",
                    where=self.where,
                )
            code, data = _I32.unpack_from(body)[0], body[4:]
            if code == _AUTH_OK:
                return
            if scram is None and code == _AUTH_SASL:
                scram = ScramSha256(self._password(password))
            answer = self._auth_answer(code, data, password, scram)
            if answer:
                self.send(answer)

    def _auth_answer(
        self, code: int, data: bytes, password: str, scram: ScramSha256 | None
    ) -> bytes | None:
        """The answer to one Authentication request (None: none is due)."""
        try:
            if code == _AUTH_CLEARTEXT:
                return m.password_message(self._password(password).encode())
            if code == _AUTH_MD5:
                return m.password_message(md5_password(self.user, self._password(password), data))
            if code == _AUTH_SASL and scram is not None:
                offered = data.rstrip(b"\0").split(b"\0")
                if SCRAM_SHA_256.encode() not in offered:
                    raise ValueError(f"it offers only {b', '.join(offered).decode()}")
                return m.sasl_initial_response(scram.mechanism, scram.client_first())
            if code == _AUTH_SASL_CONTINUE and scram is not None:
                return m.sasl_response(scram.client_final(data))
            if code == _AUTH_SASL_FINAL and scram is not None:
                scram.verify(data)
                return None
        except ValueError as exc:
            raise ConnectionFailed(
                f"{self.where} could not log user '{self.user}' in by SCRAM-SHA-256 ({exc}); "
                "check source.password and the server's pg_hba.conf.",
                where=self.where,
            ) from exc
        name = _AUTH_NAMES.get(code, f"method {code}")
        raise ConnectionFailed(
            f"{self.where} asks user '{self.user}' for {name} authentication, which sparkcdc "
            "does not speak; give the user a password login (scram-sha-256) in pg_hba.conf.",
            where=self.where,
        )

    def _password(self, password: str) -> str:
        if not password:
            raise ConnectionFailed(
                f"{self.where} asks user '{self.user}' for a password and none is set; set "
                "source.password.",
                where=self.where,
            )
        return password

    def _until_ready(self) -> None:
        """Take ParameterStatus, BackendKeyData and notices up to ReadyForQuery."""
        while True:
            kind, body = self.reader.read()
            if kind == m.READY_FOR_QUERY:
                self.status = chr(body[0])
                return
            if kind == m.PARAMETER_STATUS:
                name, value = m.parse_parameter_status(body)
                self.parameters[name] = value
            elif kind == m.BACKEND_KEY_DATA:
                self.backend_pid, self.cancel_key = m.parse_backend_key(body)
            elif kind == m.ERROR_RESPONSE:
                raise self.error(m.parse_error(body))

    def query(self, sql: str) -> list[Row]:
        """Run ``sql`` by the simple query protocol: the rows of its last result, as text
        (None for NULL); an ErrorResponse raises once ReadyForQuery came, so the session stays
        usable (a FATAL one at once: the server closes the session)."""
        self.send(m.query_message(sql))
        rows, error = self.results()
        if error is not None:
            raise self.error(error, statement=sql)
        return rows

    def results(self) -> tuple[list[Row], m.ServerError | None]:
        """Read a query's results up to ReadyForQuery: (rows of the last result, the first
        ErrorResponse or None)."""
        rows: list[Row] = []
        error: m.ServerError | None = None
        read, data_row = self.reader.read, m.parse_data_row
        while True:
            kind, body = read()
            if kind == m.DATA_ROW:
                rows.append(data_row(body))
            elif kind == m.ROW_DESCRIPTION:
                rows, self.columns = [], m.parse_row_description(body)
            elif kind == m.READY_FOR_QUERY:
                self.status = chr(body[0])
                return rows, error
            elif kind == m.ERROR_RESPONSE:
                error = error or m.parse_error(body)
                if error.severity in ("FATAL", "PANIC"):
                    self._close_socket()
                    return rows, error
            elif kind == m.PARAMETER_STATUS:
                name, value = m.parse_parameter_status(body)
                self.parameters[name] = value
            elif kind == m.COPY_IN:
                self.send(m.copy_fail("sparkcdc sends no COPY data"))
            elif kind == m.COPY_BOTH:
                self._close_socket()
                raise ValueError("START_REPLICATION goes through replication.start_logical")

    def close(self) -> None:
        """Terminate the session and close the socket."""
        with contextlib.suppress(OSError):
            self.sock.sendall(m.TERMINATE)
        self._close_socket()

    def _close_socket(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()

    def __enter__(self) -> PgConnection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _open_socket(host: str, port: int, timeout: float, where: str) -> socket.socket:
    """A connected TCP socket (or the unix socket ``<host>/.s.PGSQL.<port>`` for a folder)."""
    try:
        if host.startswith("/"):
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.settimeout(timeout)
            try:
                sock.connect(f"{host}/.s.PGSQL.{port}")
            except OSError:
                sock.close()
                raise
        else:
            sock = socket.create_connection((host, port), timeout=timeout)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    except OSError as exc:
        raise ConnectionFailed(
            f"cannot reach {where} ({exc.strerror or exc}); check source.host and source.port.",
            where=where,
        ) from exc
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    return sock
