"""``sparkcdc signal`` against real MariaDB and PostgreSQL servers: the row it inserts through
the table channel, the file it writes, and its refusals (exit status and sentence) of what it
can check at once: a table the pipeline does not capture, a ``--where`` the server rejects, a
missing signal table, a user who may not insert."""

from __future__ import annotations

import contextlib
import io
from dataclasses import dataclass
from pathlib import Path

import pytest

from sparkcdc.cli.main import run
from sparkcdc.snapshot.signals import (
    SIGNAL_TABLE_DDL,
    parse_signal,
    read_file_signals,
    signal_folder,
    signal_table_ddl,
)
from sparkcdc.sources.mysql.throwaway import ThrowawayMariaDB
from sparkcdc.sources.postgres.throwaway import ThrowawayPostgres
from tests.cases.command import sparkcdc as cli

USAGE, CONFIG, RUNTIME = 64, 78, 2


@dataclass
class Target:
    """A database of the test's own on one server: ``db`` holds ``orders`` (captured by
    ``db\\..*``) and, once made, the signal table ``db.signals``."""

    server: ThrowawayMariaDB | ThrowawayPostgres
    db: str
    kind: str  # mysql | postgres
    database: str | None = None  # PostgreSQL's database (db is a schema in it)

    def execute(self, *sql: str) -> None:
        self.server.execute(*sql, database=self.database or self.db)

    def count(self, table: str) -> int:
        found = self.server.query(f"SELECT COUNT(*) FROM {table}", database=self.database)
        return int(found[0][0])

    def elsewhere(self) -> str:
        """A table of the server that the pipeline does not capture."""
        if self.kind == "mysql":
            return "mysql.db"
        self.execute("CREATE TABLE public.other (id INT PRIMARY KEY)")
        return "public.other"

    def ddl(self, name: str) -> str:
        """The signal table's CREATE TABLE as its database writes it."""
        return (
            signal_table_ddl(name) if self.kind == "mysql" else SIGNAL_TABLE_DDL.format(name=name)
        )

    def pipeline_file(self, tmp_path: Path, signal_table: str | None = None) -> Path:
        s = self.server
        extra = f", database: {self.database}" if self.database else ""
        extra += f", signal_table: {signal_table}" if signal_table else ""
        cfg = tmp_path / "pipeline.yaml"
        cfg.write_text(
            f"source: {{type: {self.kind}, host: {s.host}, port: {s.port}, user: {s.user}, "
            f"password: '{s.password}', tables: ['{self.db}\\..*']{extra}}}\n"
            "sink: {path: ./lake}\npipeline: {checkpoint: ./cp}\n"
        )
        return cfg


@pytest.fixture(
    params=[
        pytest.param("mariadb", marks=pytest.mark.mariadb),
        pytest.param("postgres", marks=pytest.mark.postgres),
    ]
)
def target(request: pytest.FixtureRequest) -> Target:
    """The test's own database with ``orders`` in it, on MariaDB or PostgreSQL."""
    if request.param == "mariadb":
        found = Target(request.getfixturevalue("mariadb"), request.getfixturevalue("db"), "mysql")
    else:
        database = request.getfixturevalue("pgdb")
        found = Target(request.getfixturevalue("postgres"), "shop", "postgres", database)
        found.execute("CREATE SCHEMA shop")
    found.execute(f"CREATE TABLE {found.db}.orders (id INT PRIMARY KEY, status VARCHAR(10))")
    return found


