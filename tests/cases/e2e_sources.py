"""What an end-to-end test needs of a database, so one suite runs against every source.

An end-to-end test drives ``sparkcdc run`` on a pipeline file and compares the lake with the
database. Each :class:`E2ESource` holds only what differs between databases: the server and the
test's own database on it, the pipeline file's source settings, the workload's DDL and SQL
dialect, how to start capturing (MariaDB: the binlog's end now; PostgreSQL: a publication and
the checkpoint's slot), where a table lands in the lake, how to read the source's rows, and
whether the snapshot reads every chunk in one pinned snapshot (PostgreSQL's exported snapshot)
or corrects each chunk in a watermark window (MariaDB).

The ``source`` fixture (``tests/e2e/conftest.py``) is parametrised over the sources, marked with
their server's marker (``mariadb``, ``postgres``). A third database gets the whole suite by
adding its class here and its parameter there.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from sparkcdc.snapshot.signals import SIGNAL_TABLE_DDL, signal_table_ddl
from sparkcdc.sources.mysql.throwaway import ThrowawayMariaDB
from sparkcdc.sources.postgres.throwaway import ThrowawayPostgres
from tests.e2e.cli import log_end, write_config
from tests.e2e.snapshot_workload import ITEMS, PG_ITEMS, Server
from tests.e2e.workload import DDL, MARIADB, PG_DDL, POSTGRES, Dialect

SLOT = "sparkcdc_checkpoint"  # PostgreSQL's slot is named after the checkpoint folder

ACCOUNTS = ("id", "version", "balance", "owner", "updated", "flags")


class E2ESource(Protocol):
    name: str
    database: str
    schema: str
    """The tables' schema in the lake's folders (MariaDB: the database)."""
    dialect: Dialect
    pins_one_snapshot: bool
    """Whether the parallel snapshot reads every chunk in one pinned snapshot (no windows)."""
    full_before_image: bool
    """Whether a delete's before image holds every column (else the key only)."""
    capture_signal_table: bool
    """Whether the signal table must be captured too (its rows are read from the log)."""

    @property
    def server(self) -> Server:
        """The server, for the workloads (``connect``, ``execute``, ``query``)."""

    def create_accounts(self) -> None:
        """Create the workload's ``accounts`` table in the test's database."""

    def create_items(self, table: str) -> None:
        """Create an empty table of the snapshot workload's ``items`` shape named ``table``."""

    def create_signal_table(self, table: str) -> str:
        """Create the signal table ``table``; its name as the pipeline file gives it."""

    def numbers(self, count: int) -> str:
        """A FROM clause of the integers ``1 .. count`` in a column ``seq``."""

    def write_before_capture(self, *sql: str) -> None:
        """Run ``sql`` so that the pipeline's log never holds it (MariaDB: with ``sql_log_bin``
        off; PostgreSQL: before the slot exists, so call it before :meth:`start_capturing`)."""

    def start_capturing(self, tables: list[str]) -> str:
        """Make the database ready to stream ``tables`` from now on; the ``startup`` to use."""

    def config(self, tmp: Path, table: str, startup: str, extra_source: str = "") -> Path:
        """A pipeline file capturing ``table`` (a regular expression over names in the test's
        database) with its lake and checkpoint under ``tmp``."""

    def snapshot_settings(self, chunk: int = 1000, batch_rows: int = 4000) -> str:
        """The source's ``extra_source`` for a parallel snapshot of two workers."""

    def query(self, sql: str) -> list[tuple[Any, ...]]:
        """The rows of ``sql`` in the test's database, as tuples."""

    def accounts_rows(self) -> list[tuple[Any, ...]]:
        """The ``accounts`` table by id, its ``flags`` as an integer."""

    def place(self, source: dict[str, Any]) -> Any:
        """A change log row's place in the log (by its ``source`` field), ordered."""

    def log_event(self, source: dict[str, Any]) -> Any:
        """A change log row's event in the log, one per row event, in log order."""

    def origin(self, table: str) -> tuple[str, str | None, str]:
        """The (db, schema, table) a change log row of ``table`` names as its source."""

    def pin(self, meta: dict[str, Any]) -> Any:
        """A finished split's snapshot point (the ``high`` of its record)."""

    def lake(self, tmp: Path) -> Path:
        """The folder of the test's tables in the lake under ``tmp``."""


