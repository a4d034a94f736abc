"""The tracker must agree with the server: run each DDL statement on MariaDB and in the tracker,
then compare the tracker's schema of every table with what the catalog reads back."""

from __future__ import annotations

import os
import random

import pymysql
import pytest

from sparkcdc.core.errors import TableWithoutKey
from sparkcdc.core.schema import TableSchema
from sparkcdc.sources.mysql.schema.tracker import SchemaTracker
from sparkcdc.sources.mysql.server.catalog import MySQLCatalog
from sparkcdc.sources.mysql.throwaway import ThrowawayMariaDB

pytestmark = pytest.mark.mariadb

CREATES = [
    """CREATE TABLE `all types` (
        id INT UNSIGNED NOT NULL COMMENT 'the key',
        ti TINYINT, si SMALLINT(3) ZEROFILL, mi MEDIUMINT UNSIGNED, bi BIGINT UNSIGNED,
        i1 INT1, i8 INT8, flag BOOL DEFAULT TRUE, integ INTEGER DEFAULT -1,
        d DECIMAL, d2 DECIMAL(7), n NUMERIC(12,4), fx FIXED(5,1), big DEC(50,20),
        f FLOAT, f2 FLOAT(30), f3 FLOAT(7,2), db DOUBLE, dp DOUBLE PRECISION, r REAL,
        db2 DOUBLE(10,3) UNSIGNED,
        b1 BIT, b9 BIT(9) DEFAULT b'101', y YEAR, y4 YEAR(4),
        c CHAR, c5 CHAR(5) BINARY, vc VARCHAR(40) NOT NULL DEFAULT _utf8mb4'x' COLLATE utf8mb4_bin,
        nc NCHAR(3), nvc NATIONAL VARCHAR(7), cv CHARACTER VARYING(9),
        lat VARCHAR(3) CHARSET latin1,
        asc1 CHAR(2) ASCII, vb VARBINARY(12), bn BINARY, bn4 BINARY(4),
        tt TINYTEXT, t TEXT, t100 TEXT(100), t3 TEXT(300) CHARACTER SET latin1, mt MEDIUMTEXT,
        lt LONGTEXT, lv LONG VARCHAR, tb TINYBLOB, bb BLOB, b70k BLOB(70000), mb MEDIUMBLOB,
        lb LONGBLOB, js JSON, bc CHAR(4) CHARACTER SET binary,
        e ENUM('a', 'b''c', 'd\\\\e', "q\\"x") NOT NULL DEFAULT 'a', s SET('x','yz') NULL,
        dt DATE, tm TIME, tm3 TIME(3), dtm DATETIME(6) DEFAULT CURRENT_TIMESTAMP(6),
        ts TIMESTAMP NULL DEFAULT NULL ON UPDATE CURRENT_TIMESTAMP, ts2 TIMESTAMP(2) NULL,
        gen INT AS (ti + 1) VIRTUAL, gen2 VARCHAR(10) GENERATED ALWAYS AS (UPPER(lat)) STORED,
        sr SERIAL, ip INET6, u UUID, /* a comment */ -- another
        PRIMARY KEY (id), UNIQUE KEY uk (vc(10)), KEY k2 (ti, si DESC),
        CONSTRAINT chk CHECK (ti > -100)
    ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COMMENT='many types'""",
    "CREATE TABLE lat1 (a INT, b VARCHAR(10), c TEXT, e ENUM('x'), PRIMARY KEY (b, a)) "
    "CHARACTER SET latin1",
    "CREATE TABLE `weird``name` (`col ``q`` 1` INT PRIMARY KEY, `select` VARCHAR(3))",
    "CREATE TABLE nokey (a INT, b VARCHAR(5) CHARSET utf8)",
    "CREATE TABLE coll (a INT KEY, b VARCHAR(5)) COLLATE latin1_german1_ci",
]

