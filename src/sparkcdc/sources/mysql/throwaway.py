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

import os
import shutil
import signal
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pymysql

from sparkcdc.config.model import SourceConfig
from sparkcdc.config.secret import Secret
from sparkcdc.sources.mysql.server.connect import connect
from sparkcdc.sources.mysql.settings import MySQLSettings
from sparkcdc.sources.throwaway import ThrowawayServer, ThrowawayServerError, free_port, new_root

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
class ThrowawayMariaDB(ThrowawayServer):
    """One private ``mariadbd`` process; ``root`` has no password and is reachable on loopback."""

    NAME = "mariadbd"
    STOP_SIGNAL = signal.SIGTERM  # a clean shutdown: the binlog moves on to a new file
    NOT_READY = (pymysql.err.OperationalError,)

    user: str = "root"
    password: str = ""

    @classmethod
    def start(
        cls,
        base_dir: str | os.PathLike[str] | None = None,
        extra_args: Sequence[str] = (),
        port: int | None = None,
        timeout: float = 60.0,
        launcher: Sequence[str] = (),
    ) -> ThrowawayMariaDB:
        """Install a fresh data folder and start the server (through ``launcher``, a command
        that runs the one after it, e.g. ``env NAME=value``: restarts keep it); returns once it
        accepts queries."""
        root = new_root("sparkcdc-mariadb-", base_dir)

        def spawn() -> ThrowawayMariaDB:
            _install(root / "data")
            at = port or free_port()
            args = [
                *launcher,
                _binary("mariadbd", "mysqld"),
                "--no-defaults",
                f"--datadir={root / 'data'}",
                f"--port={at}",
                "--bind-address=127.0.0.1",
                f"--socket={root / 'mysqld.sock'}",
                f"--pid-file={root / 'mysqld.pid'}",
                f"--log-error={root / 'error.log'}",
                "--user=" + _run_user(),
                *CDC_SETTINGS,
                *extra_args,
            ]
            return cls(port=at, root_dir=root, args=args, process=_popen(args))

        return cls._started(root, spawn, timeout)

    @property
    def datadir(self) -> Path:
        return self.root_dir / "data"

    def _spawn(self) -> subprocess.Popen[bytes]:
        return _popen(self.args)

    @property
    def log_path(self) -> Path:
        return self.root_dir / "error.log"

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


def _install(datadir: Path) -> None:
    """A new data folder, its root without a password."""
    result = subprocess.run(
        [
            _binary("mariadb-install-db", "mysql_install_db"),
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


def _popen(args: list[str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )


def _run_user() -> str:
    """mariadbd refuses to run as root unless told to; run as the current user either way."""
    import getpass

    return getpass.getuser()


def throwaway_mariadb(**kwargs: Any) -> ThrowawayMariaDB:
    """A started server (:meth:`ThrowawayMariaDB.start`), stopped at the end of a ``with``."""
    return ThrowawayMariaDB.start(**kwargs)
