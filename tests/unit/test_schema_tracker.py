"""The schema tracker on DDL text alone: statement forms, change kinds, unknown statements."""

from __future__ import annotations

import pytest

from sparkcdc.core.schema import Column, TableSchema
from sparkcdc.sources.mysql.ddl.lexer import tokenize
from sparkcdc.sources.mysql.ddl.parser import Other, parse
from sparkcdc.sources.mysql.schema.column_types import column
from sparkcdc.sources.mysql.schema.tracker import SchemaTracker


def tracker(*ddl: str, include: str | None = None) -> SchemaTracker:
    t = SchemaTracker({}, include=(lambda d, n: n.startswith(include)) if include else None)
    for sql in ddl:
        t.apply_ddl("shop", sql)
    return t


def cols(t: SchemaTracker, table: str, db: str = "shop") -> list[str]:
    schema = t.get(db, table)
    assert schema is not None
    return schema.column_names()


def test_create_table_types_and_key() -> None:
    t = SchemaTracker({})
    [change] = t.apply_ddl(
        "shop",
        "create table Orders (ID bigint unsigned not null auto_increment, `total` decimal(12,2),"
        " note varchar(10) character set latin1 collate latin1_bin default 'a,b' comment 'x)',"
        " st enum('new','it''s','a\\\\b') not null, tags set('x','y'), at datetime(3),"
        " primary key (`ID`)) engine=InnoDB default charset=utf8mb4",
    )
    assert (change.kind, change.db, change.table) == ("create", "shop", "Orders")
    s = change.schema
    assert s is not None and s.primary_key == ("ID",)
    assert s.column("id") == column("ID", "bigint", unsigned=True, nullable=False)
    assert s.column("total") == column("total", "decimal", precision=12, scale=2)
    assert s.column("note") == column("note", "varchar", length=10, charset="latin1")
    assert s.column("st").values == ("new", "it's", "a\\b") and not s.column("st").nullable
    assert s.column("tags").charset == "utf8mb4"
    assert s.column("at").fsp == 3


def test_comments_versioned_comments_and_quoting() -> None:
    t = tracker(
        "/* leading */ CREATE TABLE `we``ird` ( -- the key\n `a b` INT, # hash comment\n"
        " c INT /*!50100 UNSIGNED */, PRIMARY KEY (`a b`)) /*!40100 DEFAULT CHARSET=latin1 */;"
    )
    s = t.get("shop", "we`ird")
    assert s is not None and s.column_names() == ["a b", "c"] and s.column("c").unsigned
    assert [tok.text for tok in tokenize("a/*!M x*/ 'it''s'")][-1] == "it's"
    t.apply_ddl(
        "shop",
        "CREATE TABLE r (a INT NOT NULL REFERENCES p (id) ON UPDATE SET DEFAULT"
        " ON DELETE SET NULL, b DOUBLE DEFAULT -1.5e3 CHECK (b > 0),"
        " c CHAR(2) DEFAULT _latin1 x'4142' INVISIBLE)",
    )
    r = t.get("shop", "r")
    assert r is not None and r.column_names() == ["a", "b", "c"] and not r.column("a").nullable


def test_alter_table_clauses() -> None:
    t = tracker("CREATE TABLE t (a INT PRIMARY KEY, b INT, c INT)")
    [change] = t.apply_ddl(
        "shop",
        "ALTER TABLE t ADD COLUMN d INT FIRST, ADD e TEXT AFTER a, DROP COLUMN b, "
        "MODIFY c BIGINT NOT NULL, CHANGE COLUMN A a1 SMALLINT, RENAME COLUMN e TO e2",
    )
    assert change.kind == "alter"
    assert cols(t, "t") == ["d", "a1", "e2", "c"]
    s = t.get("shop", "t")
    assert s is not None and s.primary_key == ("a1",) and not s.column("a1").nullable
    assert s.column("c") == column("c", "bigint", nullable=False)
    t.apply_ddl("shop", "alter table t drop primary key, add primary key (c, d)")
    s = t.get("shop", "t")
    assert s is not None and s.primary_key == ("c", "d") and not s.column("d").nullable
    t.apply_ddl("shop", "ALTER TABLE t ADD (x INT, y INT)")
    assert cols(t, "t")[-2:] == ["x", "y"]


