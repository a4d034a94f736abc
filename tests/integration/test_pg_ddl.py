"""What each PostgreSQL DDL did to the rows a table already holds, as the log reader says it in
the ``s`` row's ``existing`` (against a real server): an added column's default filled from the
catalog (constant, expression, domain, NOT NULL), a volatile one or a conversion read again, a
rename copied, a type change that keeps every value left alone, DDL that changes no value
passed over, a change made and undone between two changes of the table caught, and a restarted
reader judging the DDL made while it was stopped from its schema history."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sparkcdc.sources.postgres.offset import LsnOffset
from sparkcdc.sources.postgres.stream.reader import PgLogReader
from sparkcdc.sources.postgres.throwaway import ThrowawayPostgres
from sparkcdc.store.ring import EventStore
from tests.cases.pg_stream import images, opened, read_until, rows, schema_events

pytestmark = pytest.mark.postgres

Event = dict[str, Any]


class Steps:
    """A reader on a test's table: each step runs statements, then reads until ``more`` new
    schema events (``s`` rows after the announcement) and ``changes`` new row changes came."""

    def __init__(self, pg: ThrowawayPostgres, db: str, reader: PgLogReader, store: EventStore):
        self.pg, self.db, self.reader, self.store = pg, db, reader, store
        self.items = read_until(reader, store, lambda got: len(schema_events(got)) >= 1)

    def __call__(self, *statements: str, more: int = 1, changes: int = 1) -> list[Event]:
        events, seen = len(schema_events(self.items)), len(rows(self.items))
        self.pg.execute(*statements, database=self.db)
        self.items += read_until(
            self.reader, self.store,
            lambda got: len(schema_events(self.items + got)) >= events + more
            and len(rows(self.items + got)) >= seen + changes,
        )  # fmt: skip
        return schema_events(self.items)[events:]

    def last_after(self) -> Event:
        after = images(rows(self.items)[-1])[1]
        assert after is not None
        return after


def existing(event: Event) -> dict[str, Any]:
    change = json.loads(event["after"])
    assert change["kind"] == "alter", change
    return dict(change.get("existing", {}))


def columns(event: Event) -> list[tuple[str, str]]:
    schema = json.loads(event["schema"])
    return [(c["name"], c["logical"]) for c in schema["columns"]]


def test_added_columns_take_the_catalogs_value_or_ask_for_a_snapshot(
    postgres: ThrowawayPostgres, pgdb: str
) -> None:
    postgres.execute(
        "CREATE TABLE t (id int PRIMARY KEY, n int)",
        "INSERT INTO t SELECT g, g FROM generate_series(1, 3) g",
        "CREATE DOMAIN dd AS int DEFAULT 42",
        database=pgdb,
    )
    reader, store, _ = opened(postgres, pgdb, "s_added")
    step = Steps(postgres, pgdb, reader, store)
    touch = "UPDATE t SET n = n + 1 WHERE id = 1"  # its after image: what the source says
    try:
        filled = {
            "c int DEFAULT 0": ("c", 0),
            "nn int NOT NULL DEFAULT 7": ("nn", 7),
            "at timestamptz DEFAULT now()": ("at", None),  # one value, the ALTER's time
            "e int DEFAULT 1 + 2": ("e", 3),
            "d dd": ("d", 42),  # the domain's default
            "s text DEFAULT 'a,b \"q\"'": ("s", 'a,b "q"'),
            "num numeric(5,2) DEFAULT 1.5": ("num", "1.50"),
            "day date DEFAULT '2024-02-29'": ("day", "2024-02-29"),
        }
        for ddl, (name, value) in filled.items():
            [event] = step(f"ALTER TABLE t ADD COLUMN {ddl}", touch)
            source = step.last_after()[name]
            assert existing(event) == {"fill": {name: source}}, ddl
            assert value is None or source == value
        [event] = step("ALTER TABLE t ADD COLUMN plain text", touch)
        assert existing(event) == {} and columns(event)[-1] == ("plain", "string")
        for ddl in ("u uuid DEFAULT gen_random_uuid()", "arr int[] DEFAULT '{1,2}'",
                    "ser serial", "ident int GENERATED ALWAYS AS IDENTITY"):  # fmt: skip
            [event] = step(f"ALTER TABLE t ADD COLUMN {ddl}", touch)
            assert "reads the table again" in existing(event)["resnapshot"], ddl
    finally:
        reader.stop()
    assert reader.error is None


def test_renames_copy_and_type_changes_keep_or_read_again(
    postgres: ThrowawayPostgres, pgdb: str
) -> None:
    postgres.execute(
        "CREATE TABLE r (id int PRIMARY KEY, a text, b text, v numeric(10,3), s varchar(10),"
        " w numeric(10,2), k int)",
        "INSERT INTO r SELECT g, 'a' || g, 'b' || g, g / 7.0, 'abcdefgh' || g, g, g"
        " FROM generate_series(1, 3) g",
        database=pgdb,
    )
    reader, store, _ = opened(postgres, pgdb, "s_renames")
    step = Steps(postgres, pgdb, reader, store)
    touch = "UPDATE r SET w = w WHERE {} = 1"
    try:
        [event] = step("ALTER TABLE r RENAME COLUMN a TO a2", touch.format("id"))
        assert existing(event) == {"copy": {"a2": "a"}}
        assert [n for n, _ in columns(event)] == ["id", "a2", "b", "v", "s", "w", "k"]
        swap = ("BEGIN", "ALTER TABLE r RENAME COLUMN a2 TO tmp",
                "ALTER TABLE r RENAME COLUMN b TO a2", "ALTER TABLE r RENAME COLUMN tmp TO b",
                "COMMIT")  # fmt: skip
        [event] = step(*swap, touch.format("id"))
        assert existing(event) == {"copy": {"a2": "b", "b": "a2"}}
        assert step.last_after()["a2"] == "b1"
        kept = {"s TYPE varchar(20)": ("s", 20), "s TYPE text": ("s", None),
                "w TYPE numeric(12,2)": ("w", None)}  # fmt: skip
        for ddl, (name, length) in kept.items():
            [event] = step(f"ALTER TABLE r ALTER COLUMN {ddl}", touch.format("id"))
            assert existing(event) == {}, ddl
            col = next(c for c in json.loads(event["schema"])["columns"] if c["name"] == name)
            assert length is None or col["length"] == length
        for ddl in ("v TYPE numeric(10,1)", "k TYPE bigint", "s TYPE varchar(4) USING left(s, 4)"):
            [event] = step(f"ALTER TABLE r ALTER COLUMN {ddl}", touch.format("id"))
            assert "reads the table again" in existing(event)["resnapshot"], ddl
        assert dict(columns(event))["k"] == "int64"
        [event] = step("ALTER TABLE r RENAME COLUMN id TO rid", touch.format("rid"))
        assert existing(event) == {"copy": {"rid": "id"}}
        assert json.loads(event["schema"])["primary_key"] == ["rid"]
    finally:
        reader.stop()
    assert reader.error is None


def test_ddl_that_changes_no_value_leaves_the_rows_alone(
    postgres: ThrowawayPostgres, pgdb: str
) -> None:
    postgres.execute(
        "CREATE TABLE q (id int PRIMARY KEY, n int, x text)",
        "INSERT INTO q SELECT g, g, 'x' FROM generate_series(1, 3) g",
        database=pgdb,
    )
    reader, store, _ = opened(postgres, pgdb, "s_quiet")
    step = Steps(postgres, pgdb, reader, store)
    try:
        quiet = (
            "ALTER TABLE q ALTER COLUMN n SET NOT NULL",
            "ALTER TABLE q ALTER COLUMN n SET DEFAULT 5",
            "ALTER TABLE q ALTER COLUMN x SET STORAGE EXTERNAL",
            "VACUUM FULL q",
            "CLUSTER q USING q_pkey",
        )
        for ddl in quiet:  # a Relation message follows each, the schema unchanged
            assert step(ddl, "UPDATE q SET n = n + 1 WHERE id = 1", more=0) == []
        [event] = step("ALTER TABLE q DROP COLUMN x", "UPDATE q SET n = n + 1 WHERE id = 1")
        assert existing(event) == {} and [n for n, _ in columns(event)] == ["id", "n"]
        [event] = step("TRUNCATE q", more=1, changes=0)
        assert json.loads(event["after"]) == {"kind": "truncate"}
        assert step("INSERT INTO q VALUES (9, 9)", more=0) == []
    finally:
        reader.stop()
    assert reader.error is None


def test_a_change_made_and_undone_between_two_changes_of_the_table_is_read_again(
    postgres: ThrowawayPostgres, pgdb: str
) -> None:
    """The Relation messages before and after look alike; the catalog's attnums and the
    table's rewrite tell."""
    postgres.execute(
        "CREATE TABLE l (id int PRIMARY KEY, v numeric(10,3), z int)",
        "INSERT INTO l SELECT g, g / 7.0, g FROM generate_series(1, 3) g",
        database=pgdb,
    )
    reader, store, _ = opened(postgres, pgdb, "s_lookalike")
    step = Steps(postgres, pgdb, reader, store)
    touch = "UPDATE l SET v = v WHERE id = 1"
    try:
        [event] = step(
            "ALTER TABLE l DROP COLUMN z", "ALTER TABLE l ADD COLUMN z int DEFAULT 9", touch
        )
        assert "reads the table again" in existing(event)["resnapshot"]
        assert [n for n, _ in columns(event)] == ["id", "v", "z"]
        there_and_back = ("ALTER TABLE l ALTER COLUMN v TYPE numeric(10,1)",
                          "ALTER TABLE l ALTER COLUMN v TYPE numeric(10,3)")  # fmt: skip
        [event] = step(*there_and_back, touch)
        assert "rewritten" in existing(event)["resnapshot"]
        assert step("UPDATE l SET v = v WHERE id = 2", more=0) == []  # judged once
    finally:
        reader.stop()
    assert reader.error is None


