"""What the source server says about itself: readiness for change data capture, the tables a
pipeline captures, their schemas, and where its binary log begins and ends.

One ordinary client connection (pymysql) answers every question; the binlog stream itself is read
elsewhere. Every refusal becomes a :mod:`sparkcdc.core.errors` sentence that names the server and
what to change on it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from sparkcdc.core.errors import (
    ConfigError,
    LogNotReady,
    MissingPrivilege,
    SourceError,
    TableWithoutKey,
)
from sparkcdc.core.schema import Column, TableSchema
from sparkcdc.core.table_name import TableName
from sparkcdc.snapshot.signals import SIGNAL_TABLE_DDL
from sparkcdc.sources.mysql.chunks.sql import ident
from sparkcdc.sources.mysql.offset import BinlogOffset
from sparkcdc.sources.mysql.schema.column_types import charset_of_collation, column_from_catalog
from sparkcdc.sources.mysql.server.client import ServerConnection, binlog_off
from sparkcdc.sources.mysql.server.flavour import is_mariadb, status_statement
from sparkcdc.sources.mysql.server.grants import grant_statements, missing_privileges
from sparkcdc.sources.sql_catalog import Grantee, ListedTable, SqlCatalog

SYSTEM_SCHEMAS = frozenset({"mysql", "information_schema", "performance_schema", "sys"})


class MySQLCatalog(ServerConnection, SqlCatalog):
    """A catalog connection to one MySQL/MariaDB server (also a context manager); the port's
    :class:`~sparkcdc.sources.port.Catalog`."""

    @property
    def is_mariadb(self) -> bool:
        return is_mariadb(self.version)

    # -- server settings -------------------------------------------------------------------

    def server_variables(self, *names: str) -> dict[str, str]:
        """Global server variables by name (lower-case keys; missing ones are left out)."""
        rows = self.query(
            "SHOW GLOBAL VARIABLES WHERE Variable_name IN %s", ([n.lower() for n in names],)
        )
        return {str(k).lower(): "" if v is None else str(v) for k, v in rows}

    def server_id(self) -> int:
        return int(self.query("SELECT @@GLOBAL.server_id")[0][0])

    def check_ready(self, databases: Iterable[str] = ()) -> None:
        """Raise unless the binary log is on in ROW/FULL form and the user may replicate it
        and read the captured ``databases`` (any SELECT grant will do when none are named)."""
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
                raise LogNotReady(
                    f"{name} is {value or 'unset'} on {self.address} but change data capture "
                    f"needs {expected}; {fix}.",
                    variable=name,
                    value=value,
                    expected=expected,
                )
        account = self.account()
        grants = [str(r[0]) for r in self.query("SHOW GRANTS")]
        dbs = sorted(set(databases))
        missing = missing_privileges(grants, dbs)
        if missing:
            names, statements = grant_statements(missing, account, dbs, self.is_mariadb)
            raise MissingPrivilege(
                f"User {account} lacks {', '.join(names)} on {self.address}; as an "
                f"administrator run {'; '.join(statements)}.",
                user=account,
                missing=names,
            )

    # -- tables and schemas ----------------------------------------------------------------

    def _listed_tables(self) -> Iterable[ListedTable]:
        rows = self.query(
            "SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES "
            "WHERE TABLE_TYPE = 'BASE TABLE'"
        )
        return [
            ListedTable(TableName(str(db), str(t)))
            for db, t in rows
            if str(db).lower() not in SYSTEM_SCHEMAS
        ]

    def _no_match(self) -> tuple[str, str]:
        return (
            f"on {self.address}",
            "patterns are regular expressions over db.table (e.g. 'shop\\..*'), fix them "
            f"or create the tables (the server lists only those user '{self.user}' may read)",
        )

    def load_schema(self, db: str, table: str, key_columns: Sequence[str] = ()) -> TableSchema:
        """The table's columns in ordinal order and its primary key in key order."""
        rows = self.query(
            "SELECT COLUMN_NAME, DATA_TYPE, COLUMN_TYPE, IS_NULLABLE, NUMERIC_PRECISION, "
            "NUMERIC_SCALE, CHARACTER_MAXIMUM_LENGTH, DATETIME_PRECISION, CHARACTER_SET_NAME "
            "FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s "
            "ORDER BY ORDINAL_POSITION",
            (db, table),
        )
        if not rows:
            raise SourceError(
                f"Table {TableName(db, table)} does not exist on {self.address} (or "
                f"'{self.user}' may "
                "not see it); check source.tables and the user's SELECT grant.",
                db=db,
                table=table,
            )
        columns: tuple[Column, ...] = tuple(column_from_catalog(*r) for r in rows)
        key_rows = self.query(
            "SELECT COLUMN_NAME FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = %s "
            "AND TABLE_NAME = %s AND INDEX_NAME = 'PRIMARY' ORDER BY SEQ_IN_INDEX",
            (db, table),
        )
        primary_key = tuple(str(r[0]) for r in key_rows)
        names = {c.name.lower(): c.name for c in columns}
        unknown = [k for k in key_columns if k.lower() not in names]
        if unknown:
            raise ConfigError(
                f"source.key_columns: {TableName(db, table)} has no column "
                f"{', '.join(unknown)}; list "
                f"columns of the table ({', '.join(names.values())}).",
                key="source.key_columns",
            )
        keys = tuple(names[k.lower()] for k in key_columns)
        if not primary_key and not keys:
            raise TableWithoutKey(
                f"Table {TableName(db, table)} has no primary key; add one or name the columns "
                "that "
                "identify a row with source.key_columns: "
                f'{{"{TableName(db, table)}": [col, ...]}}.',
                db=db,
                table=table,
            )
        return TableSchema(db, table, columns, primary_key=primary_key, key_columns=keys)

    def table_charset(self, db: str, table: str) -> str:
        """The table's default charset (what new columns get), for the schema tracker."""
        rows = self.query(
            "SELECT TABLE_COLLATION FROM information_schema.TABLES "
            "WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s",
            (db, table),
        )
        return charset_of_collation(str(rows[0][0])) if rows and rows[0][0] else "utf8mb4"

    def binlog_files(self) -> list[tuple[str, int]]:
        """The binlog files still on the server, oldest first, with their sizes in bytes."""
        return [(str(r[0]), int(r[1])) for r in self.query("SHOW BINARY LOGS")]

    def gtid_position(self) -> str:
        """The GTID position of everything written to the binary log so far."""
        sql = (
            "SELECT @@GLOBAL.gtid_binlog_pos"
            if self.is_mariadb
            else ("SELECT @@GLOBAL.gtid_executed")
        )
        value = self.query(sql)[0][0]
        return "" if value is None else str(value).replace("\n", "")

    def gtid_pos_at(self, file: str, pos: int) -> str:
        """The GTID position just before ``file:pos`` ("" when unknown or not MariaDB)."""
        if not self.is_mariadb:
            return ""
        value = self.query("SELECT BINLOG_GTID_POS(%s, %s)", (file, int(pos)))[0][0]
        return "" if value is None else str(value)

    # -- signals ---------------------------------------------------------------------------

    def check_signal_table(self, table: str) -> None:
        """Raise ConfigError (with its CREATE TABLE) unless the signal table ``db.table``
        exists and the user can see it."""
        db, name = TableName.parse(table)
        found = self.query(
            "SELECT 1 FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s",
            (db, name),
        )
        if not found:
            ddl = SIGNAL_TABLE_DDL.format(name=self._quote_table(db, name))
            raise ConfigError(
                f"The signal table {table} does not exist on {self.address} (or '{self.user}' "
                f"may not see it); create it with {ddl} and grant that user INSERT on it.",
                key="source.signal_table",
            )

    def _quote_table(self, schema: str, table: str) -> str:
        return TableName(schema, table).sql(ident)

    def _execute(self, sql: str, args: tuple[object, ...]) -> None:
        self.query(sql, args)

    def _grantee(self) -> Grantee:
        account = self.account()
        return Grantee(self.user, account, account)

    def account(self) -> str:
        """The account the server knows the user as, quoted (``'cdc'@'%'``)."""
        current = str(self.query("SELECT CURRENT_USER()")[0][0])
        return "'{}'@'{}'".format(*current.rsplit("@", 1)) if "@" in current else current

    # -- the binary log --------------------------------------------------------------------

    def log_end(self) -> BinlogOffset:
        """The end of the binary log now (:meth:`current_offset`)."""
        return self.current_offset()

    def oldest_position(self) -> str:
        files = self.binlog_files()
        return f"{files[0][0]}:4" if files else "none (no binlog file on the server)"

    def current_offset(self) -> BinlogOffset:
        """The end of the binary log now: where the next transaction will be written."""
        rows = self.query(status_statement(self.version))
        if not rows:
            raise binlog_off(self.address)
        row = rows[0]
        if not self.is_mariadb and len(row) > 4:  # Executed_Gtid_Set, read with the position
            gtid = "" if row[4] is None else str(row[4]).replace("\n", "")
        else:
            gtid = self.gtid_position()
        return BinlogOffset(str(row[0]), int(row[1]), gtid=gtid)

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
        self.query("START TRANSACTION WITH CONSISTENT SNAPSHOT")
        try:
            status = dict(self.query("SHOW SESSION STATUS LIKE 'binlog_snapshot_%'"))
        finally:
            self.query("COMMIT")
        file = str(status.get("Binlog_snapshot_file") or "")
        if not file:
            raise binlog_off(self.address)
        pos = int(status["Binlog_snapshot_position"])
        return BinlogOffset(file, pos, gtid=self.gtid_pos_at(file, pos))

    def earliest_offset(self) -> BinlogOffset:
        """The start of the oldest binlog file still on the server."""
        files = self.binlog_files()
        if not files:
            return self.current_offset()
        first = files[0][0]
        return BinlogOffset(first, 4, gtid=self.gtid_pos_at(first, 4))