def test_no_op_alters_report_nothing() -> None:
    t = tracker("CREATE TABLE t (a INT PRIMARY KEY, b INT)")
    for sql in (
        "ALTER TABLE t ADD INDEX ib (b), ALGORITHM=INPLACE, LOCK=NONE",
        "ALTER TABLE t ENGINE=InnoDB ROW_FORMAT=DYNAMIC",
        "ALTER TABLE t ALTER COLUMN b SET DEFAULT 3",
        "ALTER TABLE t ADD UNIQUE KEY (b), DROP INDEX ib",
        "ALTER TABLE t DROP COLUMN IF EXISTS nope",
        "CREATE INDEX i2 ON t (b)",
        "INSERT INTO t VALUES (1, 2)",
        "BEGIN",
        "GRANT SELECT ON *.* TO x",
        "CREATE TEMPORARY TABLE tmp (a INT)",
    ):
        assert t.apply_ddl("shop", sql) == [], sql
    assert cols(t, "t") == ["a", "b"]


def test_rename_drop_truncate_and_include() -> None:
    t = tracker(
        "CREATE TABLE orders (id INT PRIMARY KEY)",
        "CREATE TABLE other (id INT PRIMARY KEY)",
        include="orders",
    )
    assert t.tables() == [("shop", "orders")] and t.get("shop", "other") is not None
    [c] = t.apply_ddl("shop", "RENAME TABLE orders TO orders_v2")
    assert (c.kind, c.table, c.old_name) == ("rename", "orders_v2", ("shop", "orders"))
    [c] = t.apply_ddl("shop", "ALTER TABLE orders_v2 RENAME TO archive.old_orders")
    assert (c.kind, c.db, c.table, c.schema) == ("drop", "shop", "orders_v2", None)
    [c] = t.apply_ddl("shop", "RENAME TABLE other TO ordersX, archive.old_orders TO zzz")
    assert (c.kind, c.table, c.old_name) == ("create", "ordersX", ("shop", "other"))
    assert c.schema is not None and c.schema.table == "ordersX"
    [c] = t.apply_ddl("shop", "TRUNCATE ordersX")
    assert c.kind == "truncate" and c.schema is not None
    [c] = t.apply_ddl("shop", "DROP TABLE IF EXISTS `ordersX`, nope /* generated by server */")
    assert (c.kind, c.table) == ("drop", "ordersX")
    assert t.tables() == []


def test_an_online_schema_change_cut_over_is_one_alter_read_again() -> None:
    t = tracker(
        "CREATE TABLE orders (id INT PRIMARY KEY)",
        "CREATE TABLE _orders_gho LIKE orders",
        "ALTER TABLE _orders_gho ADD note VARCHAR(9)",
        include="orders",
    )
    [c] = t.apply_ddl("shop", "RENAME TABLE orders TO _orders_del, _orders_gho TO orders")
    assert (c.kind, c.table, c.old_name) == ("alter", "orders", None)
    assert c.schema is not None and c.schema.column_names() == ["id", "note"]
    assert "swapped with shop._orders_gho" in str(c.existing.resnapshot)
    changes = t.apply_ddl("shop", "RENAME TABLE orders TO orders_v2, orders_v2 TO orders_v3")
    assert [(c.kind, c.table) for c in changes] == [
        ("rename", "orders_v2"),
        ("rename", "orders_v3"),
    ]


def test_create_like_and_database_charset() -> None:
    t = tracker(
        "CREATE DATABASE l1 DEFAULT CHARACTER SET latin1",
        "CREATE TABLE l1.t (a INT PRIMARY KEY, v VARCHAR(3))",
        "CREATE TABLE l1.copy LIKE l1.t",
        "ALTER TABLE l1.copy ADD w CHAR(2)",
    )
    copy = t.get("l1", "copy")
    assert copy is not None and copy.primary_key == ("a",)
    assert copy.column("v").charset == copy.column("w").charset == "latin1"
    changes = t.apply_ddl("shop", "DROP DATABASE l1")
    assert sorted(c.table for c in changes) == ["copy", "t"]


