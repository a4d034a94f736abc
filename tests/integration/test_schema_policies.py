"""``pipeline.schema_changes`` on real DDL: one script of schema changes (add, widen, rename,
drop, narrow, nullability, default, truncate, change type) run on MariaDB and on PostgreSQL,
each change followed by a row change; the log reader's micro-batches written by the Delta and
the Iceberg sink under every policy, the replica and the change log checked after each one
against the README's table of DDL × policy."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from sparkcdc.config.model import SinkConfig
from sparkcdc.core.errors import SinkError
from sparkcdc.core.logitem import LogItem
from sparkcdc.core.schema_policy import SchemaPolicy
from sparkcdc.sinks.port import Sink, SinkContext
from sparkcdc.sinks.registry import open_sink
from sparkcdc.sources.mysql.throwaway import ThrowawayMariaDB
from sparkcdc.sources.postgres.throwaway import ThrowawayPostgres
from tests.cases.pg_stream import opened, read_until

BIG = 2**31 + 5  # beyond the INT the table was created with


@dataclass(frozen=True)
class Step:
    """One schema change (``mysql``/``postgres`` statements) and the row change after it."""

    name: str
    mysql: str
    postgres: str
    then: str


STEPS = [
    Step("add", "ALTER TABLE t ADD COLUMN tag INT NOT NULL DEFAULT 7",
         "ALTER TABLE t ADD COLUMN tag int NOT NULL DEFAULT 7",
         "INSERT INTO t (id, note, amount, gone, code, tag) VALUES (3, 'c', 3.50, 30, 7, 8)"),
    Step("widen", "ALTER TABLE t MODIFY id BIGINT NOT NULL",
         "ALTER TABLE t ALTER COLUMN id TYPE bigint",
         f"INSERT INTO t (id, note, amount, gone, code, tag) VALUES ({BIG}, 'd', 4.50, 40, 8, 8)"),
    Step("widen more",
         "ALTER TABLE t MODIFY price DECIMAL(16,4), MODIFY f DOUBLE, MODIFY d DATETIME",
         "ALTER TABLE t ALTER COLUMN price TYPE numeric(16,4), "
         "ALTER COLUMN f TYPE double precision, ALTER COLUMN d TYPE timestamp",
         "INSERT INTO t (id, note, amount, gone, code, tag, price, f, d) VALUES (4, 'dd', 4.00, "
         "40, 8, 8, 123456789012.3456, 0.1, '2024-05-06 07:08:09')"),
    Step("rename", "ALTER TABLE t RENAME COLUMN note TO remark",
         "ALTER TABLE t RENAME COLUMN note TO remark", "UPDATE t SET remark = 'aa' WHERE id = 1"),
    Step("drop", "ALTER TABLE t DROP COLUMN gone", "ALTER TABLE t DROP COLUMN gone",
         "INSERT INTO t (id, remark, amount, code, tag) VALUES (5, 'e', 5.50, 9, 8)"),
    Step("narrow", "ALTER TABLE t MODIFY amount DECIMAL(8,2)",
         "ALTER TABLE t ALTER COLUMN amount TYPE numeric(8,2)",
         "INSERT INTO t (id, remark, amount, code, tag) VALUES (6, 'f', 6.50, 10, 8)"),
    Step("nullability", "ALTER TABLE t MODIFY remark VARCHAR(10) NOT NULL",
         "ALTER TABLE t ALTER COLUMN remark SET NOT NULL",
         "INSERT INTO t (id, remark, amount, code, tag) VALUES (7, 'g', 7.50, 11, 8)"),
    Step("default", "ALTER TABLE t ALTER COLUMN tag SET DEFAULT 9",
         "ALTER TABLE t ALTER COLUMN tag SET DEFAULT 9",
         "INSERT INTO t (id, remark, amount, code) VALUES (8, 'h', 8.50, 12)"),
    Step("truncate", "TRUNCATE TABLE t", "TRUNCATE t",
         "INSERT INTO t (id, remark, amount, code) VALUES (10, 'j', 1.00, 13)"),
    Step("change type", "ALTER TABLE t MODIFY code VARCHAR(20)",
         "ALTER TABLE t ALTER COLUMN code TYPE varchar(20)",
         "INSERT INTO t (id, remark, amount, code) VALUES (11, 'k', 1.00, 'x1')"),
    Step("primary key", "ALTER TABLE t DROP PRIMARY KEY, ADD PRIMARY KEY (id, remark)",
         "ALTER TABLE t DROP CONSTRAINT t_pkey, ADD PRIMARY KEY (id, remark)",
         "UPDATE t SET amount = 2.00 WHERE id = 10"),
]  # fmt: skip
CREATE = {
    "mysql": "CREATE TABLE t (id INT PRIMARY KEY, note VARCHAR(10), amount DECIMAL(10,2), "
    "gone INT, code INT, price DECIMAL(10,2), f FLOAT, d DATE)",
    "postgres": "CREATE TABLE t (id int PRIMARY KEY, note varchar(10), amount numeric(10,2), "
    "gone int, code int, price numeric(10,2), f real, d date)",
}
FIRST_ROWS = (
    "INSERT INTO t (id, note, amount, gone, code, price, f, d) VALUES "
    "(1, 'a', 1.50, 10, 5, 1.25, 0.5, '2020-01-02'), (2, 'b', 2.50, 20, 6, NULL, NULL, NULL)"
)
_server_ids = itertools.count(7300)


Stage = list[list[LogItem]]  # one step's micro-batches


def batches(items: list[LogItem]) -> Stage:
    """The items as the store hands them to Spark: each schema change in a batch of its own."""
    out: Stage = []
    for item in (i for i in items if i.batch is not None and i.batch.num_rows):
        if item.is_ddl or not out or out[-1][-1].is_ddl:
            out.append([item])
        else:
            out[-1].append(item)
    return out


def row_changes(items: list[LogItem]) -> int:
    """The inserts, updates and deletes among ``items``."""
    ops = [op for i in items if i.batch is not None
           for op in i.batch.column("op").to_pylist()]  # fmt: skip
    return sum(op in ("c", "u", "d") for op in ops)


def staged(run: Callable[[str], None], take: Callable[[int], list[LogItem]], kind: str
           ) -> list[Stage]:  # fmt: skip
    """The first rows and each step run (``run`` a statement) and read (``take``: the items
    until that many row changes), as one stage each."""
    run(FIRST_ROWS)
    stages = [batches(take(2))]
    for n, step in enumerate(STEPS, 3):
        run(getattr(step, kind))
        run(step.then)
        stages.append(batches(take(n)))
    return stages


def mariadb_stages(server: ThrowawayMariaDB, db: str, tmp_path: Path) -> list[Stage]:
    from tests.integration.test_reader import Harness, latest, source_for

    server.execute(CREATE["mysql"], database=db)
    harness = Harness(source_for(server, rf"{db}\.t"), latest(server), tmp_path / "h.jsonl")
    seen = [0]

    def take(n: int) -> list[LogItem]:
        harness.until(lambda got: row_changes(got) >= n)
        items, seen[0] = harness.items[seen[0] :], len(harness.items)
        return items

    try:
        return staged(lambda sql: server.execute(sql, database=db), take, "mysql")
    finally:
        harness.close()


def postgres_stages(pg: ThrowawayPostgres, db: str) -> list[Stage]:
    pg.execute(CREATE["postgres"], "ALTER TABLE t REPLICA IDENTITY FULL", database=db)
    reader, store, _ = opened(pg, db, "s_policies")
    total = [0]

    def take(n: int) -> list[LogItem]:
        items = read_until(reader, store, lambda got: total[0] + row_changes(got) >= n)
        total[0] += row_changes(items)
        return items

    try:
        return staged(lambda sql: pg.execute(sql, database=db), take, "postgres")
    finally:
        reader.stop()


@dataclass(frozen=True)
class Frame:
    table: pa.Table

    def toArrow(self) -> pa.Table:  # noqa: N802 (Spark's name)
        return self.table


@dataclass
class Lake:
    """A sink of ``kind`` under ``policy`` writing to ``config``'s lake, batch ids counted."""

    config: SinkConfig
    policy: SchemaPolicy
    ids: Iterator[int]

    def __post_init__(self) -> None:
        context = SinkContext(app_id=lambda: "policies", schema_changes=self.policy)
        self.sink: Sink = open_sink(self.config, context)

    def write(self, batch: list[LogItem]) -> str | None:
        """The batch written; the sink's error (a sentence) if it stopped."""
        rows = pa.Table.from_batches([i.batch for i in batch if i.batch is not None])
        try:
            self.sink.write_batch(Frame(rows), next(self.ids))
        except SinkError as exc:
            return str(exc)
        return None

    def tables(self, db: str, table: str = "t") -> tuple[pa.Table, pa.Table]:
        """The replica of ``db.table`` and its change log."""
        if self.config.type == "delta":
            from deltalake import DeltaTable

            root = Path(self.config.path) / db
            return (DeltaTable(str(root / table)).to_pyarrow_table(),
                    DeltaTable(str(root / f"{table}__changelog")).to_pyarrow_table())  # fmt: skip
        from sparkcdc.sinks.iceberg.catalog import open_catalog

        catalog = open_catalog(self.config)
        return (catalog.load_table((db, table)).scan().to_arrow(),
                catalog.load_table((db, f"{table}__changelog")).scan().to_arrow())  # fmt: skip


