"""``spark.readStream.format("mysql-cdc").option("table", …)``: one table's change events with
``before``/``after`` as typed structs of its columns, against a real MariaDB: the snapshot's
rows, then inserts, updates and deletes from the binlog, then a column added mid-stream. With
``option("changelog", "flink")``, against MariaDB and PostgreSQL: Flink's row kinds, an update
as two adjacent rows, and what a partial before image gives."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

import sparkcdc.spark
from sparkcdc.sources.mysql.throwaway import ThrowawayMariaDB
from sparkcdc.sources.postgres.throwaway import ThrowawayPostgres

pytestmark = [pytest.mark.mariadb, pytest.mark.spark]


def start(
    spark: Any, server: ThrowawayMariaDB, table: str, tmp: Path, got: list, **trigger: Any
) -> Any:
    """The table's stream into ``got`` (changes as dicts), resuming from its checkpoint."""
    df = (
        spark.readStream.format("mysql-cdc")
        .option("host", "127.0.0.1")
        .option("port", str(server.port))
        .option("user", "root")
        .option("server_id", "7401-7405")
        .option("table", table)
        .option("schema_history", str(tmp / "history.jsonl"))
        .option("snapshot_dir", str(tmp / "snapshot"))
        .load()
    )

    def collect(batch: Any, batch_id: int) -> None:
        rows = batch.select("op", "before", "after").collect()
        got.extend(r.asDict(recursive=True) for r in rows if r["op"] in "rcud")

    start.schema = df.schema  # type: ignore[attr-defined]
    return (
        df.writeStream.foreachBatch(collect)
        .option("checkpointLocation", str(tmp / "checkpoint"))
        .trigger(**(trigger or {"availableNow": True}))
        .start()
    )


def run(spark: Any, server: ThrowawayMariaDB, table: str, tmp: Path) -> list[dict[str, Any]]:
    """One ``availableNow`` run of the table's stream: the changes it delivered."""
    got: list[dict[str, Any]] = []
    start(spark, server, table, tmp, got).awaitTermination()
    return got


def test_a_table_stream_types_its_images_and_stops_on_a_column_it_lacks(
    spark: Any, mariadb: ThrowawayMariaDB, db: str, tmp_path: Path
) -> None:
    mariadb.execute(
        "CREATE TABLE t (id INT PRIMARY KEY, name VARCHAR(20), amount DECIMAL(12,2), "
        "born DATE, seen DATETIME(6), ratio DOUBLE, raw VARBINARY(8))",
        "INSERT INTO t VALUES (1, 'ü-one', 10.25, '2001-02-03', '2024-05-06 07:08:09.123456', "
        "0.5, x'00ff')",
        database=db,
    )
    table = f"{db}.t"
    snapshot = run(spark, mariadb, table, tmp_path)
    after = start.schema["after"].dataType  # type: ignore[attr-defined]
    assert [f.name for f in after.fields] == [
        "id",
        "name",
        "amount",
        "born",
        "seen",
        "ratio",
        "raw",
    ]
    assert [f.dataType.simpleString() for f in after.fields] == [
        "int", "string", "decimal(12,2)", "date", "timestamp_ntz", "double", "binary"
    ]  # fmt: skip
    one = {
        "id": 1, "name": "ü-one", "amount": Decimal("10.25"), "born": dt.date(2001, 2, 3),
        "seen": dt.datetime(2024, 5, 6, 7, 8, 9, 123456), "ratio": 0.5,
        "raw": bytearray(b"\x00\xff"),
    }  # fmt: skip
    assert snapshot == [{"op": "r", "before": None, "after": one}]

    mariadb.execute(
        "INSERT INTO t (id, name) VALUES (2, 'two')",
        "UPDATE t SET amount = amount + 1 WHERE id = 1",
        "DELETE FROM t WHERE id = 2",
        database=db,
    )
    changes = run(spark, mariadb, table, tmp_path)
    two = {"id": 2, "name": "two", "amount": None, "born": None, "seen": None, "ratio": None,
           "raw": None}  # fmt: skip
    assert changes == [
        {"op": "c", "before": None, "after": two},
        {"op": "u", "before": one, "after": {**one, "amount": Decimal("11.25")}},
        {"op": "d", "before": two, "after": None},
    ]

    running = start(spark, mariadb, table, tmp_path, [], processingTime="0.2 seconds")
    running.processAllAvailable()
    mariadb.execute("ALTER TABLE t ADD COLUMN extra INT", database=db)
    mariadb.execute("INSERT INTO t (id, extra) VALUES (3, 5)", database=db)
    with pytest.raises(Exception, match=r"does not fit the columns its typed stream started with"):
        assert not running.awaitTermination(120), "the stream went on"
    (added,) = run(spark, mariadb, table, tmp_path)  # a new query reads the new columns
    assert added["op"] == "c" and added["after"]["id"] == 3 and added["after"]["extra"] == 5


