"""``spark.readStream.format("mysql-cdc").option("table", …)``: one table's change events with
``before``/``after`` as typed structs of its columns, against a real MariaDB: the snapshot's
rows, then inserts, updates and deletes from the binlog, then a column added mid-stream."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from sparkcdc.sources.mysql.throwaway import ThrowawayMariaDB

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