def test_unknown_statements_are_reported_never_guessed() -> None:
    loaded = TableSchema("shop", "t", (column("a", "int", nullable=False),), primary_key=("a",))
    t = SchemaTracker({}, loader=lambda db, table: loaded)
    t.apply_ddl("shop", "CREATE TABLE t (a INT PRIMARY KEY, b INT)")
    [c] = t.apply_ddl("shop", "ALTER TABLE t FROBNICATE b")
    assert (c.kind, c.table, c.ddl) == ("unknown", "t", "ALTER TABLE t FROBNICATE b")
    assert c.schema == loaded and t.get("shop", "t") == loaded
    no_loader = tracker("CREATE TABLE t (a INT PRIMARY KEY)")
    [c] = no_loader.apply_ddl("shop", "ALTER TABLE t DROP COLUMN zz")  # not there: diverged
    assert c.kind == "unknown" and c.schema is None and no_loader.get("shop", "t") is None
    no_loader.apply_ddl("shop", "CREATE TABLE v (a INT PRIMARY KEY)")
    [c] = no_loader.apply_ddl("shop", "ALTER TABLE v ADD SYSTEM VERSIONING")
    assert (c.kind, c.table) == ("unknown", "v")
    [c] = no_loader.apply_ddl("shop", "CREATE TABLE s SELECT 1 AS x")
    assert (c.kind, c.table) == ("unknown", "s")
    [c] = no_loader.apply_ddl(None, "CREATE TABLE t2 (a INT)")
    assert (c.kind, c.db, c.table) == ("unknown", "", "t2")
    [c] = no_loader.apply_ddl("shop", "ALTER TABLE")
    assert (c.kind, c.db, c.table) == ("unknown", "", "")


def test_key_columns_for_tables_without_primary_key() -> None:
    t = SchemaTracker({}, key_columns={"shop.log": ("id",)})
    [c] = t.apply_ddl("shop", "CREATE TABLE log (id INT, msg TEXT)")
    assert c.schema is not None and c.schema.key == ("id",) and c.schema.primary_key == ()


def test_catalog_loaded_table_charset_is_inferred() -> None:
    start = TableSchema(
        "shop", "t", (column("a", "int"), column("v", "varchar", length=3, charset="latin1"))
    )
    t = SchemaTracker({("shop", "t"): start}, charsets=None)
    t.apply_ddl("shop", "ALTER TABLE t ADD w TEXT")
    s = t.get("shop", "t")
    assert s is not None and s.column("w").charset == "latin1"


def test_json_round_trip() -> None:
    t = tracker("CREATE DATABASE x CHARSET latin1", "CREATE TABLE x.t (a INT PRIMARY KEY)")
    again = SchemaTracker.from_json(t.to_json())
    assert again.schemas() == t.schemas() and again.table_charset("x", "t") == "latin1"
    again.apply_ddl("x", "CREATE TABLE u (v VARCHAR(2))")
    u = again.get("x", "u")
    assert u is not None and u.column("v").charset == "latin1"


@pytest.mark.parametrize(
    ("declared", "expected"),
    [
        ("INTEGER", column("c", "int")),
        ("BOOLEAN", column("c", "tinyint")),
        ("SERIAL", column("c", "bigint", unsigned=True, nullable=False)),
        ("NUMERIC", column("c", "decimal", precision=10, scale=0)),
        ("FLOAT(25)", column("c", "double")),
        ("REAL", column("c", "double")),
        ("NCHAR(2)", column("c", "char", length=2, charset="utf8mb3")),
        ("VARCHAR(4) CHARACTER SET binary", column("c", "varbinary", length=4)),
        ("TEXT(1000)", column("c", "text", length=65535, charset="utf8mb4")),
        ("JSON", column("c", "longtext", length=4294967295, charset="utf8mb4")),
        ("BIT", column("c", "bit", length=1)),
        ("TIMESTAMP(6) NULL", column("c", "timestamp", fsp=6)),
        ("INT(11) ZEROFILL", column("c", "int", unsigned=True)),
    ],
)
def test_type_aliases(declared: str, expected: Column) -> None:
    t = tracker(f"CREATE TABLE t (c {declared})")
    s = t.get("shop", "t")
    assert s is not None and s.columns[0] == expected


def test_parser_returns_other_for_non_schema_statements() -> None:
    assert isinstance(parse("UPDATE t SET a = 1", "shop"), Other)
    assert isinstance(parse("CREATE VIEW v AS SELECT 1", "shop"), Other)
    assert isinstance(parse("DROP TEMPORARY TABLE IF EXISTS x", "shop"), Other)
