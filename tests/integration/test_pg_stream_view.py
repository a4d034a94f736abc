"""An incremental snapshot's chunks of a PostgreSQL table read in the log reader's schema of it
(against a real server): DDL with no change of its table since has not reached the log, so the
chunks read the table as the reader describes it (a renamed column, the key too, under its old
name, an added one left out, one retyped without a rewrite cast back, a dropped one as null, a
converted one as null where the table was rewritten), and the Relation message that comes with
the table's next change is judged on top of those rows as on rows read before the DDL. Where the
reader cannot say which attribute each column is, columns are read by name where the catalog
describes them as the reader does."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sparkcdc.core.schema import TableSchema
from sparkcdc.snapshot.dialect import SnapshotDialect
from sparkcdc.sources.port import TableView
from sparkcdc.sources.postgres.chunks.view_token import ViewToken
from sparkcdc.sources.postgres.source import PostgresSource
from sparkcdc.sources.postgres.stream.reader import PgLogReader
from sparkcdc.sources.postgres.throwaway import ThrowawayPostgres
from tests.cases.pg_stream import opened, read_until, schema_events, source_of

pytestmark = pytest.mark.postgres

ROWS = 10
Row = dict[str, Any]


def read_all(dialect: SnapshotDialect, schema: TableSchema) -> list[Row]:
    """Every row of ``schema``'s table (after images, by key) in two chunks cut where the
    dialect says, checking the key queries name the key as the reader does."""
    keys = dialect.key_columns(schema.db, schema.table, list(schema.key))
    assert [k.name for k in keys] == list(schema.key)
    assert dialect.key_range(schema.db, schema.table, keys) == ((1,), (ROWS,))
    middle = dialect.key_after(schema.db, schema.table, keys, None, ROWS // 2)
    assert middle == (ROWS // 2 + 1,)
    assert dialect.count_between(schema.db, schema.table, keys, None, middle, 100) == ROWS // 2
    out = []
    for lo, hi in ((None, middle), (middle, None)):
        chunk = dialect.read_chunk(schema, keys, lo, hi)
        out += [json.loads(a) for a in chunk.column("after").to_pylist()]
        typed = dialect.read_chunk(schema, keys, lo, hi, typed=True)
        assert typed.column_names[1:] == schema.column_names()
    return sorted(out, key=lambda r: r[schema.key[0]])


def alter_of(reader: PgLogReader, store: Any, table: str) -> dict[str, Any]:
    """The ``existing`` of the next ``alter`` row of ``table`` the reader puts."""

    def found(items: Any) -> list[dict[str, Any]]:
        return [json.loads(e["after"]) for e in schema_events(items)
                if e["table"] == table and json.loads(e["after"])["kind"] == "alter"]  # fmt: skip

    return dict(found(read_until(reader, store, lambda items: bool(found(items))))[0]
                .get("existing", {}))  # fmt: skip


def test_chunks_read_the_table_as_the_log_reader_describes_it(
    postgres: ThrowawayPostgres, pgdb: str
) -> None:
    postgres.execute(
        "CREATE TABLE t (id int PRIMARY KEY, a text, s varchar(10), w numeric(10,2), k int)",
        f"INSERT INTO t SELECT g, 'a' || g, 's' || g, g / 4.0, g FROM generate_series(1, {ROWS}) g",
        "CREATE TABLE rw (id int PRIMARY KEY, m numeric(10,3), k int)",
        f"INSERT INTO rw SELECT g, g / 7.0, g FROM generate_series(1, {ROWS}) g",
        "CREATE TABLE dr (id int PRIMARY KEY, d int, k int)",
        f"INSERT INTO dr SELECT g, g * 10, g FROM generate_series(1, {ROWS}) g",
        database=pgdb,
    )
    source = PostgresSource(source_of(postgres, pgdb, "stream_view"))
    reader, store, _ = opened(postgres, pgdb, "stream_view")
    try:
        read_until(reader, store, lambda items: len(schema_events(items)) >= 3)  # announced
        t, rw, dr = (reader.table_view(f"public.{n}") for n in ("t", "rw", "dr"))
        assert t and rw and dr and reader.table_view("public.none") is None
        postgres.execute(
            "ALTER TABLE t RENAME COLUMN a TO b",
            "ALTER TABLE t RENAME COLUMN id TO ident",  # the key
            "ALTER TABLE t ADD COLUMN x int NOT NULL DEFAULT 5",
            "ALTER TABLE t ALTER COLUMN s TYPE varchar(40)",  # no rewrite: the values stay
            "ALTER TABLE t ALTER COLUMN w TYPE numeric(14,2)",
            "ALTER TABLE dr DROP COLUMN d",
            "ALTER TABLE rw ALTER COLUMN m TYPE numeric(10,1)",  # a rewrite: converted
            "ALTER TABLE rw ADD COLUMN u uuid DEFAULT gen_random_uuid()",
            database=pgdb,
        )
        assert reader.table_view("public.t") == t  # no change of t since: the log has no DDL
        with source.view_chunks(t) as dialect:
            rows = read_all(dialect, t.schema)
            assert rows == [{"id": i, "a": f"a{i}", "s": f"s{i}", "w": f"{i / 4:.2f}", "k": i}
                            for i in range(1, ROWS + 1)]  # fmt: skip
            postgres.execute("ALTER TABLE t RENAME COLUMN b TO c", database=pgdb)
            assert read_all(dialect, t.schema) == rows  # the names read before: read again
        with source.view_chunks(rw) as dialect:
            assert read_all(dialect, rw.schema) == [
                {"id": i, "m": None, "k": i} for i in range(1, ROWS + 1)
            ]  # m converted: the Relation message reads the table again
        with source.view_chunks(dr) as dialect:
            assert read_all(dialect, dr.schema) == [
                {"id": i, "d": None, "k": i} for i in range(1, ROWS + 1)
            ]
        postgres.execute(
            "UPDATE t SET c = 'first' WHERE ident = 1", "UPDATE rw SET k = 0 WHERE id = 1",
            database=pgdb,
        )  # fmt: skip
        judged = alter_of(reader, store, "t")
        assert judged == {"copy": {"c": "a", "ident": "id"}, "fill": {"x": 5}}
        assert "reads the table again" in alter_of(reader, store, "rw")["resnapshot"]
        now = reader.table_view("public.t")
        assert now is not None and now.schema.column_names() == ["ident", "c", "s", "w", "k", "x"]
        with source.view_chunks(now) as dialect:
            assert read_all(dialect, now.schema)[1] == {
                "ident": 2, "c": "a2", "s": "s2", "w": "0.50", "k": 2, "x": 5
            }  # fmt: skip
    finally:
        reader.stop()


def test_columns_the_reader_cannot_place_are_read_by_name_as_it_describes_them(
    postgres: ThrowawayPostgres, pgdb: str
) -> None:
    postgres.execute(
        "CREATE TABLE t (id int PRIMARY KEY, a text, s varchar(10), n int)",
        f"INSERT INTO t SELECT g, 'a' || g, 's' || g, g FROM generate_series(1, {ROWS}) g",
        database=pgdb,
    )
    source = PostgresSource(source_of(postgres, pgdb, "by_name"))
    with source.catalog() as catalog:
        schema = catalog.load_schema("public", "t")
    postgres.execute(
        "ALTER TABLE t RENAME COLUMN a TO b", "ALTER TABLE t ALTER COLUMN s TYPE text",
        database=pgdb,
    )  # fmt: skip
    view = TableView(schema, ViewToken((), None).text())  # which attribute each is: unknown
    with source.view_chunks(view) as dialect:
        assert read_all(dialect, schema) == [
            {"id": i, "a": None, "s": None, "n": i} for i in range(1, ROWS + 1)
        ]  # the next Relation message reads the table again