def types(table: pa.Table) -> dict[str, pa.DataType]:
    plain = {pa.large_string(): pa.string(), pa.string_view(): pa.string()}
    return {f.name: plain.get(f.type, f.type) for f in table.schema}


def by_id(table: pa.Table) -> dict[int, dict[str, Any]]:
    return {r["id"]: r for r in table.to_pylist()}


FOLLOW = ("evolve", "try_evolve")


def check_stage(step: str, policy: str, replica: pa.Table, error: str | None, source: str) -> None:
    """The replica after ``step`` under ``policy`` (the README's table, column by column).
    PostgreSQL's log shows no key change of a table whose replica identity is FULL."""
    cols, rows = types(replica), by_id(replica)
    ignore = policy == "ignore"
    if step == "primary key" and source == "postgres":
        ignore = False
    if ignore and step in ("widen", "widen more", "change type"):
        assert error is not None and "does not fit" in error, error  # a value the type lacks
    elif step == "primary key" and ignore:  # ignore left remark out: no key to merge by
        assert error is not None and "leaves column remark out of its replica" in error, error
    else:
        assert error is None, error
    if step == "first rows":
        assert set(rows) == {1, 2}
    elif step == "add":
        assert ("tag" not in cols) if ignore else ([rows[i]["tag"] for i in (1, 2, 3)] == [7, 7, 8])
    elif step == "widen":
        assert cols["id"] == (pa.int32() if ignore else pa.int64())
        assert (BIG in rows) is not ignore
    elif step == "widen more":  # beyond DECIMAL(10,2), FLOAT and DATE right after the DDL
        kinds = [pa.decimal128(16, 4), pa.float64(), pa.timestamp("us")]
        if ignore:
            kinds = [pa.decimal128(10, 2), pa.float32(), pa.date32()]
        assert [cols[c] for c in ("price", "f", "d")] == kinds
        assert (4 in rows) is not ignore
        if not ignore:
            four, one = rows[4], rows[1]
            assert (str(four["price"]), four["f"]) == ("123456789012.3456", 0.1)
            assert four["d"] == datetime(2024, 5, 6, 7, 8, 9)
            assert (str(one["price"]), one["f"], one["d"]) == ("1.2500", 0.5, datetime(2020, 1, 2))
    elif step == "rename":
        assert ("note" in cols) is (policy not in FOLLOW)
        assert ("remark" in cols) is not ignore
        if not ignore:
            assert rows[1]["remark"] == "aa" and rows[2]["remark"] == "b"
        if "note" in cols:  # kept: the rows before the rename keep their values
            assert rows[2]["note"] == "b" and rows[1]["note"] is None
    elif step == "drop":
        assert ("gone" in cols) is (policy not in FOLLOW)
        if "gone" in cols:
            assert rows[2]["gone"] == 20 and rows[5]["gone"] is None
    elif step == "narrow":
        assert cols["amount"] == pa.decimal128(8 if policy in FOLLOW else 10, 2)
        assert str(rows[6]["amount"]) == "6.50"
    elif step in ("nullability", "default"):
        assert {7, 8} & set(rows)
        if step == "default" and not ignore:
            assert rows[8]["tag"] == 9
    elif step == "truncate":
        assert set(rows) == ({1, 2, 3, 5, 6, 7, 8, 10} if ignore else {10})
    elif step == "change type":
        assert cols["code"] == (pa.int32() if ignore else pa.string())
        if not ignore:
            assert rows[11]["code"] == "x1" and rows[10]["code"] == "13"
    elif step == "primary key" and not ignore:  # merged by the new key: one row 10, updated
        assert [str(r["amount"]) for r in replica.to_pylist() if r["id"] == 10] == ["2.00"]


