"""What an end-to-end test needs of a database, so one suite runs against every source.

An end-to-end test drives ``sparkcdc run`` on a pipeline file and compares the lake with the
database. Each :class:`E2ESource` holds only what differs between databases: the server and the
test's own database on it, the pipeline file's source settings, the workload's DDL and SQL
dialect, how to start capturing (MariaDB: the binlog's end now; PostgreSQL: a publication and
the checkpoint's slot), where a table lands in the lake, how to read the source's rows, and
whether the snapshot reads every chunk in one pinned snapshot (PostgreSQL's exported snapshot)
or corrects each chunk in a watermark window (MariaDB), and the log's own life: its end, a new
file of it, its positions, losing it (MariaDB purges binlogs, PostgreSQL drops the slot) and
reclaiming what the pipeline no longer needs.

The ``source`` fixture (``tests/e2e/conftest.py``) is parametrised over the sources, marked with
their server's marker (``mariadb``, ``postgres``). A third database gets the whole suite by
adding its class here and its parameter there. A test that loses or reclaims the log takes
``own_source`` instead: the same source on a server of the test's own (each class's
``on_own_server``).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from sparkcdc.snapshot.signals import SIGNAL_TABLE_DDL, signal_table_ddl
from sparkcdc.sources.mysql.offset import BinlogOffset, file_sequence
from sparkcdc.sources.mysql.throwaway import ThrowawayMariaDB, throwaway_mariadb
from sparkcdc.sources.postgres.offset import LsnOffset
from sparkcdc.sources.postgres.throwaway import ThrowawayPostgres, throwaway_postgres
from sparkcdc.sources.postgres.wire.lsn import format_lsn, parse_lsn
from tests.e2e.cli import log_end, purge_binlogs_to, write_config, write_pg_config
from tests.e2e.snapshot_workload import ITEMS, PG_ITEMS, Server
from tests.e2e.workload import DDL, MARIADB, PG_DDL, POSTGRES, Dialect

SLOT = "sparkcdc_checkpoint"  # PostgreSQL's slot is named after the checkpoint folder

ACCOUNTS = ("id", "version", "balance", "owner", "updated", "flags")


@dataclass(frozen=True)
class TextKeyed:
    """A table keyed by a column that is no integer, for ``sparkcdc verify``: how to make it,
    one of its rows deleted from the replica and one changed at the source by hand, and what
    verify's report then says of them."""

    table: str
    create: tuple[str, ...]
    replica_delete: str
    """The predicate of the row deleted from the replica."""
    source_update: str
    report: tuple[str, ...]
    """Fragments of verify's report on the two edits."""


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
    text_keyed: TextKeyed
    """A table keyed by text (MariaDB: a case-insensitive string; PostgreSQL: a uuid)."""

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

    def config(
        self, tmp: Path, table: str, startup: str, extra_source: str = "", extra_sink: str = ""
    ) -> Path:
        """A pipeline file capturing ``table`` (a regular expression over names in the test's
        database) with its lake and checkpoint under ``tmp`` (``extra_*``: more keys of the
        source's and the sink's settings, ``, key: value``)."""

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

    def execute(self, *sql: str) -> None:
        """Run ``sql`` in the test's database, in the log the pipeline reads."""

    def tables(self, table: str) -> str:
        """The ``source.tables`` pattern of ``table`` (a regular expression over names in the
        test's database)."""

    def qualified(self, table: str) -> str:
        """``table``'s name in a statement run without the test's database as the default."""

    def missing_table_words(self, table: str) -> str:
        """The server's words for a statement on ``table`` (:meth:`qualified`), which does not
        exist."""

    def lose_log(self) -> None:
        """Make the server lose the log after a stopped pipeline's position (MariaDB: binlogs
        purged up to a new file; PostgreSQL: the checkpoint's slot dropped)."""

    def oldest_held(self) -> str:
        """The oldest position the server holds, as the sentence for a lost log names it."""

    def create_other_database(self, name: str) -> None:
        """A database ``name`` on the server with a table ``t (id, pad)`` whose ``id`` the
        server numbers: writes the pipeline does not capture."""

    def log_end(self) -> Any:
        """Where the log ends now, ordered as :meth:`place` and :meth:`log_place`."""

    def new_log_file(self) -> Any:
        """Close the log file being written and begin a new one (MariaDB: ``FLUSH BINARY
        LOGS``; PostgreSQL: ``pg_switch_wal()``); the place it begins at."""

    def log_place(self, position: Mapping[str, Any]) -> Any:
        """The place of ``position``, a source offset as Spark's checkpoint holds it."""

    def log_released(self, place: Any) -> bool:
        """Whether the server keeps the log at ``place`` for the running pipeline no more
        (MariaDB: a binlog is kept for no reader; PostgreSQL: a transaction and a checkpoint,
        asked for here, recycled ``place``'s WAL segment once the slot confirmed past it)."""

    def reclaim_log(self, upto: Mapping[str, Any]) -> Any:
        """Let the server drop the log a stopped pipeline committed past ``upto`` no longer
        needs (MariaDB: binlogs purged up to ``upto``'s file after three new ones; PostgreSQL:
        a checkpoint); the place the oldest log the server keeps begins at."""