@dataclass(frozen=True)
class MariaDBSource:
    server: ThrowawayMariaDB
    database: str
    name: str = "mysql"
    dialect: Dialect = MARIADB
    pins_one_snapshot: bool = False
    full_before_image: bool = True
    capture_signal_table: bool = False

    @property
    def schema(self) -> str:
        return self.database

    def create_accounts(self) -> None:
        self.server.execute(*(s.format(db=self.database) for s in DDL))

    def create_items(self, table: str) -> None:
        self.server.execute(ITEMS.format(db=self.database).replace(".items", f".{table}"))

    def create_signal_table(self, table: str) -> str:
        self.server.execute(signal_table_ddl(f"{self.database}.{table}"))
        return f"{self.database}.{table}"

    def numbers(self, count: int) -> str:
        return f"seq_1_to_{count}"

    def write_before_capture(self, *sql: str) -> None:
        with contextlib.closing(self.server.connect(self.database)) as conn, conn.cursor() as cur:
            cur.execute("SET sql_log_bin = 0")
            for statement in sql:
                cur.execute(statement)

    def start_capturing(self, tables: list[str]) -> str:
        return log_end(self.server)

    def config(self, tmp: Path, table: str, startup: str, extra_source: str = "") -> Path:
        pattern = rf"{self.database}\.{table}"
        return write_config(tmp, self.server, pattern, startup=startup, extra_source=extra_source)

    def snapshot_settings(self, chunk: int = 1000, batch_rows: int = 4000) -> str:
        return (
            ", server_id: '7201-7210', snapshot: {"
            f"chunk_size: {chunk}, parallelism: 2, batch_rows: {batch_rows}}}"
        )

    def query(self, sql: str) -> list[tuple[Any, ...]]:
        return [tuple(r) for r in self.server.query(sql, self.database)]

    def accounts_rows(self) -> list[tuple[Any, ...]]:
        rows = self.query(f"SELECT {', '.join(ACCOUNTS)} FROM accounts ORDER BY id")
        return [
            (*r[:5], int.from_bytes(f, "big") if isinstance(f := r[5], bytes) else f) for r in rows
        ]

    def place(self, source: dict[str, Any]) -> tuple[int, int]:
        """The binlog file's number and the position (a snapshot row: its high watermark)."""
        return (int(source["file"].rsplit(".", 1)[1]), source["pos"])

    def pin(self, meta: dict[str, Any]) -> Any:
        return (meta["high"]["file"], meta["high"]["pos"])

    def log_event(self, source: dict[str, Any]) -> tuple[str, int, int]:
        """(file, pos, row) of the row's event in the binlog."""
        return (source["file"], source["pos"], source["row"])

    def origin(self, table: str) -> tuple[str, str | None, str]:
        return (self.database, None, table)

    def lake(self, tmp: Path) -> Path:
        return tmp / "lake" / self.database


@dataclass(frozen=True)
class PostgresSource:
    server: ThrowawayPostgres
    database: str
    name: str = "postgres"
    schema: str = "public"
    dialect: Dialect = POSTGRES
    pins_one_snapshot: bool = True
    full_before_image: bool = False  # REPLICA IDENTITY DEFAULT: a delete's key only
    capture_signal_table: bool = True  # signals are read from the slot's stream

    def create_accounts(self) -> None:
        self.server.execute(*PG_DDL, database=self.database)

    def create_items(self, table: str) -> None:
        self.server.execute(PG_ITEMS.replace("items", table), database=self.database)

    def create_signal_table(self, table: str) -> str:
        self.server.execute(SIGNAL_TABLE_DDL.format(name=table), database=self.database)
        return f"public.{table}"

    def numbers(self, count: int) -> str:
        return f"generate_series(1, {count}) AS seq"

    def write_before_capture(self, *sql: str) -> None:
        self.server.execute(*sql, database=self.database)

    def start_capturing(self, tables: list[str]) -> str:
        """A publication of ``tables`` and the checkpoint's slot: every write from here on is
        in the log the pipeline reads."""
        self.server.execute(
            f"CREATE PUBLICATION {SLOT} FOR TABLE {', '.join(tables)}",
            f"SELECT pg_create_logical_replication_slot('{SLOT}', 'pgoutput')",
            database=self.database,
        )
        return "earliest"

    def config(self, tmp: Path, table: str, startup: str, extra_source: str = "") -> Path:
        return write_config(
            tmp, self.server, rf"public\.{table}", user=self.server.user,
            password=self.server.password, startup=startup, kind="postgres",
            extra_source=f", database: {self.database}{extra_source}",
        )  # fmt: skip

    def snapshot_settings(self, chunk: int = 1000, batch_rows: int = 4000) -> str:
        return f", snapshot: {{chunk_size: {chunk}, parallelism: 2, batch_rows: {batch_rows}}}"

    def query(self, sql: str) -> list[tuple[Any, ...]]:
        return [tuple(r) for r in self.server.query(sql, self.database)]

    def accounts_rows(self) -> list[tuple[Any, ...]]:
        return self.query(f"SELECT {', '.join(ACCOUNTS)} FROM accounts ORDER BY id")

    def place(self, source: dict[str, Any]) -> int:
        """A change's commit LSN, a snapshot row's point."""
        return int(source["lsn"])

    def pin(self, meta: dict[str, Any]) -> Any:
        return meta["high"]["lsn"]

    def log_event(self, source: dict[str, Any]) -> str:
        """The row's position text in the WAL."""
        return str(source["position"])

    def origin(self, table: str) -> tuple[str, str | None, str]:
        return (self.database, "public", table)

    def slots(self) -> list[tuple[Any, ...]]:
        return self.query("SELECT slot_name FROM pg_replication_slots")

    def lake(self, tmp: Path) -> Path:
        return tmp / "lake" / "public"