def stage_names() -> list[str]:
    return ["first rows"] + [s.name for s in STEPS]


@pytest.fixture(scope="module")
def mariadb_script(mariadb: ThrowawayMariaDB, tmp_path_factory: pytest.TempPathFactory
                   ) -> tuple[str, list[Stage]]:  # fmt: skip
    db = "t_schema_policies"
    mariadb.execute(f"DROP DATABASE IF EXISTS `{db}`", f"CREATE DATABASE `{db}`")
    return db, mariadb_stages(mariadb, db, tmp_path_factory.mktemp("history"))


@pytest.fixture(scope="module")
def postgres_script(postgres: ThrowawayPostgres) -> Iterator[tuple[str, list[Stage]]]:
    db = "t_schema_policies"
    postgres.execute(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')
    postgres.create_database(db)
    stages = postgres_stages(postgres, db)
    postgres.execute("SELECT pg_drop_replication_slot('s_policies')", database=db)
    yield "public", stages


def script(request: pytest.FixtureRequest, source: str) -> tuple[str, list[Stage]]:
    found: tuple[str, list[Stage]] = request.getfixturevalue(f"{source}_script")
    return found


SOURCES = [pytest.param("mariadb", marks=pytest.mark.mariadb),
           pytest.param("postgres", marks=pytest.mark.postgres)]  # fmt: skip
SINKS = ["delta", "iceberg"]


@pytest.mark.parametrize("sink", SINKS)
@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("policy", ["evolve", "try_evolve", "lenient", "ignore"])
def test_each_policy_gives_the_replica_its_row_of_the_table(
    request: pytest.FixtureRequest, tmp_path: Path, source: str, sink: str, policy: str
) -> None:
    db, stages = script(request, source)
    lake = Lake(SinkConfig(path=str(tmp_path / "lake"), type=sink), SchemaPolicy(policy),
                itertools.count())  # fmt: skip
    for step, stage in zip(stage_names(), stages, strict=True):
        errors = [e for e in (lake.write(b) for b in stage) if e is not None]
        replica, changelog = lake.tables(db)
        check_stage(step, policy, replica, errors[0] if errors else None, source)
    after = {f.name: f.type for f in changelog.schema.field("after").type}
    assert ("tag" in after) is (policy != "ignore")
    if policy != "ignore":  # the change log keeps every column its images held, widened
        assert {"note", "gone", "remark"} <= set(after) and after["id"] == pa.int64()
        ids = {r["after"]["id"] for r in changelog.to_pylist() if r["after"]}
        assert BIG in ids


@pytest.mark.parametrize("sink", SINKS)
@pytest.mark.parametrize("source", SOURCES)
def test_exception_stops_at_the_first_change_and_again_at_its_replay(
    request: pytest.FixtureRequest, tmp_path: Path, source: str, sink: str
) -> None:
    db, stages = script(request, source)
    config = SinkConfig(path=str(tmp_path / "lake"), type=sink)
    lake = Lake(config, SchemaPolicy("exception"), itertools.count())
    assert [lake.write(b) for b in stages[0]] == [None] * len(stages[0])
    ddl = stages[1][0]
    for _ in range(2):  # the replay of the batch stops again: nothing of it was written
        error = lake.write(ddl)
        assert error is not None and "refused by pipeline.schema_changes: exception" in error
        assert "add_column: column tag added" in error
    assert "tag" not in types(lake.tables(db)[0])


@pytest.mark.parametrize("sink", SINKS)
@pytest.mark.parametrize("source", SOURCES)
def test_exception_for_some_kinds_lets_the_rest_through(
    request: pytest.FixtureRequest, tmp_path: Path, source: str, sink: str
) -> None:
    """``{drop_column, alter_column_nullability, truncate_table, alter_primary_key:
    exception}`` stops at the DROP COLUMN only; started again with lenient for it, at the next
    kind it names (MariaDB's NOT NULL; PostgreSQL's log does not show a nullability change),
    then at the TRUNCATE, then at MariaDB's key change (PostgreSQL's log shows none for a table
    whose replica identity is FULL); a default's change, the renames, the type changes and
    the added column never stop."""
    db, stages = script(request, source)
    config = SinkConfig(path=str(tmp_path / "lake"), type=sink)
    strict = {"drop_column": "exception", "alter_column_nullability": "exception",
              "truncate_table": "exception", "alter_primary_key": "exception"}  # fmt: skip
    names = stage_names()
    stops: list[str] = []
    ids = itertools.count()
    lake = Lake(config, SchemaPolicy("lenient", strict), ids)
    for step, stage in zip(names, stages, strict=True):
        for batch in stage:
            error = lake.write(batch)
            while error is not None:  # the team lets this kind through and starts again
                assert "refused by pipeline.schema_changes." in error, error
                stops.append(step)
                strict = {k: v for k, v in strict.items() if not error.startswith(
                    f"a schema change of {db}.t ({k}")}  # fmt: skip
                lake = Lake(config, SchemaPolicy("lenient", strict), ids)
                error = lake.write(batch)
    expected = (["drop", "nullability", "truncate", "primary key"] if source == "mariadb"
                else ["drop", "truncate"])  # fmt: skip
    assert stops == expected


TABLE_STEPS = [  # MariaDB's DROP TABLE and RENAME TABLE (captured: t and v)
    ("first rows", "INSERT INTO t VALUES (1, 'a'), (2, 'b')"),
    ("drop table", "DROP TABLE t; CREATE TABLE t (id INT PRIMARY KEY, note VARCHAR(10)); "
                   "INSERT INTO t VALUES (20, 'x')"),
    ("rename table", "RENAME TABLE t TO v; INSERT INTO v VALUES (21, 'y')"),
]  # fmt: skip


@pytest.fixture(scope="module")
def table_script(mariadb: ThrowawayMariaDB, tmp_path_factory: pytest.TempPathFactory
                 ) -> tuple[str, list[Stage]]:  # fmt: skip
    from tests.integration.test_reader import Harness, latest, source_for

    db = "t_table_policies"
    mariadb.execute(f"DROP DATABASE IF EXISTS `{db}`", f"CREATE DATABASE `{db}`",
                    f"CREATE TABLE `{db}`.t (id INT PRIMARY KEY, note VARCHAR(10))")  # fmt: skip
    history = tmp_path_factory.mktemp("history") / "h.jsonl"
    harness = Harness(source_for(mariadb, rf"{db}\.(t|v)"), latest(mariadb), history)
    stages, seen = [], 0
    try:
        for n, (_, sql) in enumerate(TABLE_STEPS, 1):
            mariadb.execute(*sql.split("; "), database=db)
            harness.until(lambda got, n=n: row_changes(got) >= 2 + n - 1)
            stages.append(batches(harness.items[seen:]))
            seen = len(harness.items)
    finally:
        harness.close()
    return db, stages


@pytest.mark.mariadb
@pytest.mark.parametrize("sink", SINKS)
@pytest.mark.parametrize("policy", ["lenient", "ignore", "exception"])
def test_a_dropped_and_a_renamed_table_under_each_policy(
    table_script: tuple[str, list[Stage]], tmp_path: Path, sink: str, policy: str
) -> None:
    """DROP TABLE empties the replica but under ``ignore``; RENAME TABLE starts the new name's
    tables under every policy but ``exception``, which stops at each (let through one by one,
    as a team would)."""
    db, stages = table_script
    config = SinkConfig(path=str(tmp_path / "lake"), type=sink)
    kinds = (
        {"drop_table": "exception", "rename_table": "exception"} if policy == "exception" else {}
    )
    lake = Lake(config, SchemaPolicy("lenient" if kinds else policy, kinds), itertools.count())
    stops = []
    for (step, _), stage in zip(TABLE_STEPS, stages, strict=True):
        for batch in stage:
            error = lake.write(batch)
            if error is not None:
                kind = "drop_table" if step == "drop table" else "rename_table"
                assert f"({kind}: " in error and "refused by" in error, error
                stops.append(step)
                kinds.pop(kind)
                lake = Lake(
                    config, SchemaPolicy("lenient", kinds), itertools.count(100 * len(stops))
                )
                assert lake.write(batch) is None
        if step == "drop table":
            kept = set(by_id(lake.tables(db)[0]))
            assert kept == ({1, 2, 20} if policy == "ignore" else {20})
    assert set(by_id(lake.tables(db, "v")[0])) == {21}
    assert stops == (["drop table", "rename table"] if policy == "exception" else [])
