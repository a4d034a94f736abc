"""Which QUERY statements change rows, and which table they change (a statement-based change of
a captured table stops the log reader; one of another table does not)."""

from __future__ import annotations

import pytest

from sparkcdc.sources.mysql.binlog.statement_changes import UNKNOWN, changed_table, changes_rows


@pytest.mark.parametrize(
    ("sql", "table"),
    [
        ("INSERT INTO GENERATED VALUES (1), (2), (3)", ("test", "GENERATED")),
        ("insert low_priority ignore into shop.t (a) values (1)", ("shop", "t")),
        ("REPLACE t SET a = 1", ("test", "t")),
        ("/* app */ INSERT INTO `a b`.`c` SELECT * FROM d", ("a b", "c")),
        ("UPDATE t SET a = 1 WHERE b = 2", ("test", "t")),
        ("update ignore shop.t AS x set a = 1", ("shop", "t")),
        ("UPDATE t x SET a = 1", ("test", "t")),
        ("DELETE FROM t", ("test", "t")),
        ("DELETE QUICK FROM shop.t WHERE a = 1 LIMIT 5", ("shop", "t")),
        ("UPDATE t1, t2 SET t1.a = t2.a", UNKNOWN),
        ("UPDATE t1 JOIN t2 ON t1.id = t2.id SET t1.a = 1", UNKNOWN),
        ("DELETE t1 FROM t1 JOIN t2 USING (id)", UNKNOWN),
        ("DELETE FROM t1, t2 USING t1 JOIN t2", UNKNOWN),
        ("WITH x AS (SELECT 1) UPDATE t SET a = 1", UNKNOWN),
        ("INSERT INTO 'unterminated", UNKNOWN),
    ],
)
def test_the_table_a_statement_changes(sql: str, table: tuple[str, str]) -> None:
    assert changes_rows(sql)
    assert changed_table(sql, "test") == table


@pytest.mark.parametrize(
    "sql", ["BEGIN", "CREATE TABLE t (a INT)", "ALTER TABLE t ADD b INT", "insertion",
            "SAVEPOINT x", "/* INSERT */ DROP TABLE t", "XA START 'x'", "TRUNCATE t"],
)  # fmt: skip
def test_other_statements_change_no_rows(sql: str) -> None:
    assert not changes_rows(sql)
