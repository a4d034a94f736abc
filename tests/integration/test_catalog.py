"""The catalog against a real MariaDB: readiness checks, refusals, table matching and schemas."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from sparkcdc.core.errors import (
    ConfigError,
    ConnectionFailed,
    LogNotReady,
    MissingPrivilege,
    NoTablesMatched,
    TableWithoutKey,
)
from sparkcdc.sources.mysql.server.catalog import MySQLCatalog
from sparkcdc.sources.mysql.throwaway import ThrowawayMariaDB, free_port

pytestmark = pytest.mark.mariadb


@pytest.fixture
def catalog(mariadb: ThrowawayMariaDB) -> Iterator[MySQLCatalog]:
    with MySQLCatalog(mariadb.host, mariadb.port, "root", "") as cat:
        yield cat


def test_fixture_server_is_ready(catalog: MySQLCatalog, mariadb: ThrowawayMariaDB) -> None:
    catalog.check_ready()
    user, password = mariadb.create_cdc_user("cdc_ready", "pw-ready")
    with MySQLCatalog(mariadb.host, mariadb.port, user, password) as cat:
        cat.check_ready(["anything"])


def test_user_without_replication_privileges(mariadb: ThrowawayMariaDB, db: str) -> None:
    mariadb.execute(
        "CREATE USER IF NOT EXISTS 'reader'@'%' IDENTIFIED BY 'pw'",
        f"GRANT SELECT ON `{db}`.* TO 'reader'@'%'",
    )
    try:
        with MySQLCatalog(mariadb.host, mariadb.port, "reader", "pw") as cat:
            with pytest.raises(MissingPrivilege) as err:
                cat.check_ready([db])
            text = str(err.value)
            assert "REPLICATION SLAVE" in text and "BINLOG MONITOR" in text
            assert "GRANT REPLICATION SLAVE, BINLOG MONITOR ON *.* TO 'reader'@'%'" in text
            assert "SELECT" not in err.value.fields["missing"]
            with pytest.raises(MissingPrivilege, match="SELECT"):
                cat.check_ready([db, "other_db"])
            with pytest.raises(MissingPrivilege, match="'reader' may not run"):
                cat.binlog_files()
            with pytest.raises(MissingPrivilege):
                cat.current_offset()
    finally:
        mariadb.execute("DROP USER IF EXISTS 'reader'@'%'")


def test_wrong_password(mariadb: ThrowawayMariaDB) -> None:
    with pytest.raises(ConnectionFailed) as err:
        MySQLCatalog(mariadb.host, mariadb.port, "root", "not-the-password")
    text = str(err.value)
    assert f"127.0.0.1:{mariadb.port}" in text and "'root'" in text
    assert "source.password" in text


def test_closed_port() -> None:
    port = free_port()
    with pytest.raises(ConnectionFailed) as err:
        MySQLCatalog("127.0.0.1", port, "cdc", "x", connect_timeout=3)
    text = str(err.value)
    assert f"127.0.0.1:{port}" in text and "source.port" in text
    assert text.count(". ") == 0  # one sentence


@pytest.mark.parametrize(
    ("variable", "bad", "good"),
    [("binlog_format", "STATEMENT", "ROW"), ("binlog_row_image", "MINIMAL", "FULL")],
)
def test_binlog_not_ready(
    catalog: MySQLCatalog, mariadb: ThrowawayMariaDB, variable: str, bad: str, good: str
) -> None:
    mariadb.execute(f"SET GLOBAL {variable}={bad}")
    try:
        with pytest.raises(LogNotReady) as err:
            catalog.check_ready()
        text = str(err.value)
        assert f"{variable} is {bad}" in text and f"SET GLOBAL {variable}={good}" in text
        assert err.value.fields["variable"] == variable
    finally:
        mariadb.execute(f"SET GLOBAL {variable}={good}")
    catalog.check_ready()


def test_match_tables(catalog: MySQLCatalog, mariadb: ThrowawayMariaDB, db: str) -> None:
    mariadb.execute(
        f"CREATE TABLE `{db}`.orders (id INT PRIMARY KEY)",
        f"CREATE TABLE `{db}`.order_items (id INT PRIMARY KEY)",
        f"CREATE TABLE `{db}`.customers (id INT PRIMARY KEY)",
        f"CREATE VIEW `{db}`.v_orders AS SELECT * FROM `{db}`.orders",
    )
    assert catalog.match_tables([rf"{db}\.order.*"]) == [(db, "order_items"), (db, "orders")]
    assert catalog.match_tables([rf"{db}\..*"]) == [
        (db, "customers"),
        (db, "order_items"),
        (db, "orders"),
    ]
    # full match only: a prefix is not enough
    assert catalog.match_tables([rf"{db}\.order", rf"{db}\.customers"]) == [(db, "customers")]
    assert all(d != "mysql" for d, _ in catalog.match_tables([r".*"]))
    with pytest.raises(NoTablesMatched, match="nomatch"):
        catalog.match_tables([rf"{db}\.nomatch"])
    with pytest.raises(ConfigError, match="source.tables"):
        catalog.match_tables(["("])


def test_load_schema_many_types_composite_key(
    catalog: MySQLCatalog, mariadb: ThrowawayMariaDB, db: str
) -> None:
    mariadb.execute(
        f"""CREATE TABLE `{db}`.t (
            region CHAR(2) CHARACTER SET latin1 NOT NULL,
            n BIGINT UNSIGNED,
            price DECIMAL(12,3),
            big DECIMAL(50,10),
            f FLOAT, d DOUBLE, flags BIT(5), y YEAR,
            name VARCHAR(40), body TEXT, raw VARBINARY(16), blb BLOB,
            born DATE, t TIME(2), at DATETIME(6), ts TIMESTAMP(3) NULL,
            status ENUM('new','it''s','a\\\\b'), tags SET('x','y'),
            doc JSON,
            id INT NOT NULL,
            PRIMARY KEY (id, region))"""
    )
    schema = catalog.load_schema(db, "t")
    assert schema.primary_key == ("id", "region")
    assert schema.column_names()[:3] == ["region", "n", "price"]
    col = schema.column
    assert col("region").charset == "latin1" and col("region").length == 2
    assert not col("region").nullable and col("price").nullable
    assert col("n").unsigned and col("n").spark_type() == "decimal(20,0)"
    assert (col("price").precision, col("price").scale) == (12, 3)
    assert col("big").spark_type() == "string"
    assert col("flags").length == 5
    assert col("name").length == 40 and col("name").charset == "utf8mb4"
    assert col("raw").length == 16 and col("raw").charset is None
    assert (col("t").fsp, col("at").fsp, col("ts").fsp) == (2, 6, 3)
    assert col("status").values == ("new", "it's", "a\\b")
    assert col("tags").values == ("x", "y")
    assert col("doc").data_type == "longtext"
    assert "`ts` timestamp" in schema.spark_ddl()


def test_table_without_key(catalog: MySQLCatalog, mariadb: ThrowawayMariaDB, db: str) -> None:
    mariadb.execute(f"CREATE TABLE `{db}`.log (a INT, b VARCHAR(5))")
    with pytest.raises(TableWithoutKey) as err:
        catalog.load_schema(db, "log")
    assert f"{db}.log" in str(err.value) and "source.key_columns" in str(err.value)
    schema = catalog.load_schema(db, "log", key_columns=["A"])
    assert schema.key == ("a",) and schema.primary_key == ()
    with pytest.raises(ConfigError, match="source.key_columns"):
        catalog.load_schema(db, "log", key_columns=["nope"])


def test_offsets(catalog: MySQLCatalog, mariadb: ThrowawayMariaDB, db: str) -> None:
    mariadb.execute(
        f"CREATE TABLE `{db}`.k (id INT PRIMARY KEY)", f"INSERT INTO `{db}`.k VALUES (1)"
    )
    files = catalog.binlog_files()
    assert files and all(size > 0 for _, size in files)
    current = catalog.current_offset()
    assert current.file == files[-1][0] and current.gtid.startswith("0-1-")
    earliest = catalog.earliest_offset()
    assert earliest.file == files[0][0] and earliest.pos == 4 and earliest <= current
    assert catalog.gtid_pos_at(current.file, current.pos) == current.gtid
    assert catalog.server_id() == 1
    assert catalog.server_variables("binlog_format") == {"binlog_format": "ROW"}


def test_server_without_binary_log(tmp_path: Path) -> None:
    server = ThrowawayMariaDB.start(base_dir=tmp_path, extra_args=["--skip-log-bin"])
    try:
        with MySQLCatalog(server.host, server.port, "root", "") as cat:
            with pytest.raises(LogNotReady) as err:
                cat.check_ready()
            assert err.value.fields["variable"] == "log_bin" and "--log-bin" in str(err.value)
            with pytest.raises(LogNotReady):
                cat.current_offset()
            with pytest.raises(LogNotReady):
                cat.binlog_files()
    finally:
        server.stop()