ALTERS = [
    "ALTER TABLE lat1 ADD COLUMN d VARCHAR(20), ADD f DOUBLE FIRST, ADD g INT AFTER a",
    "ALTER TABLE lat1 DROP COLUMN e, DROP f",
    "ALTER TABLE lat1 MODIFY c MEDIUMTEXT CHARACTER SET utf8mb4 NOT NULL",
    "ALTER TABLE lat1 MODIFY COLUMN g BIGINT UNSIGNED AFTER d",
    "ALTER TABLE lat1 CHANGE COLUMN d dd CHAR(8) FIRST",
    "ALTER TABLE lat1 CHANGE a a2 SMALLINT",
    "ALTER TABLE lat1 RENAME COLUMN dd TO d3",
    "ALTER TABLE lat1 DROP PRIMARY KEY",
    "ALTER TABLE lat1 ADD PRIMARY KEY (a2, d3)",
    "ALTER TABLE lat1 ADD (h INT, i TEXT(70000))",
    "ALTER TABLE lat1 ADD INDEX ix (h), ALGORITHM=INPLACE, LOCK=NONE",
    "ALTER TABLE lat1 ALTER COLUMN h SET DEFAULT 5",
    "ALTER TABLE lat1 ADD COLUMN IF NOT EXISTS h INT, DROP COLUMN IF EXISTS zz",
    "ALTER TABLE lat1 ENGINE=InnoDB, COMMENT='x'",
    "ALTER TABLE lat1 CONVERT TO CHARACTER SET utf8mb4",
    "ALTER TABLE lat1 DEFAULT CHARSET=latin1",
    "ALTER TABLE lat1 ADD COLUMN j VARCHAR(4)",
    "/* leading */ ALTER TABLE `lat1` RENAME TO lat2",
    "RENAME TABLE lat2 TO lat3, coll TO coll2",
    "ALTER TABLE coll2 ADD c CHAR(2)",
    "ALTER TABLE nokey ADD PRIMARY KEY (a)",
    "DROP INDEX `PRIMARY` ON nokey",
    "ALTER TABLE nokey ADD COLUMN id INT NOT NULL PRIMARY KEY FIRST",
    "CREATE TABLE copy LIKE `all types`",
    "ALTER TABLE copy DROP COLUMN gen, MODIFY bi INT NULL",
    "TRUNCATE TABLE copy",
    "ALTER TABLE copy MODIFY e ENUM('a','new') NOT NULL, ADD COLUMN x INT DEFAULT (1+2) AFTER id",
    "ALTER TABLE copy CONVERT TO CHARACTER SET latin1",
    "ALTER TABLE copy CONVERT TO CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci",
    "CREATE TABLE conv (id INT PRIMARY KEY, a TINYTEXT, b TEXT, c VARCHAR(100), e ENUM('x'), "
    "m MEDIUMTEXT) CHARSET latin1",
    "ALTER TABLE conv CONVERT TO CHARACTER SET utf8mb4",
    "CREATE OR REPLACE TABLE conv (id BIGINT PRIMARY KEY)",
    "CREATE TABLE IF NOT EXISTS conv (other INT)",
    "DROP TABLE IF EXISTS nokey, missing",
]


def catalog_schema(cat: MySQLCatalog, db: str, table: str) -> TableSchema:
    try:
        return cat.load_schema(db, table)
    except TableWithoutKey:
        first = cat.query(
            "SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = %s "
            "AND TABLE_NAME = %s AND ORDINAL_POSITION = 1",
            (db, table),
        )[0][0]
        schema = cat.load_schema(db, table, key_columns=[first])
        return TableSchema(db, table, schema.columns, primary_key=())


def assert_same(
    tracker: SchemaTracker, cat: MySQLCatalog, mariadb: ThrowawayMariaDB, db: str, after: str
) -> None:
    tables = sorted(
        r[0]
        for r in mariadb.query(
            f"SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = '{db}'"
        )
    )
    assert sorted(t for d, t in tracker.tables() if d == db) == tables, after
    for table in tables:
        truth = catalog_schema(cat, db, table)
        mine = tracker.get(db, table)
        assert mine is not None, (after, table)
        for ours, theirs in zip(mine.columns, truth.columns, strict=True):
            assert ours == theirs, f"after {after!r}: {table}.{ours.name}"
        assert mine.primary_key == truth.primary_key, (after, table)


def test_tracker_agrees_with_the_server(mariadb: ThrowawayMariaDB, db: str) -> None:
    with MySQLCatalog(mariadb.host, mariadb.port, "root", "") as cat:
        tracker = SchemaTracker({}, include=lambda d, t: d == db)
        for sql in CREATES + ALTERS:
            mariadb.execute(sql, database=db)
            changes = tracker.apply_ddl(db, sql)
            assert all(c.kind != "unknown" for c in changes), (sql, changes)
            assert_same(tracker, cat, mariadb, db, sql)


def test_tracker_from_catalog_schemas(mariadb: ThrowawayMariaDB, db: str) -> None:
    """Tables known only from the catalog (no CREATE seen) follow ALTERs too, with the table
    charsets the catalog reports."""
    for sql in CREATES:
        mariadb.execute(sql, database=db)
    with MySQLCatalog(mariadb.host, mariadb.port, "root", "") as cat:
        names = [t for _, t in cat.match_tables([rf"{db}\..*"])]
        start = {(db, t): catalog_schema(cat, db, t) for t in names}
        charsets = {(db, t): cat.table_charset(db, t) for t in names}
        assert charsets[(db, "lat1")] == "latin1" and charsets[(db, "all types")] == "utf8mb4"
        tracker = SchemaTracker(start, charsets=charsets)
        for sql in ALTERS:
            mariadb.execute(sql, database=db)
            tracker.apply_ddl(db, sql)
            assert_same(tracker, cat, mariadb, db, sql)


