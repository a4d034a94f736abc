"""``sparkcdc signal`` through the table channel against a real MariaDB: the row it inserts,
and the sentence when the signal table is missing."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparkcdc.snapshot.signals import parse_signal, signal_table_ddl
from sparkcdc.sources.mysql.throwaway import ThrowawayMariaDB
from tests.unit.test_signals import cli

pytestmark = pytest.mark.mariadb


def pipeline_file(tmp_path: Path, mariadb: ThrowawayMariaDB, signal_table: str) -> Path:
    cfg = tmp_path / "pipeline.yaml"
    cfg.write_text(
        f"source: {{host: {mariadb.host}, port: {mariadb.port}, user: {mariadb.user}, "
        f"password: '{mariadb.password}', tables: ['shop\\\\..*'], "
        f"signal_table: {signal_table}}}\n"
        "sink: {path: ./lake}\npipeline: {checkpoint: ./cp}\n"
    )
    return cfg


def test_execute_snapshot_is_inserted(tmp_path: Path, mariadb: ThrowawayMariaDB, db: str) -> None:
    name = f"{db}.signals"
    mariadb.execute(signal_table_ddl(name))
    cfg = pipeline_file(tmp_path, mariadb, name)
    done = cli(
        "signal",
        "execute-snapshot",
        "--config",
        str(cfg),
        "--tables",
        "shop.orders",
        "--where",
        "status = 'open'",
    )
    assert done.returncode == 0, done.stderr
    rows = mariadb.query(f"SELECT id, type, data FROM `{db}`.`signals`")
    assert len(rows) == 1
    signal = parse_signal(*rows[0])
    assert done.stdout == f"signal {signal.id} (execute-snapshot) sent to {name}\n"
    assert signal.type == "execute-snapshot" and signal.tables == ("shop.orders",)
    assert signal.condition("shop.orders") == "status = 'open'"
    assert not (tmp_path / "cp").exists()  # nothing went to the file channel


def test_a_missing_signal_table_is_named_with_its_ddl(
    tmp_path: Path, mariadb: ThrowawayMariaDB, db: str
) -> None:
    name = f"{db}.signals"
    done = cli("signal", "pause-snapshot", "--config", str(pipeline_file(tmp_path, mariadb, name)))
    assert done.returncode == 78 and done.stdout == ""  # source.signal_table names no table
    assert done.stderr.startswith(f"sparkcdc: The signal table {name} does not exist on ")
    assert signal_table_ddl(name) in done.stderr and done.stderr.count("\n") == 1


def test_a_user_who_may_not_insert_is_told_the_grant(
    tmp_path: Path, mariadb: ThrowawayMariaDB, db: str
) -> None:
    name = f"{db}.signals"
    mariadb.execute(
        signal_table_ddl(name),
        "CREATE USER IF NOT EXISTS 'sig_reader'@'%' IDENTIFIED BY 'pw'",
        f"GRANT SELECT ON `{db}`.* TO 'sig_reader'@'%'",
    )
    try:
        text = pipeline_file(tmp_path, mariadb, name).read_text()
        cfg = tmp_path / "reader.yaml"
        cfg.write_text(
            text.replace(f"user: {mariadb.user}", "user: sig_reader").replace(
                f"password: '{mariadb.password}'", "password: pw"
            )
        )
        done = cli("signal", "pause-snapshot", "--config", str(cfg))
        assert done.returncode == 2 and "Traceback" not in done.stderr
        assert f"GRANT INSERT ON `{db}`.`signals` TO 'sig_reader'@'%'" in done.stderr
        assert "--channel file" in done.stderr
        assert mariadb.query(f"SELECT COUNT(*) FROM `{db}`.`signals`") == [(0,)]
    finally:
        mariadb.execute("DROP USER IF EXISTS 'sig_reader'@'%'")
