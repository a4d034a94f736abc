"""Bad input gets one clear sentence, a non-zero exit, and moves no offset.

Each case runs the real command line against the real server; afterwards the checkpoint holds no
committed offset (nothing was delivered, so nothing may be marked as delivered).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sparkcdc.sources.mysql.throwaway import ThrowawayMariaDB, free_port
from tests.e2e.cli import run, write_config

pytestmark = [pytest.mark.mariadb]


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


@pytest.fixture
def table(mariadb: ThrowawayMariaDB, db: str) -> str:
    mariadb.execute(
        f"CREATE TABLE {db}.t (id INT PRIMARY KEY, v INT)", f"INSERT INTO {db}.t VALUES (1, 1)"
    )
    return rf"{db}\.t"


def test_wrong_password(mariadb: ThrowawayMariaDB, table: str, tmp_path: Path) -> None:
    cfg = write_config(tmp_path, mariadb, table, password="not-the-password")
    fails_with(cfg, "root", "password")
    assert committed_offsets(tmp_path) == []


def test_nothing_listens_on_the_port(mariadb: ThrowawayMariaDB, table: str, tmp_path: Path) -> None:
    cfg = write_config(tmp_path, mariadb, table)
    cfg.write_text(cfg.read_text().replace(f"port: {mariadb.port}", f"port: {free_port()}"))
    fails_with(cfg, "source.port", command="check")


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


def test_binlog_format_not_row(mariadb: ThrowawayMariaDB, table: str, tmp_path: Path) -> None:
    cfg = write_config(tmp_path, mariadb, table)
    mariadb.execute("SET GLOBAL binlog_format = 'STATEMENT'")
    try:
        fails_with(cfg, "binlog_format", command="check")
    finally:
        mariadb.execute("SET GLOBAL binlog_format = 'ROW'")


def test_table_filter_matching_nothing(mariadb: ThrowawayMariaDB, db: str, tmp_path: Path) -> None:
    cfg = write_config(tmp_path, mariadb, rf"{db}\.no_such_table")
    fails_with(cfg, "no_such_table")


def test_table_without_key(mariadb: ThrowawayMariaDB, db: str, tmp_path: Path) -> None:
    mariadb.execute(f"CREATE TABLE {db}.heap (a INT, b INT)")
    cfg = write_config(tmp_path, mariadb, rf"{db}\.heap")
    fails_with(cfg, "heap", "key_columns")


def test_table_without_key_to_snapshot(mariadb: ThrowawayMariaDB, db: str, tmp_path: Path) -> None:
    mariadb.execute(f"CREATE TABLE {db}.heap (a INT, b INT)")
    cfg = write_config(tmp_path, mariadb, rf"{db}\.heap", startup="initial")
    fails_with(cfg, "heap", "source.snapshot.chunk_key_columns", command="check")


def test_purged_start_position(mariadb: ThrowawayMariaDB, table: str, tmp_path: Path) -> None:
    cfg = write_config(tmp_path, mariadb, table, startup="position:mysql-bin.000999:4")
    fails_with(cfg, "mysql-bin.000999")
    assert committed_offsets(tmp_path) == []


def test_unknown_startup_mode(mariadb: ThrowawayMariaDB, table: str, tmp_path: Path) -> None:
    cfg = write_config(tmp_path, mariadb, table, startup="yesterday")
    fails_with(cfg, "source.startup", command="check")


def test_malformed_yaml(tmp_path: Path) -> None:
    cfg = tmp_path / "pipeline.yaml"
    cfg.write_text("source: {type: mysql, host: [unclosed\nsink: {}\n")
    fails_with(cfg, "line", command="check")