def test_a_restarted_reader_judges_the_ddl_made_while_it_was_stopped(
    postgres: ThrowawayPostgres, pgdb: str, tmp_path: Path
) -> None:
    """The schema history gives the schema in force at the committed offset, so the Relation
    messages show the DDL made since; without it the catalog's schema would hide it."""
    history = str(tmp_path / "schema_history.jsonl")
    postgres.execute("CREATE TABLE h (id int PRIMARY KEY)", database=pgdb)
    reader, store, _ = opened(postgres, pgdb, "s_restart", history=history)
    try:
        postgres.execute("INSERT INTO h VALUES (1)", database=pgdb)
        committed = read_until(reader, store, lambda got: len(rows(got)) >= 1)[-1].after
    finally:
        reader.stop()
    assert isinstance(committed, LsnOffset)
    postgres.execute(
        "ALTER TABLE h ADD COLUMN c int DEFAULT 5", "INSERT INTO h (id) VALUES (2)",
        "ALTER TABLE h ADD COLUMN d text DEFAULT 'six'", "INSERT INTO h (id) VALUES (3)",
        database=pgdb,
    )  # fmt: skip
    seen: dict[str, list[Event]] = {}
    for name, file in (("history", history), ("none", "")):
        again, store, _ = opened(postgres, pgdb, "s_restart", start=committed, history=file)
        try:
            got = read_until(again, store, lambda got: len(rows(got)) >= 2)
        finally:
            again.stop()
        seen[name] = schema_events(got)
    announce, first, second = seen["history"]
    assert [c["name"] for c in json.loads(announce["schema"])["columns"]] == ["id"]
    assert existing(first) == {"fill": {"c": 5}} and existing(second) == {"fill": {"d": "six"}}
    announce, first, second = seen["none"]  # announced as the catalog has it now
    assert [c["name"] for c in json.loads(announce["schema"])["columns"]] == ["id", "c", "d"]
    assert "reads the table again" in existing(first)["resnapshot"]


def test_a_partitioned_tables_added_column_is_filled_when_its_partitions_agree(
    postgres: ThrowawayPostgres, pgdb: str
) -> None:
    postgres.execute(
        "CREATE TABLE p (id int PRIMARY KEY, n int) PARTITION BY RANGE (id)",
        "CREATE TABLE p1 PARTITION OF p FOR VALUES FROM (0) TO (10)",
        "CREATE TABLE p2 PARTITION OF p FOR VALUES FROM (10) TO (20)",
        "INSERT INTO p VALUES (1, 1), (11, 11)",
        database=pgdb,
    )
    reader, store, _ = opened(postgres, pgdb, "s_parts")
    step = Steps(postgres, pgdb, reader, store)
    try:
        [event] = step(
            "ALTER TABLE p ADD COLUMN c int DEFAULT 4", "UPDATE p SET n = 0 WHERE id = 11"
        )
        assert existing(event) == {"fill": {"c": 4}}
        [event] = step("ALTER TABLE p ADD COLUMN u uuid DEFAULT gen_random_uuid()",
                       "UPDATE p SET n = 0 WHERE id = 1")  # fmt: skip
        assert "reads the table again" in existing(event)["resnapshot"]
    finally:
        reader.stop()
    assert reader.error is None
