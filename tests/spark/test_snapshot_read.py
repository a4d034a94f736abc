"""``spark.read.format("mysql-cdc")``: one consistent, lock-free, parallel snapshot of a table as
a typed DataFrame, against a real MariaDB while writers go on."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from sparkcdc.sources.mysql.throwaway import ThrowawayMariaDB
from tests.e2e.snapshot_workload import Transfers

pytestmark = [pytest.mark.mariadb, pytest.mark.spark]


def reader(spark: Any, server: ThrowawayMariaDB, table: str, **options: str) -> Any:
    r = (
        spark.read.format("mysql-cdc")
        .option("host", "127.0.0.1")
        .option("port", str(server.port))
        .option("user", "root")
        .option("table", table)
        .option("server_id", "7301-7305")
    )
    for key, value in options.items():
        r = r.option(key, value)
    return r.load()


def test_a_batch_read_is_one_consistent_cut_while_transfers_go_on(
    spark: Any, mariadb: ThrowawayMariaDB, db: str
) -> None:
    Transfers.create(mariadb, db, 4000)
    transfers = Transfers(mariadb, db, 4000, seed=11)
    transfers.start()
    try:
        df = reader(spark, mariadb, f"{db}.accounts", chunk_size="300", parallelism="2")
        assert df.rdd.getNumPartitions() == 2
        rows = df.collect()
    finally:
        transfers.halt()
    assert transfers.commits > 20
    assert sorted(r["id"] for r in rows) == list(range(1, 4001))
    assert sum(r["balance"] for r in rows) == 4000 * Transfers.TOTAL_PER_ACCOUNT


def test_typed_columns_and_a_table_without_a_primary_key(
    spark: Any, mariadb: ThrowawayMariaDB, db: str
) -> None:
    mariadb.execute(
        "CREATE TABLE t (code INT NOT NULL, name VARCHAR(20), amount DECIMAL(30,10), "
        "born DATE, seen DATETIME(6))",
        "INSERT INTO t SELECT seq, CONCAT('n-', seq, '-ü'), seq / 3, "
        "DATE_ADD('2000-01-01', INTERVAL seq DAY), '2024-05-06 07:08:09.123456' "
        "FROM seq_1_to_2000",
        database=db,
    )
    with pytest.raises(Exception, match=r"chunk_key_columns"):
        reader(spark, mariadb, f"{db}.t").collect()
    df = reader(spark, mariadb, f"{db}.t", chunk_key_columns=f'{{"{db}.t": ["code"]}}')
    assert [f.name for f in df.schema.fields] == ["code", "name", "amount", "born", "seen"]
    rows = sorted(tuple(r) for r in df.collect())
    expected = sorted(
        tuple(r) for r in mariadb.query("SELECT code, name, amount, born, seen FROM t", db)
    )
    assert rows == expected
    assert isinstance(rows[0][2], Decimal) and rows[0][2].as_tuple().exponent == -10