def signal(cfg: Path, *args: str) -> tuple[int, str, str]:
    """``sparkcdc signal ACTION --config cfg ...`` in this process (the command line's own
    entry point, without an interpreter's start-up per call); exit status, stdout, stderr."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = run(["signal", *args[:1], "--config", str(cfg), *args[1:]])
    assert "Traceback" not in err.getvalue(), err.getvalue()
    return code, out.getvalue(), err.getvalue()


def test_execute_snapshot_is_inserted(tmp_path: Path, target: Target) -> None:
    name = f"{target.db}.signals"
    target.execute(target.ddl(name))
    orders = f"{target.db}.orders"
    cfg = target.pipeline_file(tmp_path, name)
    where = ["--where", "status = 'open'"]
    done = cli("signal", "execute-snapshot", "--config", str(cfg), "--tables", orders, *where)
    code, out, err = done.returncode, done.stdout, done.stderr  # a process of its own, once
    assert code == 0, err
    rows = target.server.query(f"SELECT id, type, data FROM {name}", database=target.database)
    assert len(rows) == 1
    sent = parse_signal(*rows[0])
    assert out == f"signal {sent.id} (execute-snapshot) sent to {name}\n"
    assert sent.type == "execute-snapshot" and sent.tables == (orders,)
    assert sent.condition(orders) == "status = 'open'"
    assert not (tmp_path / "cp").exists()  # nothing went to the file channel


def test_the_file_channel_checks_the_tables_too(tmp_path: Path, target: Target) -> None:
    cfg = target.pipeline_file(tmp_path)
    orders = f"{target.db}.orders"
    code, out, err = signal(cfg, "execute-snapshot", "--tables", orders, "--where", "id > 10")
    assert code == 0, err
    folder = signal_folder(tmp_path / "cp")
    (sent,) = read_file_signals(folder)
    assert out == f"signal {sent.id} (execute-snapshot) sent to {folder}\n"
    assert sent.tables == (orders,) and sent.condition(orders) == "id > 10"
    code, _, err = signal(cfg, "execute-snapshot", "--tables", f"{target.db}.gone")
    assert code == USAGE and f"--tables: {target.db}.gone is not captured" in err
    assert len(read_file_signals(folder)) == 1


def test_a_table_not_captured_is_refused(tmp_path: Path, target: Target) -> None:
    name = f"{target.db}.signals"
    target.execute(target.ddl(name))
    cfg = target.pipeline_file(tmp_path, name)
    orders, typo = f"{target.db}.orders", f"{target.db}.order"
    code, out, err = signal(cfg, "execute-snapshot", "--tables", orders, typo)
    assert (code, out) == (USAGE, "")
    assert err == (
        f"sparkcdc: --tables: {typo} is not captured by this pipeline on "
        f"{target.server.host}:{target.server.port} (source.tables matches {orders}, {name}); "
        "name captured tables, as db.table with the server's spelling, or widen source.tables "
        "and restart the pipeline first.\n"
    )
    other = target.elsewhere()
    code, _, err = signal(cfg, "stop-snapshot", "--tables", other)
    assert code == USAGE and f"--tables: {other} is not captured" in err
    assert target.count(name) == 0  # nothing was sent


@pytest.mark.parametrize(
    ("where", "says"),
    [
        ("nope > 1", "nope"),  # no such column
        ("status = ", "syntax"),
        ("id = 'x' AND", "syntax"),
    ],
)
def test_a_condition_the_server_rejects_is_refused(
    tmp_path: Path, target: Target, where: str, says: str
) -> None:
    name = f"{target.db}.signals"
    target.execute(target.ddl(name))
    cfg = target.pipeline_file(tmp_path, name)
    orders = f"{target.db}.orders"
    code, out, err = signal(cfg, "execute-snapshot", "--tables", orders, "--where", where)
    assert (code, out) == (USAGE, "")
    assert err.startswith(f"sparkcdc: --where {where!r} cannot filter {orders} on ")
    assert says in err.lower() and err.endswith("; fix the condition.\n")
    assert err.count("\n") == 1
    assert target.count(name) == 0


def test_a_missing_signal_table_is_named_with_its_ddl(tmp_path: Path, target: Target) -> None:
    name = f"{target.db}.signals"
    code, out, err = signal(target.pipeline_file(tmp_path, name), "pause-snapshot")
    assert (code, out) == (CONFIG, "")  # source.signal_table names no table
    assert err.startswith(f"sparkcdc: The signal table {name} does not exist ")
    assert target.ddl(name) in err and err.count("\n") == 1


def test_a_user_who_may_not_insert_is_told_the_grant(
    tmp_path: Path, mariadb: ThrowawayMariaDB, db: str
) -> None:
    target = Target(mariadb, db, "mysql")
    target.execute(f"CREATE TABLE {db}.orders (id INT PRIMARY KEY)")
    name = f"{db}.signals"
    mariadb.execute(
        signal_table_ddl(name),
        "CREATE USER IF NOT EXISTS 'sig_reader'@'%' IDENTIFIED BY 'pw'",
        f"GRANT SELECT ON `{db}`.* TO 'sig_reader'@'%'",
    )
    try:
        text = target.pipeline_file(tmp_path, name).read_text()
        cfg = tmp_path / "reader.yaml"
        cfg.write_text(
            text.replace(f"user: {mariadb.user}", "user: sig_reader").replace(
                f"password: '{mariadb.password}'", "password: pw"
            )
        )
        code, _, err = signal(cfg, "pause-snapshot")
        assert code == RUNTIME
        assert f"GRANT INSERT ON `{db}`.`signals` TO 'sig_reader'@'%'" in err
        assert "--channel file" in err
        assert target.count(name) == 0
    finally:
        mariadb.execute("DROP USER IF EXISTS 'sig_reader'@'%'")
