"""A throwaway PostgreSQL server for the demo, the tests and the benchmarks.

It runs Debian's ``postgres`` on a free loopback port with a fresh ``initdb`` data folder and the
settings change data capture needs (``wal_level=logical``, replication slots and WAL senders),
tuned for speed over durability. The superuser ``postgres`` logs in with a password over TCP
(scram-sha-256, also for replication connections) and without one on the folder's unix socket.
PostgreSQL refuses to run as root: as root, the server runs as the ``postgres`` system user
(``nobody`` if there is none), which then owns the temporary folder.

With ``tls=ServerTls(cert, key, ca)`` the server runs with ``ssl=on`` and that certificate (and
checks client certificates against ``ca``); ``hba=`` replaces the pg_hba.conf lines, e.g.
:data:`HBA_TLS_ONLY` (``hostssl``: TCP connections only inside TLS).

    server = ThrowawayPostgres.start()
    server.create_database("shop")
    server.execute("CREATE TABLE t (id int PRIMARY KEY)", database="shop")
    ...
    server.stop()
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg2
import psycopg2.extensions

from sparkcdc.sources.throwaway import ThrowawayServer, ThrowawayServerError, free_port, new_root

__all__ = [
    "CDC_SETTINGS",
    "HBA_TLS_ONLY",
    "ServerTls",
    "ThrowawayPostgres",
    "ThrowawayServerError",
    "throwaway_postgres",
]

CDC_SETTINGS: dict[str, str] = {
    "wal_level": "logical",
    "max_replication_slots": "20",
    "max_wal_senders": "20",
    "max_connections": "200",
    "fsync": "off",
    # on: logical decoding and WAL senders only see flushed WAL, so with "off" a commit shows up
    # a wal_writer_delay (200 ms) late and an immediate stop loses it; with fsync off, "on"
    # costs a write() per commit, no disk flush
    "synchronous_commit": "on",
    "full_page_writes": "off",
    "shared_buffers": "128MB",
    "timezone": "UTC",
    "log_min_messages": "warning",
}

HBA = """\
# TYPE  DATABASE     USER  ADDRESS       METHOD
local   all          all                 trust
local   replication  all                 trust
host    all          all   127.0.0.1/32  scram-sha-256
host    replication  all   127.0.0.1/32  scram-sha-256
"""
HBA_TLS_ONLY = """\
# TYPE   DATABASE     USER  ADDRESS       METHOD
local    all          all                 trust
local    replication  all                 trust
hostssl  all          all   127.0.0.1/32  scram-sha-256
hostssl  replication  all   127.0.0.1/32  scram-sha-256
"""


@dataclass(frozen=True)
class ServerTls:
    """The server's certificate and key (PEM files), and the CA whose client certificates it
    accepts (``ssl_ca_file``; a pg_hba.conf line with ``clientcert=verify-ca`` asks for one)."""

    cert: Path
    key: Path
    ca: Path | None = None

    def install(self, root: Path, account: pwd.struct_passwd | None) -> dict[str, str]:
        """Copy the files into ``root/tls``, readable by the server's account only (as
        PostgreSQL wants its key); the settings that turn TLS on with them."""
        folder = root / "tls"
        folder.mkdir(mode=0o700)
        files = {"ssl_cert_file": self.cert, "ssl_key_file": self.key, "ssl_ca_file": self.ca}
        settings = {"ssl": "on"}
        for setting, source in files.items():
            if source is None:
                continue
            copy = folder / f"{setting}.pem"
            shutil.copyfile(source, copy)
            copy.chmod(0o600)
            if account is not None:
                os.chown(copy, account.pw_uid, account.pw_gid)
            settings[setting] = str(copy)
        if account is not None:
            os.chown(folder, account.pw_uid, account.pw_gid)
        return settings


def _bin_dir() -> Path:
    """The newest ``/usr/lib/postgresql/<version>/bin`` with ``initdb``, else ``initdb``'s
    folder on PATH."""

    def version(path: Path) -> tuple[int, ...]:
        parts = path.parent.name.split(".")
        return tuple(int(p) for p in parts) if all(p.isdigit() for p in parts) else (-1,)

    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=version)
    if found:
        return found[-1].parent
    on_path = shutil.which("initdb")
    if on_path and shutil.which("postgres", path=str(Path(on_path).parent)):
        return Path(os.path.realpath(on_path)).parent
    raise ThrowawayServerError(
        "PostgreSQL's initdb was not found; install Debian's postgresql package "
        "(scripts/setup.sh does it)."
    )


def _run_as() -> pwd.struct_passwd | None:
    """The account to run the server as: None (this one) unless we are root."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        with contextlib.suppress(KeyError):
            return pwd.getpwnam(name)
    raise ThrowawayServerError("running as root, and there is no postgres or nobody user")


def _popen_args(account: pwd.struct_passwd | None) -> dict[str, Any]:
    """subprocess arguments that drop root to ``account`` (and its group only)."""
    if account is None:
        return {}
    return {"user": account.pw_uid, "group": account.pw_gid, "extra_groups": []}