def test_database_default_charset(mariadb: ThrowawayMariaDB, db: str) -> None:
    other = f"{db}_l1"
    statements = [
        f"CREATE DATABASE `{other}` CHARACTER SET latin1",
        f"CREATE TABLE `{other}`.t (id INT PRIMARY KEY, v VARCHAR(5), w TEXT CHARSET utf8mb4)",
        f"ALTER DATABASE `{other}` CHARACTER SET utf8mb3",
        f"CREATE TABLE `{other}`.u (id INT PRIMARY KEY, v VARCHAR(5))",
        f"ALTER TABLE `{other}`.t ADD x CHAR(3)",
        f"RENAME TABLE `{other}`.u TO `{db}`.u",
    ]
    try:
        with MySQLCatalog(mariadb.host, mariadb.port, "root", "") as cat:
            tracker = SchemaTracker({})
            for sql in statements:
                mariadb.execute(sql, database=db)
                tracker.apply_ddl(db, sql)
                for d in (db, other):
                    assert_same(tracker, cat, mariadb, d, sql)
            mariadb.execute(f"DROP DATABASE `{other}`")
            changes = tracker.apply_ddl(db, f"DROP DATABASE `{other}`")
            assert [(c.kind, c.table) for c in changes] == [("drop", "t")]
            assert tracker.tables() == [(db, "u")]
    finally:
        mariadb.execute(f"DROP DATABASE IF EXISTS `{other}`")


TYPES = [
    "INT",
    "BIGINT UNSIGNED",
    "TINYINT(1)",
    "DECIMAL(9,3)",
    "FLOAT",
    "DOUBLE",
    "BIT(3)",
    "YEAR",
    "CHAR(4)",
    "VARCHAR(30)",
    "VARCHAR(8) CHARACTER SET latin1",
    "TEXT",
    "TINYTEXT CHARSET latin1",
    "MEDIUMBLOB",
    "VARBINARY(5)",
    "ENUM('a','b')",
    "SET('x','y')",
    "DATE",
    "TIME(2)",
    "DATETIME(4)",
    "TIMESTAMP(1) NULL",
    "JSON",
]


def random_clause(rng: random.Random, columns: list[str], serial: list[int]) -> str:
    def new_name() -> str:
        serial[0] += 1
        return f"c{serial[0]}"

    kind = rng.choice(["add", "add", "drop", "modify", "change", "rename", "pk", "charset"])
    where = rng.choice(["", "", " FIRST", f" AFTER {rng.choice(columns)}"])
    ctype = rng.choice(TYPES) + rng.choice(["", " NOT NULL", " NULL"])
    col = rng.choice(columns)
    if kind == "add":
        return f"ADD COLUMN {new_name()} {ctype}{where}"
    if kind == "drop":
        return f"DROP COLUMN {col}"
    if kind == "modify":
        return f"MODIFY {col} {ctype}{where}"
    if kind == "change":
        return f"CHANGE {col} {new_name()} {ctype}{where}"
    if kind == "rename":
        return f"RENAME COLUMN {col} TO {new_name()}"
    if kind == "pk":
        keys = ", ".join(rng.sample(columns, k=min(len(columns), rng.randint(1, 2))))
        return rng.choice(["DROP PRIMARY KEY", f"DROP PRIMARY KEY, ADD PRIMARY KEY ({keys})"])
    return rng.choice(
        [
            "CONVERT TO CHARACTER SET latin1",
            "CONVERT TO CHARACTER SET utf8mb4",
            "DEFAULT CHARSET=latin1",
            "DEFAULT CHARSET=utf8mb4",
        ]
    )


@pytest.mark.parametrize("seed", range(int(os.environ.get("SPARKCDC_DDL_SEEDS", "3"))))
def test_random_alters_agree_with_the_server(mariadb: ThrowawayMariaDB, db: str, seed: int) -> None:
    rng = random.Random(seed)
    serial = [2]
    create = "CREATE TABLE r (c1 INT NOT NULL, c2 VARCHAR(10), PRIMARY KEY (c1))"
    mariadb.execute(create, database=db)
    tracker = SchemaTracker({})
    tracker.apply_ddl(db, create)
    applied = 0
    with MySQLCatalog(mariadb.host, mariadb.port, "root", "") as cat:
        for _ in range(40):
            schema = tracker.get(db, "r")
            assert schema is not None
            clauses = [
                random_clause(rng, schema.column_names(), serial) for _ in range(rng.randint(1, 2))
            ]
            sql = "ALTER TABLE r " + ", ".join(clauses)
            try:
                mariadb.execute(sql, database=db)
            except pymysql.err.MySQLError:
                continue  # the server refused it (e.g. dropped the last column): not logged
            applied += 1
            changes = tracker.apply_ddl(db, sql)
            assert all(c.kind != "unknown" for c in changes), sql
            assert_same(tracker, cat, mariadb, db, sql)
    assert applied >= 15
