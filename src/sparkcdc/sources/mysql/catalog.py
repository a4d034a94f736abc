"""What the source server says about itself: readiness for change data capture, the tables a
pipeline captures, their schemas, and where its binary log begins and ends.

One ordinary client connection (pymysql) answers every question; the binlog stream itself is read
elsewhere. Every refusal becomes a :mod:`sparkcdc.core.errors` sentence that names the server and
what to change on it.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterable, Sequence
from typing import Any

import pymysql

from sparkcdc.core.errors import (
    BinlogNotReady,
    ConfigError,
    ConnectionFailed,
    MissingPrivilege,
    NoTablesMatched,
    SourceError,
    TableWithoutKey,
)
from sparkcdc.core.offset import BinlogOffset
from sparkcdc.core.schema import Column, TableSchema
from sparkcdc.sources.mysql.coltypes import charset_of_collation, column_from_catalog
from sparkcdc.sources.mysql.connect import connect
from sparkcdc.sources.mysql.grants import grant_statements, missing_privileges

SYSTEM_SCHEMAS = frozenset({"mysql", "information_schema", "performance_schema", "sys"})


class MySQLCatalog:
    """A catalog connection to one MySQL/MariaDB server (also a context manager)."""

    def __init__(
        self, host: str, port: int, user: str, password: str, connect_timeout: float = 10.0
    ) -> None:
        self.host = host
        self.port = int(port)
        self.user = user
        self.connect_timeout = float(connect_timeout)
        self._password = password
        self._conn = self._connect()
        self.version = str(self._rows("SELECT VERSION()")[0][0])
        self.is_mariadb = "mariadb" in self.version.lower()

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def _connect(self) -> pymysql.Connection:
        try:
            return connect(
                host=self.host,
                port=self.port,
                user=self.user,
                password=self._password,
                connect_timeout=self.connect_timeout,
                autocommit=True,
                charset="utf8mb4",
            )
        except pymysql.err.OperationalError as exc:
            raise self._connection_error(exc) from exc

    def _connection_error(self, exc: pymysql.err.MySQLError) -> ConnectionFailed:
        code = exc.args[0] if exc.args else 0
        detail = _detail(exc)
        fields = {"host": self.host, "port": self.port, "user": self.user, "code": code}
        if code in (1045, 1698):
            return ConnectionFailed(
                f"The server at {self.address} refused user '{self.user}' (access denied); "
                "check source.user and source.password.",
                **fields,
            )
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

    def _rows(self, sql: str, args: Sequence[Any] | None = None) -> list[tuple[Any, ...]]:
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
                    raise self._binlog_off() from exc
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
                ) from exc
        raise AssertionError("unreachable")

    # -- server settings -------------------------------------------------------------------

    def server_variables(self, *names: str) -> dict[str, str]:
        """Global server variables by name (lower-case keys; missing ones are left out)."""
        rows = self._rows(
            "SHOW GLOBAL VARIABLES WHERE Variable_name IN %s", ([n.lower() for n in names],)
        )
        return {str(k).lower(): "" if v is None else str(v) for k, v in rows}

    def server_id(self) -> int:
        return int(self._rows("SELECT @@GLOBAL.server_id")[0][0])

    def check_ready(self, databases: Iterable[str] = ()) -> None:
        """Raise unless the binary log is on in ROW/FULL form and the user may replicate it and
        read the captured ``databases`` (any SELECT grant will do when none are named)."""
        found = self.server_variables("log_bin", "binlog_format", "binlog_row_image")
        wanted = (
            ("log_bin", "ON", "start the server with --log-bin=mysql-bin and a server-id"),
            (
                "binlog_format",
                "ROW",
                "run SET GLOBAL binlog_format=ROW, put binlog_format=ROW in the server config "
                "and restart the writers' connections",
            ),
            (
                "binlog_row_image",
                "FULL",
                "run SET GLOBAL binlog_row_image=FULL, put binlog_row_image=FULL in the server "
                "config and restart the writers' connections",
            ),
        )
        for name, expected, fix in wanted:
            value = found.get(name, "")
            if value.upper() not in (expected, "1" if expected == "ON" else expected):
                raise BinlogNotReady(
                    f"{name} is {value or 'unset'} on {self.address} but change data capture "
                    f"needs {expected}; {fix}.",
                    variable=name,
                    value=value,
                    expected=expected,
                )
        current = str(self._rows("SELECT CURRENT_USER()")[0][0])
        account = "'{}'@'{}'".format(*current.rsplit("@", 1)) if "@" in current else current
        grants = [str(r[0]) for r in self._rows("SHOW GRANTS")]
        dbs = sorted(set(databases))
        missing = missing_privileges(grants, dbs)
        if missing:
            names, statements = grant_statements(missing, account, dbs, self.is_mariadb)
            raise MissingPrivilege(
                f"User {account} lacks {', '.join(names)} on {self.address}; as an "
                f"administrator run {'; '.join(statements)}.",
                user=current,
                missing=names,
            )

    # -- tables and schemas ----------------------------------------------------------------

    def match_tables(self, patterns: Sequence[str]) -> list[tuple[str, str]]:
        """The base tables whose ``db.table`` fully matches one of the regular expressions."""
        try:
            compiled = [re.compile(p) for p in patterns]
        except re.error as exc:
            raise ConfigError(
                f"source.tables: {exc.pattern!r} is not a regular expression ({exc}); fix it.",
                key="source.tables",
            ) from exc
        rows = self._rows(
            "SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES "
            "WHERE TABLE_TYPE = 'BASE TABLE'"
        )
        found = sorted(
            (str(db), str(table))
            for db, table in rows
            if str(db).lower() not in SYSTEM_SCHEMAS
            and any(p.fullmatch(f"{db}.{table}") for p in compiled)
        )
        if not found:
            raise NoTablesMatched(
                f"No table on {self.address} matches source.tables {list(patterns)}; patterns "
                "are regular expressions over db.table (e.g. 'shop\\..*'), fix them or create "
                "the tables.",
                patterns=list(patterns),
            )
        return found

    def load_schema(self, db: str, table: str, key_columns: Sequence[str] = ()) -> TableSchema:
        """The table's columns in ordinal order and its primary key in key order."""
        rows = self._rows(
            "SELECT COLUMN_NAME, DATA_TYPE, COLUMN_TYPE, IS_NULLABLE, NUMERIC_PRECISION, "
            "NUMERIC_SCALE, CHARACTER_MAXIMUM_LENGTH, DATETIME_PRECISION, CHARACTER_SET_NAME "
            "FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s "
            "ORDER BY ORDINAL_POSITION",
            (db, table),
        )
        if not rows:
            raise SourceError(
                f"Table {db}.{table} does not exist on {self.address} (or '{self.user}' may "
                "not see it); check source.tables and the user's SELECT grant.",
                db=db,
                table=table,
            )
        columns: tuple[Column, ...] = tuple(column_from_catalog(*r) for r in rows)
        key_rows = self._rows(
            "SELECT COLUMN_NAME FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = %s "
            "AND TABLE_NAME = %s AND INDEX_NAME = 'PRIMARY' ORDER BY SEQ_IN_INDEX",
            (db, table),
        )
        primary_key = tuple(str(r[0]) for r in key_rows)
        names = {c.name.lower(): c.name for c in columns}
        unknown = [k for k in key_columns if k.lower() not in names]
        if unknown:
            raise ConfigError(
                f"source.key_columns: {db}.{table} has no column {', '.join(unknown)}; list "
                f"columns of the table ({', '.join(names.values())}).",
                key="source.key_columns",
            )
        keys = tuple(names[k.lower()] for k in key_columns)
        if not primary_key and not keys:
            raise TableWithoutKey(
                f"Table {db}.{table} has no primary key; add one or name the columns that "
                f'identify a row with source.key_columns: {{"{db}.{table}": [col, ...]}}.',
                db=db,
                table=table,
            )
        return TableSchema(db, table, columns, primary_key=primary_key, key_columns=keys)

    def table_charset(self, db: str, table: str) -> str:
        """The table's default charset (what new columns get), for the schema tracker."""
        rows = self._rows(
            "SELECT TABLE_COLLATION FROM information_schema.TABLES "
            "WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s",
            (db, table),
        )
        return charset_of_collation(str(rows[0][0])) if rows and rows[0][0] else "utf8mb4"

    # -- the binary log --------------------------------------------------------------------

    def binlog_files(self) -> list[tuple[str, int]]:
        """The binlog files still on the server, oldest first, with their sizes in bytes."""
        return [(str(r[0]), int(r[1])) for r in self._rows("SHOW BINARY LOGS")]

    def gtid_position(self) -> str:
        """The GTID position of everything written to the binary log so far."""
        sql = (
            "SELECT @@GLOBAL.gtid_binlog_pos"
            if self.is_mariadb
            else ("SELECT @@GLOBAL.gtid_executed")
        )
        value = self._rows(sql)[0][0]
        return "" if value is None else str(value).replace("\n", "")

    def gtid_pos_at(self, file: str, pos: int) -> str:
        """The GTID position just before ``file:pos`` ("" when unknown or not MariaDB)."""
        if not self.is_mariadb:
            return ""
        value = self._rows("SELECT BINLOG_GTID_POS(%s, %s)", (file, int(pos)))[0][0]
        return "" if value is None else str(value)

    def _binlog_off(self) -> BinlogNotReady:
        return BinlogNotReady(
            f"The binary log is off on {self.address}; start the server with "
            "--log-bin=mysql-bin and a server-id.",
            variable="log_bin",
            value="OFF",
            expected="ON",
        )

    def current_offset(self) -> BinlogOffset:
        """The end of the binary log now: where the next transaction will be written."""
        try:
            rows = self._rows("SHOW MASTER STATUS")
        except (MissingPrivilege, ConnectionFailed):
            raise
        except SourceError:  # MySQL 8.4 knows only the new name
            rows = self._rows("SHOW BINARY LOG STATUS")
        if not rows:
            raise self._binlog_off()
        gtid = self.gtid_position()
        return BinlogOffset(str(rows[0][0]), int(rows[0][1]), gtid=gtid)

    def visible_offset(self) -> BinlogOffset:
        """A log position every transaction before which is visible to reads started later.

        ``SHOW MASTER STATUS`` may run ahead of what a read sees: a transaction is written to
        the binary log before the storage engine commits it. MariaDB reports the binlog
        position of a consistent snapshot's read view (``binlog_snapshot_file`` and
        ``_position`` after ``START TRANSACTION WITH CONSISTENT SNAPSHOT``, no lock taken), and
        every read started afterwards sees at least that view. Elsewhere the current offset.
        """
        if not self.is_mariadb:
            return self.current_offset()
        self._rows("START TRANSACTION WITH CONSISTENT SNAPSHOT")
        try:
            status = dict(self._rows("SHOW SESSION STATUS LIKE 'binlog_snapshot_%'"))
        finally:
            self._rows("COMMIT")
        file = str(status.get("Binlog_snapshot_file") or "")
        if not file:
            raise self._binlog_off()
        pos = int(status["Binlog_snapshot_position"])
        return BinlogOffset(file, pos, gtid=self.gtid_pos_at(file, pos))

    def earliest_offset(self) -> BinlogOffset:
        """The start of the oldest binlog file still on the server."""
        files = self.binlog_files()
        if not files:
            return self.current_offset()
        first = files[0][0]
        return BinlogOffset(first, 4, gtid=self.gtid_pos_at(first, 4))

    # -- lifecycle -------------------------------------------------------------------------

    def close(self) -> None:
        with contextlib.suppress(pymysql.err.Error):
            self._conn.close()

    def __enter__(self) -> MySQLCatalog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _detail(exc: pymysql.err.MySQLError) -> str:
    """The server's own words for an error."""
    return str(exc.args[1]) if len(exc.args) > 1 else str(exc)
