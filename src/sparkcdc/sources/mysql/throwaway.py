"""A throwaway MariaDB server for the demo and the test harness.

It runs Debian's ``mariadbd`` on a free loopback port with a temporary data folder and the
settings change data capture needs: binary log on, ``binlog_format=ROW``,
``binlog_row_image=FULL`` and GTIDs (MariaDB writes a GTID for every transaction). Nothing is
shared with any other server on the machine.

    server = ThrowawayMariaDB.start()
    server.execute("CREATE DATABASE shop")
    ...
    server.stop()
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pymysql

from sparkcdc.config.model import SourceConfig
from sparkcdc.config.secret import Secret
from sparkcdc.sources.mysql.server.connect import connect
from sparkcdc.sources.mysql.settings import MySQLSettings

CDC_SETTINGS: tuple[str, ...] = (
    "--log-bin=mysql-bin",
    "--binlog-format=ROW",
    "--binlog-row-image=FULL",
    "--server-id=1",
    "--gtid-domain-id=0",
    "--character-set-server=utf8mb4",
    "--collation-server=utf8mb4_general_ci",
    "--max-connections=200",
    "--innodb-buffer-pool-size=256M",
    "--innodb-flush-log-at-trx-commit=2",
    "--sync-binlog=0",
    "--max-binlog-size=64M",
    "--skip-name-resolve",
    "--max-allowed-packet=256M",
)


class ThrowawayServerError(RuntimeError):
    """The throwaway server could not be installed or started."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nobody listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _binary(*names: str) -> str:
    for name in names:
        found = shutil.which(name) or (
            f"/usr/sbin/{name}" if os.path.exists(f"/usr/sbin/{name}") else None
        )
        if found:
            return found
    raise ThrowawayServerError(
        f"{names[0]} was not found; install Debian's mariadb-server package "
        "(scripts/setup.sh does it)."
    )


@dataclass
class ThrowawayMariaDB:
    """One private ``mariadbd`` process; ``root`` has no password and is reachable on loopback."""

    port: int
    datadir: Path
    process: subprocess.Popen[bytes]
    host: str = "127.0.0.1"
    user: str = "root"
    password: str = ""
    _owns_dir: bool = field(default=True, repr=False)

    @classmethod
    def start(
        cls,
        base_dir: str | os.PathLike[str] | None = None,
        extra_args: Sequence[str] = (),
        port: int | None = None,
        timeout: float = 60.0,
    ) -> ThrowawayMariaDB:
        """Install a fresh data folder and start the server; returns once it accepts queries."""
        root = Path(tempfile.mkdtemp(prefix="sparkcdc-mariadb-", dir=base_dir))
        datadir = root / "data"
        install = _binary("mariadb-install-db", "mysql_install_db")
        result = subprocess.run(
            [
                install,
                "--no-defaults",
                f"--datadir={datadir}",
                "--auth-root-authentication-method=normal",
                "--skip-test-db",
                "--user=" + _run_user(),
            ],
            capture_output=True,
            text=True,
        )
        if result.returncode != 0:
            raise ThrowawayServerError(f"mariadb-install-db failed: {result.stderr.strip()[-800:]}")
        port = port or free_port()
        args = [
            _binary("mariadbd", "mysqld"),
            "--no-defaults",
            f"--datadir={datadir}",
            f"--port={port}",
            "--bind-address=127.0.0.1",
            f"--socket={root / 'mysqld.sock'}",
            f"--pid-file={root / 'mysqld.pid'}",
            f"--log-error={root / 'error.log'}",
            "--user=" + _run_user(),
            *CDC_SETTINGS,
            *extra_args,
        ]
        process = subprocess.Popen(
            args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
        )
        server = cls(port=port, datadir=datadir, process=process)
        server._wait_ready(timeout)
        return server

    @property
    def root_dir(self) -> Path:
        return self.datadir.parent

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                log = (self.root_dir / "error.log").read_text(errors="replace")[-1500:]
                raise ThrowawayServerError(f"mariadbd exited during start-up:\n{log}")
            try:
                self.connect().close()
                return
            except pymysql.err.OperationalError:
                time.sleep(0.1)
        raise ThrowawayServerError(f"mariadbd did not accept connections within {timeout:.0f}s")

    def connect(self, database: str | None = None, **kwargs: Any) -> pymysql.Connection:
        """A new autocommit connection as root."""
        return connect(
            host=self.host,
            port=self.port,
            user=self.user,
            password=self.password,
            database=database,
            autocommit=True,
            charset="utf8mb4",
            **kwargs,
        )

    def execute(self, *statements: str, database: str | None = None) -> None:
        """Run statements on a fresh connection, in order."""
        with contextlib.closing(self.connect(database)) as conn, conn.cursor() as cur:
            for sql in statements:
                cur.execute(sql)

    def query(self, sql: str, database: str | None = None) -> list[tuple[Any, ...]]:
        with contextlib.closing(self.connect(database)) as conn, conn.cursor() as cur:
            cur.execute(sql)
            return list(cur.fetchall())

    def source_config(
        self, *tables: str, server_id: int | None = None, **fields: Any
    ) -> SourceConfig:
        """A source capturing ``tables`` (regular expressions) from this server as root, with
        the replica ``server_id`` (default: the settings' default) and other ``fields``."""
        settings = MySQLSettings() if server_id is None else MySQLSettings(server_id)
        return SourceConfig(
            host=self.host, port=self.port, user=self.user, password=Secret(self.password),
            tables=tables, settings=settings, **fields,
        )  # fmt: skip

    def create_cdc_user(self, user: str = "cdc", password: str = "cdc-secret") -> tuple[str, str]:
        """A user with exactly the privileges change data capture needs."""
        self.execute(
            f"CREATE USER IF NOT EXISTS '{user}'@'%' IDENTIFIED BY '{password}'",
            f"GRANT SELECT, RELOAD, SHOW DATABASES, REPLICATION SLAVE, REPLICATION CLIENT, "
            f"BINLOG MONITOR ON *.* TO '{user}'@'%'",
        )
        return user, password

    def stop(self, remove: bool = True) -> None:
        """Shut the server down (SIGTERM, then SIGKILL) and delete its folder."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if remove and self._owns_dir:
            shutil.rmtree(self.root_dir, ignore_errors=True)

    def kill(self) -> None:
        """Kill -9, as a crash would (the data folder stays)."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def restart(self, timeout: float = 60.0) -> None:
        """Start the server again on the same port and data folder."""
        self.stop(remove=False)
        args = [str(a) for a in self.process.args]  # type: ignore[union-attr]
        self.process = subprocess.Popen(
            args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
        )
        self._wait_ready(timeout)

    def __enter__(self) -> ThrowawayMariaDB:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _run_user() -> str:
    """mariadbd refuses to run as root unless told to; run as the current user either way."""
    import getpass

    return getpass.getuser()


@contextlib.contextmanager
def throwaway_mariadb(**kwargs: Any) -> Iterator[ThrowawayMariaDB]:
    server = ThrowawayMariaDB.start(**kwargs)
    try:
        yield server
    finally:
        server.stop()