def test_a_batch_read_with_schema_history_is_told_the_option_means_a_stream(
    spark: Any, mariadb: ThrowawayMariaDB, db: str, tmp_path: Path
) -> None:
    mariadb.execute("CREATE TABLE t (id INT PRIMARY KEY)", database=db)
    with pytest.raises(Exception, match=r"takes no schema_history"):
        (
            spark.read.format("mysql-cdc")
            .option("host", "127.0.0.1")
            .option("port", str(mariadb.port))
            .option("user", "root")
            .option("table", f"{db}.t")
            .option("schema_history", str(tmp_path / "history.jsonl"))
            .load()
            .collect()
        )


def flink_run(spark: Any, fmt: str, options: dict[str, str], tmp: Path) -> list[dict[str, Any]]:
    """One ``availableNow`` run of a table's stream with ``changelog`` ``flink``: every row of
    every micro-batch as a dict, in the order each batch holds them."""
    got: list[dict[str, Any]] = []
    reader = spark.readStream.format(fmt).option("changelog", "flink")
    for key, value in {**options, "schema_history": str(tmp / "history.jsonl"),
                       "snapshot_dir": str(tmp / "snapshot")}.items():  # fmt: skip
        reader = reader.option(key, value)
    df = reader.load()
    flink_run.schema = df.schema  # type: ignore[attr-defined]

    def collect(batch: Any, batch_id: int) -> None:
        got.extend(r.asDict(recursive=True) for r in batch.collect())

    query = (
        df.writeStream.foreachBatch(collect)
        .option("checkpointLocation", str(tmp / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    return got


def kinds_and_columns(rows: list[dict[str, Any]], *columns: str) -> list[tuple[Any, ...]]:
    return [(r["row_kind"], *(r[c] for c in columns)) for r in rows]


def in_log_order(rows: list[dict[str, Any]]) -> bool:
    positions = [r["source"]["position"] for r in rows]
    return positions == sorted(positions)


def test_flink_rows_of_a_mariadb_table_an_update_as_two_adjacent_rows(
    spark: Any, mariadb: ThrowawayMariaDB, db: str, tmp_path: Path
) -> None:
    mariadb.execute(
        "CREATE TABLE t (id INT PRIMARY KEY, name VARCHAR(20), amount DECIMAL(12,2))",
        "INSERT INTO t VALUES (1, 'one', 10.25)",
        database=db,
    )
    options = {"host": "127.0.0.1", "port": str(mariadb.port), "user": "root",
               "server_id": "7411-7415", "table": f"{db}.t"}  # fmt: skip
    snapshot = flink_run(spark, "mysql-cdc", options, tmp_path)
    schema = flink_run.schema  # type: ignore[attr-defined]
    assert schema.fieldNames() == [
        "row_kind", "id", "name", "amount", "database_name", "schema_name", "table_name",
        "op_ts", "source", "transaction",
    ]  # fmt: skip
    assert [f.dataType.simpleString() for f in schema.fields[:8]] == [
        "string", "int", "string", "decimal(12,2)", "string", "string", "string", "timestamp"
    ]  # fmt: skip
    assert kinds_and_columns(snapshot, "id", "name", "amount") == [
        ("+I", 1, "one", Decimal("10.25"))
    ]
    (read,) = snapshot
    assert (read["database_name"], read["schema_name"], read["table_name"]) == (db, None, "t")
    assert read["source"]["snapshot"] is True

    mariadb.execute(
        "INSERT INTO t VALUES (2, 'two', NULL)",
        "BEGIN",
        "UPDATE t SET amount = amount + 1, name = 'uno' WHERE id = 1",
        "UPDATE t SET id = 3 WHERE id = 2",
        "COMMIT",
        "DELETE FROM t WHERE id = 3",
        database=db,
    )
    changes = flink_run(spark, "mysql-cdc", options, tmp_path)
    assert kinds_and_columns(changes, "id", "name", "amount") == [
        ("+I", 2, "two", None),
        ("-U", 1, "one", Decimal("10.25")),
        ("+U", 1, "uno", Decimal("11.25")),
        ("-U", 2, "two", None),
        ("+U", 3, "two", None),
        ("-D", 3, "two", None),
    ]
    assert in_log_order(changes)
    update = changes[1:3]  # an update's two rows share its place in the log and transaction
    assert update[0]["source"] == update[1]["source"]
    assert update[0]["transaction"] == update[1]["transaction"]
    assert update[0]["transaction"]["total_order"] == 1
    assert changes[3]["transaction"]["total_order"] == 2
    ids = [r["transaction"]["id"] for r in changes]
    assert ids[1] is not None and ids[1:5] == [ids[1]] * 4 and len(set(ids)) == 3
    assert all(r["source"]["snapshot"] is False for r in changes)
    assert [round(r["op_ts"].timestamp() * 1000) for r in changes] == [
        r["source"]["ts_ms"] for r in changes
    ]
    assert {(r["database_name"], r["table_name"]) for r in changes} == {(db, "t")}


@pytest.mark.postgres
def test_flink_rows_of_a_postgres_table_and_a_before_image_it_does_not_log(
    spark: Any, postgres: ThrowawayPostgres, pgdb: str, tmp_path: Path
) -> None:
    sparkcdc.spark.register(spark, "postgres")
    postgres.execute(
        "CREATE TABLE full_t (id INT PRIMARY KEY, name TEXT, born DATE)",
        "ALTER TABLE full_t REPLICA IDENTITY FULL",
        "CREATE TABLE keyed (id INT PRIMARY KEY, name TEXT)",
        "INSERT INTO full_t VALUES (1, 'one', '2001-02-03')",
        "INSERT INTO keyed VALUES (1, 'one'), (2, 'two')",
        database=pgdb,
    )
    server = {"host": "127.0.0.1", "port": str(postgres.port), "user": postgres.user,
              "password": postgres.password, "database": pgdb}  # fmt: skip
    full = {**server, "table": "public.full_t", "slot": "flink_full"}
    keyed = {**server, "table": "public.keyed", "slot": "flink_keyed"}
    snapshot = flink_run(spark, "postgres-cdc", full, tmp_path / "full")
    assert kinds_and_columns(snapshot, "id", "name", "born") == [
        ("+I", 1, "one", dt.date(2001, 2, 3))
    ]
    assert kinds_and_columns(flink_run(spark, "postgres-cdc", keyed, tmp_path / "keyed"),
                             "id", "name") == [("+I", 1, "one"), ("+I", 2, "two")]  # fmt: skip

    postgres.execute(
        "INSERT INTO full_t VALUES (2, 'two', NULL)",
        "UPDATE full_t SET name = 'uno', born = '2001-02-04' WHERE id = 1",
        "DELETE FROM full_t WHERE id = 2",
        "DELETE FROM keyed WHERE id = 2",
        database=pgdb,
    )
    changes = flink_run(spark, "postgres-cdc", full, tmp_path / "full")
    assert kinds_and_columns(changes, "id", "name", "born") == [
        ("+I", 2, "two", None),
        ("-U", 1, "one", dt.date(2001, 2, 3)),
        ("+U", 1, "uno", dt.date(2001, 2, 4)),
        ("-D", 2, "two", None),
    ]
    assert in_log_order(changes)
    assert {(r["database_name"], r["schema_name"], r["table_name"]) for r in changes} == {
        (pgdb, "public", "full_t")
    }
    # REPLICA IDENTITY DEFAULT logs a delete's key only: the -D row holds it, the rest null
    deleted = flink_run(spark, "postgres-cdc", keyed, tmp_path / "keyed")
    assert kinds_and_columns(deleted, "id", "name") == [("-D", 2, None)]
    # ... and no before image of an update that keeps the key: no -U row is made up
    postgres.execute("UPDATE keyed SET name = 'uno' WHERE id = 1", database=pgdb)
    with pytest.raises(Exception, match=r"came without its before image.*REPLICA IDENTITY FULL"):
        flink_run(spark, "postgres-cdc", keyed, tmp_path / "keyed")


@pytest.mark.parametrize(
    ("columns", "options", "error"),
    [
        ("id INT PRIMARY KEY", {"table": "{db}.t", "changelog": "upsert"},
         r"option 'changelog': 'upsert' is not one of debezium, flink\."),
        ("id INT PRIMARY KEY", {"tables": r"{db}\.t", "changelog": "flink"},
         r"option 'changelog': it shapes the typed change stream of one table; set the options "
         r"'table' and 'schema_history'"),
        ("id INT PRIMARY KEY, source INT", {"table": "{db}.t", "changelog": "flink"},
         r"option 'changelog': \S+\.t has a column named 'source', which a flink row takes"),
    ],
)  # fmt: skip
def test_the_changelog_option_is_checked(
    spark: Any,
    mariadb: ThrowawayMariaDB,
    db: str,
    tmp_path: Path,
    columns: str,
    options: dict[str, str],
    error: str,
) -> None:
    mariadb.execute(f"CREATE TABLE t ({columns})", database=db)
    reader = (
        spark.readStream.format("mysql-cdc")
        .option("host", "127.0.0.1")
        .option("port", str(mariadb.port))
        .option("user", "root")
        .option("schema_history", str(tmp_path / "history.jsonl"))
    )
    for key, value in options.items():
        reader = reader.option(key, value.format(db=db))
    with pytest.raises(Exception, match=error):
        reader.load()