@dataclass
class ThrowawayPostgres(ThrowawayServer):
    """One private ``postgres`` process; ``user`` is a superuser with ``password``."""

    NAME = "postgres"
    STOP_SIGNAL = signal.SIGQUIT  # an immediate shutdown, recovered from at the next start
    NOT_READY = (psycopg2.OperationalError,)

    user: str = "postgres"
    password: str = "postgres-pw"
    database: str = "postgres"

    @classmethod
    def start(
        cls,
        base_dir: str | os.PathLike[str] | None = None,
        settings: Mapping[str, str] | None = None,
        port: int | None = None,
        timeout: float = 60.0,
        tls: ServerTls | None = None,
        hba: str = HBA,
        launcher: Sequence[str] = (),
    ) -> ThrowawayPostgres:
        """``initdb`` a fresh folder (under ``base_dir``, which the server's account must be
        able to enter) and start the server with :data:`CDC_SETTINGS` and ``settings`` over
        them, ``tls`` and the pg_hba.conf ``hba``, through ``launcher`` (a command that runs
        the one after it: restarts keep it); returns once it accepts connections."""
        bin_dir, account = _bin_dir(), _run_as()
        root = new_root("sparkcdc-postgres-", base_dir)

        def spawn() -> ThrowawayPostgres:
            if account is not None:
                os.chown(root, account.pw_uid, account.pw_gid)
            _initdb(bin_dir, root, cls.user, cls.password, account, hba)
            at = port or free_port()
            options = {
                **CDC_SETTINGS,
                "listen_addresses": "127.0.0.1",
                "port": str(at),
                "unix_socket_directories": str(root),
                **(tls.install(root, account) if tls else {}),
                **(settings or {}),
            }
            args = [*launcher, str(bin_dir / "postgres"), "-D", str(root / "data")]
            args += [f"-c{name}={value}" for name, value in options.items()]
            return cls(port=at, root_dir=root, args=args, process=_spawn(args, root))

        return cls._started(root, spawn, timeout)

    @property
    def datadir(self) -> Path:
        return self.root_dir / "data"

    @property
    def log_path(self) -> Path:
        return self.root_dir / "postgres.log"

    def dsn(self, database: str | None = None) -> str:
        """The libpq keyword/value connection string for ``user`` over TCP."""
        return psycopg2.extensions.make_dsn(
            host=self.host,
            port=self.port,
            user=self.user,
            password=self.password,
            dbname=database or self.database,
        )

    def connect(self, database: str | None = None, **kwargs: Any) -> Any:
        """A new autocommit psycopg2 connection as ``user``."""
        conn = psycopg2.connect(self.dsn(database), **kwargs)
        conn.autocommit = True
        return conn

    def create_database(self, name: str) -> None:
        """``CREATE DATABASE`` (the name is quoted, so kept as written)."""
        quoted = '"' + name.replace('"', '""') + '"'
        self.execute(f"CREATE DATABASE {quoted}")

    def _spawn(self) -> subprocess.Popen[bytes]:
        return _spawn(self.args, self.root_dir)


def _initdb(
    bin_dir: Path,
    root: Path,
    user: str,
    password: str,
    account: pwd.struct_passwd | None,
    hba: str,
) -> None:
    """A new cluster in ``root/data`` with the pg_hba.conf ``hba``."""
    pwfile = root / "pwfile"
    pwfile.write_text(password + "\n")
    if account is not None:
        os.chown(pwfile, account.pw_uid, account.pw_gid)
    result = subprocess.run(
        [
            str(bin_dir / "initdb"),
            "-D", str(root / "data"),
            "-U", user,
            f"--pwfile={pwfile}",
            "--auth-local=trust",
            "--auth-host=scram-sha-256",
            "--encoding=UTF8",
            "--locale=C",
            "--no-sync",
            "--no-instructions",
        ],
        capture_output=True,
        text=True,
        cwd=root,
        **_popen_args(account),
    )  # fmt: skip
    pwfile.unlink()
    if result.returncode != 0:
        hint = "" if account is None else f" (it ran as {account.pw_name}: can it enter {root}?)"
        raise ThrowawayServerError(f"initdb failed{hint}: {result.stderr.strip()[-800:]}")
    (root / "data" / "pg_hba.conf").write_text(hba)


def _spawn(args: list[str], root: Path) -> subprocess.Popen[bytes]:
    """Start ``postgres`` (as the unprivileged account when root), its output to the log."""
    with open(root / "postgres.log", "ab") as log:
        return subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=root,
            start_new_session=True,
            **_popen_args(_run_as()),
        )


def throwaway_postgres(**kwargs: Any) -> ThrowawayPostgres:
    """A started server (:meth:`ThrowawayPostgres.start`), stopped at the end of a ``with``."""
    return ThrowawayPostgres.start(**kwargs)
