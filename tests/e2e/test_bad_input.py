"""Bad input gets one clear sentence, its exit status, and moves no offset.

Each case runs the real command line against a real server. Every refusal ``sparkcdc run``
makes before Spark starts is made by ``sparkcdc check`` too, with the same sentence and exit
status (both call :func:`sparkcdc.sources.readiness.check_source`), and neither changes
anything on the server: :func:`refused` runs both and checks that Spark never started. A few
cases run ``run`` in a process of its own through to the end; afterwards the checkpoint holds no
committed offset (nothing was delivered, so nothing may be marked as delivered).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from sparkcdc.snapshot.signals import SIGNAL_TABLE_DDL, signal_table_ddl
from sparkcdc.sources.mysql.throwaway import ThrowawayMariaDB, free_port
from sparkcdc.sources.postgres.throwaway import ThrowawayPostgres
from tests.e2e.cli import in_process, run, write_config

RUNTIME, CONFIG = 2, 78
PUBLICATION = "sparkcdc_checkpoint"  # the default: named after the checkpoint folder
MARIADB, POSTGRES = pytest.mark.mariadb, pytest.mark.postgres


def committed_offsets(tmp: Path) -> list[Path]:
    commits = tmp / "checkpoint" / "spark" / "commits"
    return sorted(commits.iterdir()) if commits.exists() else []


def fails_with(cfg: Path, *fragments: str, command: str = "run") -> str:
    code, out = run(cfg, *(["--available-now"] if command == "run" else []), command=command)
    assert code != 0, out
    last = out.strip().splitlines()[-1] if out.strip() else ""
    for fragment in fragments:
        assert fragment.lower() in last.lower(), f"{fragment!r} not in the last line: {out}"
    assert "Traceback" not in out, out
    return last


def refused(cfg: Path, code: int, *fragments: str) -> str:
    """``check`` and ``run`` both refuse ``cfg`` with exit status ``code`` and the same one
    sentence holding ``fragments``, ``run`` before Spark starts; the sentence."""
    said = []
    for argv in (["check", str(cfg)], ["run", str(cfg), "--available-now", "--quiet"]):
        status, out, err = in_process(*argv)
        assert (status, out) == (code, ""), (argv, status, err)
        assert err.startswith("sparkcdc: ") and err.count("\n") == 1, err
        assert "Traceback" not in err
        for fragment in fragments:
            assert fragment in err, f"{fragment!r} not in {err!r}"
        said.append(err.strip())
    assert said[0] == said[1]
    assert not (cfg.parent / "checkpoint" / "spark").exists()  # Spark never started
    return said[0][len("sparkcdc: ") :]


def passes_check(cfg: Path) -> str:
    status, out, err = in_process("check", str(cfg))
    assert status == 0 and out.startswith("ok: "), err
    return out


# -- MariaDB ----------------------------------------------------------------------------------


@pytest.fixture
def table(mariadb: ThrowawayMariaDB, db: str) -> str:
    mariadb.execute(
        f"CREATE TABLE {db}.t (id INT PRIMARY KEY, v INT)", f"INSERT INTO {db}.t VALUES (1, 1)"
    )
    return rf"{db}\.t"


@MARIADB
def test_wrong_password(mariadb: ThrowawayMariaDB, table: str, tmp_path: Path) -> None:
    cfg = write_config(tmp_path, mariadb, table, password="not-the-password")
    fails_with(cfg, "root", "password")
    assert committed_offsets(tmp_path) == []


@MARIADB
def test_nothing_listens_on_the_port(mariadb: ThrowawayMariaDB, table: str, tmp_path: Path) -> None:
    cfg = write_config(tmp_path, mariadb, table)
    cfg.write_text(cfg.read_text().replace(f"port: {mariadb.port}", f"port: {free_port()}"))
    fails_with(cfg, "source.port", command="check")


@MARIADB
def test_user_without_replication_privileges(
    mariadb: ThrowawayMariaDB, table: str, tmp_path: Path
) -> None:
    mariadb.execute(
        "CREATE USER IF NOT EXISTS 'norepl'@'%' IDENTIFIED BY 'pw'",
        "GRANT SELECT ON *.* TO 'norepl'@'%'",
    )
    cfg = write_config(tmp_path, mariadb, table, user="norepl", password="pw")
    fails_with(cfg, "REPLICATION", command="check")
    fails_with(cfg, "REPLICATION")
    assert committed_offsets(tmp_path) == []


@MARIADB
def test_user_who_may_not_read_the_tables(
    mariadb: ThrowawayMariaDB, db: str, table: str, tmp_path: Path
) -> None:
    """The server lists no table a user may not read, so the pattern matches nothing."""
    mariadb.execute(
        "CREATE USER IF NOT EXISTS 'elsewhere'@'%' IDENTIFIED BY 'pw'",
        "GRANT REPLICATION SLAVE, BINLOG MONITOR ON *.* TO 'elsewhere'@'%'",
        "GRANT SELECT ON mysql.* TO 'elsewhere'@'%'",
    )
    try:
        cfg = write_config(tmp_path, mariadb, table, user="elsewhere", password="pw")
        refused(cfg, CONFIG, f"No table on {mariadb.host}:{mariadb.port} matches source.tables",
                "the server lists only those user 'elsewhere' may read")  # fmt: skip
    finally:
        mariadb.execute("DROP USER IF EXISTS 'elsewhere'@'%'")


@MARIADB
@pytest.mark.parametrize(
    ("variable", "value", "expected"),
    [("binlog_format", "STATEMENT", "ROW"), ("binlog_row_image", "MINIMAL", "FULL")],
)
def test_binlog_not_ready(
    mariadb: ThrowawayMariaDB, table: str, tmp_path: Path, variable: str, value: str, expected: str
) -> None:
    cfg = write_config(tmp_path, mariadb, table)
    mariadb.execute(f"SET GLOBAL {variable} = '{value}'")
    try:
        said = refused(cfg, RUNTIME, f"{variable} is {value} on ", f"needs {expected}")
        assert f"SET GLOBAL {variable}={expected}" in said
    finally:
        mariadb.execute(f"SET GLOBAL {variable} = '{expected}'")


@MARIADB
def test_table_filter_matching_nothing(mariadb: ThrowawayMariaDB, db: str, tmp_path: Path) -> None:
    cfg = write_config(tmp_path, mariadb, rf"{db}\.no_such_table")
    refused(cfg, CONFIG, "No table on ", "no_such_table", "fix them or create the tables")
    fails_with(cfg, "no_such_table")  # the same from a process of its own
    assert committed_offsets(tmp_path) == []


@MARIADB
def test_table_without_key(mariadb: ThrowawayMariaDB, db: str, tmp_path: Path) -> None:
    mariadb.execute(f"CREATE TABLE {db}.heap (a INT, b INT)")
    cfg = write_config(tmp_path, mariadb, rf"{db}\.heap")
    fails_with(cfg, "heap", "key_columns")


@MARIADB
def test_table_without_key_to_snapshot(mariadb: ThrowawayMariaDB, db: str, tmp_path: Path) -> None:
    mariadb.execute(f"CREATE TABLE {db}.heap (a INT, b INT)")
    cfg = write_config(tmp_path, mariadb, rf"{db}\.heap", startup="initial")
    refused(cfg, RUNTIME, "heap", "source.snapshot.chunk_key_columns")


@MARIADB
def test_purged_start_position(mariadb: ThrowawayMariaDB, table: str, tmp_path: Path) -> None:
    cfg = write_config(tmp_path, mariadb, table, startup="position:mysql-bin.000999:4")
    refused(cfg, RUNTIME, "mysql-bin.000999")
    fails_with(cfg, "mysql-bin.000999")
    assert committed_offsets(tmp_path) == []


@MARIADB
def test_unknown_startup_mode(mariadb: ThrowawayMariaDB, table: str, tmp_path: Path) -> None:
    cfg = write_config(tmp_path, mariadb, table, startup="yesterday")
    fails_with(cfg, "source.startup", command="check")


@MARIADB
def test_malformed_yaml(tmp_path: Path) -> None:
    cfg = tmp_path / "pipeline.yaml"
    cfg.write_text("source: {type: mysql, host: [unclosed\nsink: {}\n")
    fails_with(cfg, "line", command="check")


# -- both databases ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Shop:
    """``<name>.orders`` on a server: MariaDB's database of the test's own (``name``), or
    schema ``shop`` of PostgreSQL's database of the test's own (``database``)."""

    kind: str
    server: ThrowawayMariaDB | ThrowawayPostgres
    name: str
    database: str = ""

    def config(self, tmp: Path, tables: list[str], extra: str = "") -> Path:
        """A pipeline file for ``tables``, written over ``shop`` (put in ``name``'s stead)."""
        if self.database:
            extra = f", database: {self.database}{extra}"
        return write_config(
            tmp, self.server, [t.replace("shop", self.name, 1) for t in tables], kind=self.kind,
            user=self.server.user, password=self.server.password, extra_source=extra,
        )  # fmt: skip


@pytest.fixture(
    params=[pytest.param("mysql", marks=MARIADB), pytest.param("postgres", marks=POSTGRES)]
)
def shop(request: pytest.FixtureRequest) -> Shop:
    if request.param == "mysql":
        db = request.getfixturevalue("db")
        found = Shop("mysql", request.getfixturevalue("mariadb"), db)
        found.server.execute(f"CREATE TABLE {db}.orders (id INT PRIMARY KEY)")
        return found
    database = request.getfixturevalue("pgdb")
    found = Shop("postgres", request.getfixturevalue("postgres"), "shop", database)
    found.server.execute("CREATE SCHEMA shop", "CREATE TABLE shop.orders (id INT PRIMARY KEY)",
                         database=database)  # fmt: skip
    return found


def test_a_pattern_of_several_matching_nothing_is_named(
    shop: Shop, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    name = shop.name
    cfg = shop.config(tmp_path, [r"shop\.orders", r"shop\.ordres"])
    said = refused(cfg, CONFIG, f"The source.tables pattern '{name}\\\\.ordres' matches no table")
    assert said.endswith(
        "or set source.on_unmatched: warn to start with the tables the others match."
    )
    cfg = shop.config(tmp_path, [r"shop\.orders", r"shop\.ordres"], ", on_unmatched: warn")
    with caplog.at_level(logging.WARNING, logger="sparkcdc.source"):
        assert passes_check(cfg).startswith("ok: 1 table ready")
    assert f"source.tables '{name}\\\\.ordres' on " in caplog.text
    cfg = shop.config(tmp_path, [r"shop\.ordres"], ", on_unmatched: warn")
    refused(cfg, CONFIG, "No table ")  # one table at least, whatever the setting


def test_a_missing_signal_table_is_named_with_its_ddl(shop: Shop, tmp_path: Path) -> None:
    signals = f"{shop.name}.signals"
    cfg = shop.config(tmp_path, [r"shop\.orders"], f", signal_table: {signals}")
    mysql = shop.kind == "mysql"
    ddl = signal_table_ddl(signals) if mysql else SIGNAL_TABLE_DDL.format(name=signals)
    said = refused(cfg, CONFIG, f"The signal table {signals} does not exist ", ddl)
    assert said.endswith("INSERT on it.")


# -- PostgreSQL -------------------------------------------------------------------------------


@pytest.fixture
def pg(postgres: ThrowawayPostgres, pgdb: str) -> ThrowawayPostgres:
    """The server, with ``shop.orders`` and ``shop.items`` in the test's own database."""
    postgres.execute(
        "CREATE SCHEMA shop",
        "CREATE TABLE shop.orders (id INT PRIMARY KEY)",
        "CREATE TABLE shop.items (id INT PRIMARY KEY)",
        database=pgdb,
    )
    return postgres


@pytest.fixture
def reader(pg: ThrowawayPostgres, pgdb: str) -> Iterator[str]:
    """A role that may replicate and read schema shop but owns nothing (password 'pw')."""
    name = f"reader_{uuid.uuid4().hex[:8]}"
    pg.execute(f"CREATE ROLE {name} LOGIN REPLICATION PASSWORD 'pw'")
    pg.execute(f"GRANT USAGE ON SCHEMA shop TO {name}",
               f"GRANT SELECT ON ALL TABLES IN SCHEMA shop TO {name}", database=pgdb)  # fmt: skip
    yield name
    pg.execute(f"DROP OWNED BY {name}", database=pgdb)
    pg.execute(f"DROP ROLE {name}")


def pg_config(
    tmp: Path, pg: ThrowawayPostgres, pgdb: str, tables: list[str], user: str = "", extra: str = ""
) -> Path:
    return write_config(
        tmp, pg, tables, kind="postgres", user=user or pg.user,
        password="pw" if user else pg.password, extra_source=f", database: {pgdb}{extra}",
    )  # fmt: skip


def slots(pg: ThrowawayPostgres) -> list[str]:
    return [str(s) for (s,) in pg.query("SELECT slot_name FROM pg_replication_slots")]


@POSTGRES
def test_publication_the_user_may_not_make(
    pg: ThrowawayPostgres, pgdb: str, reader: str, tmp_path: Path
) -> None:
    """The three times a first trial met it: the first run, a table added to source.tables,
    the signal table; each refused by check with the statement an administrator runs."""
    cfg = pg_config(tmp_path, pg, pgdb, [r"shop\.orders"], reader)
    create = (
        f"CREATE PUBLICATION {PUBLICATION} FOR TABLE shop.orders WITH "
        "(publish_via_partition_root = true)"
    )
    said = refused(cfg, RUNTIME, f"Publication {PUBLICATION} does not exist in database "
                   f"'{pgdb}'", f"user '{reader}' may not change that", create)  # fmt: skip
    assert said.endswith("(or name another publication in source.publication).")
    pg.execute(create, database=pgdb)
    passes_check(cfg)
    cfg = pg_config(tmp_path, pg, pgdb, [r"shop\.orders", r"shop\.items"], reader)
    refused(cfg, RUNTIME, f"Publication {PUBLICATION} lacks shop.items on",
            f"run ALTER PUBLICATION {PUBLICATION} ADD TABLE shop.items (")  # fmt: skip
    pg.execute(SIGNAL_TABLE_DDL.format(name="shop.signals"), database=pgdb)
    pg.execute(f"GRANT SELECT ON shop.signals TO {reader}", database=pgdb)
    signals = ", signal_table: shop.signals"
    cfg = pg_config(tmp_path, pg, pgdb, [r"shop\.orders"], reader, signals)
    refused(cfg, RUNTIME, f"run ALTER PUBLICATION {PUBLICATION} ADD TABLE shop.signals (")
    pg.execute(f"ALTER PUBLICATION {PUBLICATION} ADD TABLE shop.signals", database=pgdb)
    passes_check(cfg)
    assert PUBLICATION not in slots(pg)  # check made no slot


@POSTGRES
def test_check_changes_nothing_where_the_user_may_make_them(
    pg: ThrowawayPostgres, pgdb: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    for startup in ("initial", "earliest", "latest"):
        cfg = pg_config(tmp_path, pg, pgdb, [r"shop\..*"], extra=f", startup: {startup}")
        with caplog.at_level(logging.INFO, logger="sparkcdc.source"):
            assert passes_check(cfg).startswith("ok: 2 tables ready")
        assert f"the run does that with: CREATE PUBLICATION {PUBLICATION} FOR TABLE " in caplog.text
    assert pg.query("SELECT pubname FROM pg_publication", database=pgdb) == []
    assert PUBLICATION not in slots(pg)
    cfg = pg_config(tmp_path, pg, pgdb, [r"shop\..*"], extra=", startup: 'lsn:0/10'")
    refused(cfg, RUNTIME, "startup lsn:0/10 lies before the WAL's end on ",
            f"where replication slot {PUBLICATION}, still to be made, will start")  # fmt: skip
    assert PUBLICATION not in slots(pg)


@POSTGRES
def test_publication_leaving_changes_out(pg: ThrowawayPostgres, pgdb: str, tmp_path: Path) -> None:
    pg.execute(
        f"CREATE PUBLICATION {PUBLICATION} FOR TABLE shop.orders WITH (publish = 'insert')",
        database=pgdb,
    )
    cfg = pg_config(tmp_path, pg, pgdb, [r"shop\.orders"])
    refused(cfg, CONFIG, f"Publication {PUBLICATION} on ", "does not publish update, delete")


@POSTGRES
def test_slot_of_another_kind(pg: ThrowawayPostgres, pgdb: str, tmp_path: Path) -> None:
    pg.execute(
        f"SELECT pg_create_logical_replication_slot('{PUBLICATION}', 'test_decoding')",
        database=pgdb,
    )
    cfg = pg_config(tmp_path, pg, pgdb, [r"shop\.orders"])
    refused(cfg, RUNTIME, f"Replication slot {PUBLICATION} on ", "uses test_decoding")


@POSTGRES
def test_user_without_replication(
    pg: ThrowawayPostgres, pgdb: str, reader: str, tmp_path: Path
) -> None:
    pg.execute(f"ALTER ROLE {reader} NOREPLICATION")
    cfg = pg_config(tmp_path, pg, pgdb, [r"shop\.orders"], reader)
    refused(cfg, RUNTIME, f"User '{reader}' on ", f"ALTER ROLE {reader} REPLICATION")


@POSTGRES
def test_user_who_may_not_read_a_table(
    pg: ThrowawayPostgres, pgdb: str, reader: str, tmp_path: Path
) -> None:
    pg.execute(f"REVOKE SELECT ON shop.items FROM {reader}", database=pgdb)
    cfg = pg_config(tmp_path, pg, pgdb, [r"shop\..*"], reader)
    refused(cfg, RUNTIME, "lacks SELECT on shop.items", f"GRANT SELECT ON shop.items TO {reader}")


@POSTGRES
def test_table_whose_changes_cannot_be_published(
    pg: ThrowawayPostgres, pgdb: str, tmp_path: Path
) -> None:
    pg.execute("CREATE TABLE shop.heap (a INT, b INT)", database=pgdb)
    cfg = pg_config(tmp_path, pg, pgdb, [r"shop\.heap"], extra=', key_columns: {"shop.heap": a}')
    refused(cfg, RUNTIME, "Table shop.heap on ", "ALTER TABLE shop.heap REPLICA IDENTITY FULL")


@POSTGRES
def test_missing_database_is_named(pg: ThrowawayPostgres, tmp_path: Path) -> None:
    """source.database left out: the tables are looked for in database postgres."""
    cfg = write_config(tmp_path, pg, r"shop\.orders", kind="postgres", user=pg.user,
                       password=pg.password)  # fmt: skip
    said = refused(cfg, CONFIG, "No table in database 'postgres' on ")
    assert "tables are looked for in source.database only (postgres when it is not set)" in said


@POSTGRES
def test_a_database_the_server_lacks_is_the_files_error(
    pg: ThrowawayPostgres, tmp_path: Path
) -> None:
    cfg = write_config(tmp_path, pg, r"shop\.orders", kind="postgres", user=pg.user,
                       password=pg.password, extra_source=", database: no_such_db")  # fmt: skip
    refused(cfg, CONFIG, "has no database 'no_such_db'; check source.database.")
