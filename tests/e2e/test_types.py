"""Every MariaDB column type round-trips source → binlog → Delta replica with equal values,
compared row by row against the source; DDL in the middle of the stream is followed."""

from __future__ import annotations

from pathlib import Path

import pytest
from deltalake import DeltaTable

from sparkcdc.demo import compare
from sparkcdc.sources.mysql.server.catalog import MySQLCatalog
from sparkcdc.sources.mysql.throwaway import ThrowawayMariaDB
from tests.e2e.cli import available_now, log_end, write_config

pytestmark = [pytest.mark.mariadb, pytest.mark.spark]

ALL_TYPES = """
CREATE TABLE {db}.all_types (
  id INT PRIMARY KEY,
  ti TINYINT, tiu TINYINT UNSIGNED, si SMALLINT, siu SMALLINT UNSIGNED,
  mi MEDIUMINT, miu MEDIUMINT UNSIGNED, i INT, iu INT UNSIGNED, bi BIGINT, biu BIGINT UNSIGNED,
  d52 DECIMAL(5,2), d1810 DECIMAL(18,10), d38 DECIMAL(38,0), d6530 DECIMAL(65,30),
  f FLOAT, dbl DOUBLE, b1 BIT(1), b13 BIT(13), b64 BIT(64), y YEAR,
  c CHAR(10) CHARACTER SET utf8mb4, vc VARCHAR(300) CHARACTER SET utf8mb4,
  vl VARCHAR(50) CHARACTER SET latin1, tx TEXT CHARACTER SET utf8mb4,
  lt LONGTEXT CHARACTER SET latin1, js JSON,
  e ENUM('small','medium','large'), s SET('a','b','c','d'),
  bn BINARY(4), vb VARBINARY(20), bl BLOB, mb MEDIUMBLOB,
  dt DATE, tm TIME, tm6 TIME(6), dt0 DATETIME, dt3 DATETIME(3), dt6 DATETIME(6),
  ts0 TIMESTAMP NULL, ts3 TIMESTAMP(3) NULL, ts6 TIMESTAMP(6) NULL
)"""

ROWS = (
    "INSERT INTO {db}.all_types VALUES (1, -128, 255, -32768, 65535, -8388608, 16777215, "
    "-2147483648, 4294967295, -9223372036854775808, 18446744073709551615, "
    "-999.99, 12345678.0123456789, 99999999999999999999999999999999999999, "
    "-12345678901234567890123456789012345.123456789012345678901234567890, "
    "3.14, 2.718281828459045, b'1', b'1010101010101', b'" + "1" * 64 + "', "
    "1901, 'héllo', 'emoji 🚀 ünïcødé 李', 'café crème', REPEAT('long text ', 400), "
    "REPEAT('à', 70000), '{{\"k\": [1, 2, {{\"x\": null}}]}}', 'medium', 'a,c', "
    "x'01000000', x'00ff00', x'deadbeef0000', REPEAT(x'ab', 70000), "
    "'1000-01-01', '-838:59:59', '123:45:06.789012', '9999-12-31 23:59:59', "
    "'2024-02-29 12:34:56.789', '1970-01-01 00:00:00.000001', "
    "'2038-01-19 03:14:07', '2001-02-03 04:05:06.007', '2020-01-01 00:00:00.999999')",
    "INSERT INTO {db}.all_types VALUES (2, 127, 0, 32767, 0, 8388607, 0, 2147483647, 0, "
    "9223372036854775807, 0, 0.00, -0.0000000001, -1, 0.000000000000000000000000000001, "
    "-1.5e-10, -1.7976931348623157e308, b'0', b'0', b'0', 2155, '', '', '', '', '', '[]', "
    "'small', '', x'00000000', x'', x'', x'', '9999-12-31', '838:59:59', '-00:00:00.000001', "
    "'1000-01-01 00:00:00', '1000-01-01 00:00:00.001', '9999-12-31 23:59:59.999999', "
    "'1970-01-01 00:00:01', '1999-12-31 23:59:59.999', '2038-01-19 03:14:07.999999')",
    "INSERT INTO {db}.all_types (id) VALUES (3)",
    "UPDATE {db}.all_types SET vc = 'changed ✓', bi = bi + 1, ts3 = '2010-10-10 10:10:10.101' "
    "WHERE id = 1",
    "INSERT INTO {db}.all_types (id, vc) VALUES (4, 'to be deleted')",
    "DELETE FROM {db}.all_types WHERE id = 4",
)


def assert_replica_equals_source(server: ThrowawayMariaDB, lake: Path, db: str, table: str) -> None:
    with MySQLCatalog(server.host, server.port, server.user, server.password) as catalog:
        schema = catalog.load_schema(db, table)
    expected = compare.canonical_rows(compare.source_rows(server, schema), schema)
    actual = compare.canonical_rows(compare.replica_rows(str(lake / db / table), schema), schema)
    assert len(actual) == len(expected)
    for want, got in zip(expected, actual, strict=True):
        diff = {
            name: (w, g)
            for name, w, g in zip(schema.column_names(), want, got, strict=True)
            if w != g
        }
        assert not diff, f"row {want[0]} differs (column: (source, replica)): {diff}"


def test_every_type_round_trips(mariadb: ThrowawayMariaDB, db: str, tmp_path: Path) -> None:
    mariadb.execute("SET GLOBAL time_zone = '+00:00'")
    start = log_end(mariadb)
    mariadb.execute(ALL_TYPES.format(db=db), *(r.format(db=db) for r in ROWS))
    cfg = write_config(tmp_path, mariadb, rf"{db}\.all_types", startup=start)
    available_now(cfg)
    assert_replica_equals_source(mariadb, tmp_path / "lake", db, "all_types")
    changes = DeltaTable(str(tmp_path / "lake" / db / "all_types__changelog")).to_pyarrow_table()
    assert sorted(changes.column("op").to_pylist()) == ["c", "c", "c", "c", "d", "u"]


def test_add_column_mid_stream_evolves_the_replica(
    mariadb: ThrowawayMariaDB, db: str, tmp_path: Path
) -> None:
    start = log_end(mariadb)
    mariadb.execute(
        f"CREATE TABLE {db}.items (id INT PRIMARY KEY, name VARCHAR(20))",
        f"INSERT INTO {db}.items VALUES (1, 'one'), (2, 'two')",
    )
    cfg = write_config(tmp_path, mariadb, rf"{db}\..*", startup=start)
    available_now(cfg)
    mariadb.execute(
        f"ALTER TABLE {db}.items ADD COLUMN price DECIMAL(8,2) AFTER id",
        f"INSERT INTO {db}.items VALUES (3, 9.99, 'three')",
        f"UPDATE {db}.items SET price = 1.50 WHERE id = 1",
        f"CREATE TABLE {db}.later (k VARCHAR(8) PRIMARY KEY, v BIGINT UNSIGNED)",
        f"INSERT INTO {db}.later VALUES ('a', 18446744073709551615)",
    )
    available_now(cfg)
    assert_replica_equals_source(mariadb, tmp_path / "lake", db, "items")
    assert_replica_equals_source(mariadb, tmp_path / "lake", db, "later")