TAGS = TextKeyed(
    "tags",
    (
        "CREATE TABLE tags (name VARCHAR(20) PRIMARY KEY, n INT) COLLATE utf8mb4_general_ci",
        "INSERT INTO tags SELECT CONCAT(IF(seq % 2, 'Tag-', 'tag-'), seq), seq FROM seq_1_to_700",
    ),
    "name = 'tag-6'",
    "UPDATE tags SET n = -1 WHERE name = 'Tag-7'",
    ("missing from the replica: 1: name='tag-6'", "name='Tag-7' (n)"),
)
NOTES = TextKeyed(
    "notes",
    (
        "CREATE TABLE notes (code uuid PRIMARY KEY, body text, at timestamptz)",
        "INSERT INTO notes SELECT md5(i::text)::uuid, 'note ' || i, "
        "'2024-01-01'::timestamptz + i * interval '1 hour' FROM generate_series(1, 300) i",
    ),
    "body = 'note 6'",
    "UPDATE notes SET body = 'edited' WHERE body = 'note 7'",
    ("missing from the replica: 1: code=", "different: 1: code=", "(body)"),
)


@dataclass(frozen=True)
class MariaDBSource:
    server: ThrowawayMariaDB
    database: str
    name: str = "mysql"
    dialect: Dialect = MARIADB
    pins_one_snapshot: bool = False
    full_before_image: bool = True
    capture_signal_table: bool = False
    text_keyed: TextKeyed = TAGS

    @classmethod
    @contextlib.contextmanager
    def on_own_server(cls) -> Iterator[MariaDBSource]:
        """The source on a server of its own, in a database ``shop``."""
        with throwaway_mariadb() as server:
            server.execute("CREATE DATABASE shop")
            yield cls(server, "shop")

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

    def config(
        self, tmp: Path, table: str, startup: str, extra_source: str = "", extra_sink: str = ""
    ) -> Path:
        pattern = self.tables(table)
        return write_config(
            tmp, self.server, pattern, startup=startup, extra_source=extra_source,
            extra_sink=extra_sink,
        )  # fmt: skip

    def tables(self, table: str) -> str:
        return rf"{self.database}\.{table}"

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

    def execute(self, *sql: str) -> None:
        self.server.execute(*sql, database=self.database)

    def qualified(self, table: str) -> str:
        return f"`{self.database}`.{table}"

    def missing_table_words(self, table: str) -> str:
        return f"error 1146: Table '{self.database}.{table}' doesn't exist"

    def lose_log(self) -> None:
        self.server.execute("FLUSH BINARY LOGS", "FLUSH BINARY LOGS")
        purge_binlogs_to(self.server, str(self.server.query("SHOW BINARY LOGS")[-1][0]))

    def oldest_held(self) -> str:
        return f"{self.server.query('SHOW BINARY LOGS')[0][0]}:4"

    def create_other_database(self, name: str) -> None:
        self.server.execute(
            f"CREATE DATABASE {name}",
            f"CREATE TABLE {name}.t (id INT AUTO_INCREMENT PRIMARY KEY, pad VARCHAR(100))",
        )

    def log_end(self) -> tuple[int, int]:
        file, pos = self.server.query("SHOW MASTER STATUS")[0][:2]
        return (file_sequence(str(file)), int(pos))

    def new_log_file(self) -> tuple[int, int]:
        self.server.execute("FLUSH BINARY LOGS")
        return (self.log_end()[0], 0)

    def log_place(self, position: Mapping[str, Any]) -> tuple[int, int]:
        return BinlogOffset.from_json(position).position_key

    def log_released(self, place: Any) -> bool:
        return True

    def reclaim_log(self, upto: Mapping[str, Any]) -> tuple[int, int]:
        self.server.execute(*["FLUSH BINARY LOGS"] * 3)
        purge_binlogs_to(self.server, str(upto["file"]))
        return (file_sequence(str(self.server.query("SHOW BINARY LOGS")[0][0])), 4)


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
    text_keyed: TextKeyed = NOTES

    @classmethod
    @contextlib.contextmanager
    def on_own_server(cls) -> Iterator[PostgresSource]:
        """The source on a server of its own, in a database ``shop``."""
        with throwaway_postgres() as server:
            server.create_database("shop")
            yield cls(server, "shop")

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

    def config(
        self, tmp: Path, table: str, startup: str, extra_source: str = "", extra_sink: str = ""
    ) -> Path:
        return write_pg_config(
            tmp, self.server, self.database, self.tables(table), startup=startup,
            extra_source=extra_source, extra_sink=extra_sink,
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

    def tables(self, table: str) -> str:
        return rf"public\.{table}"

    def execute(self, *sql: str) -> None:
        self.server.execute(*sql, database=self.database)

    def qualified(self, table: str) -> str:
        return f"public.{table}"

    def missing_table_words(self, table: str) -> str:
        return f'relation "public.{table}" does not exist'

    def lose_log(self) -> None:
        self.execute(f"SELECT pg_drop_replication_slot('{SLOT}')")

    def oldest_held(self) -> str:
        [(lsn,)] = self.query(
            f"SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = '{SLOT}'"
        )
        return f"{format_lsn(parse_lsn(lsn))} (the confirmed position of slot {SLOT})"

    def create_other_database(self, name: str) -> None:
        self.server.create_database(name)
        self.server.execute("CREATE TABLE t (id serial PRIMARY KEY, pad text)", database=name)

    def log_end(self) -> int:
        return parse_lsn(self.query("SELECT pg_current_wal_lsn()::text")[0][0])

    def new_log_file(self) -> int:
        """Then a checkpoint: its record of the running transactions in the new file lets the
        slot move its restart position there once the pipeline confirms past it."""
        self.execute("SELECT pg_switch_wal()", "CHECKPOINT")
        return self.log_end()

    def log_place(self, position: Mapping[str, Any]) -> int:
        return LsnOffset.from_json(position).lsn

    def log_released(self, place: Any) -> bool:
        """A transaction id taken moves the slot's catalog xmin at the checkpoint's record of
        running transactions, and with it the WAL the server keeps for the slot."""
        self.execute("SELECT txid_current()", "CHECKPOINT")
        [(gone,)] = self.query(
            f"SELECT min(name) > pg_walfile_name('{format_lsn(place)}') FROM pg_ls_waldir() "
            "WHERE name ~ '^[0-9A-F]{24}$'"
        )
        time.sleep(0.5)
        return bool(gone)

    def reclaim_log(self, upto: Mapping[str, Any]) -> int:
        self.execute("CHECKPOINT")
        [(oldest, size)] = self.query(
            "SELECT min(name), (SELECT setting::bigint FROM pg_settings "
            "WHERE name = 'wal_segment_size') FROM pg_ls_waldir() WHERE name ~ '^[0-9A-F]{24}$'"
        )
        return (int(oldest[8:16], 16) << 32) + int(oldest[16:], 16) * size
