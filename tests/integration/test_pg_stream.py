"""The PostgreSQL log reader against a real server: pgoutput changes into store items, typed
images equal to the JSON ones, schema changes and TRUNCATE from the stream, the slot moving only
when a batch is acknowledged, an idle slot following the WAL, a split transaction resumed, and
a TOASTed value the log left out."""

from __future__ import annotations

import json
import time

import pyarrow as pa
import pytest

from sparkcdc.core.convert import decode_images
from sparkcdc.core.errors import LogPositionGone, SourceError
from sparkcdc.core.images import UNCHANGED_KEY, images_of
from sparkcdc.sources.postgres.offset import LsnOffset
from sparkcdc.sources.postgres.source import PostgresSource
from sparkcdc.sources.postgres.throwaway import ThrowawayPostgres
from sparkcdc.sources.postgres.wire.lsn import parse_lsn
from sparkcdc.store.ring import EventStore
from tests.cases.pg_stream import (
    Items,
    confirmed_lsn,
    images,
    opened,
    read_until,
    rows,
    schema_events,
    source_of,
    wait_for,
)

pytestmark = pytest.mark.postgres


def test_inserts_updates_deletes_and_a_key_change_arrive_in_commit_order(
    postgres: ThrowawayPostgres, pgdb: str
) -> None:
    postgres.execute("CREATE TABLE items (id int PRIMARY KEY, name text, qty int)", database=pgdb)
    reader, store, start = opened(postgres, pgdb, "s_order")
    try:
        postgres.execute(
            "INSERT INTO items VALUES (1, 'a', 1), (2, 'b', 2)",
            "UPDATE items SET qty = 10 WHERE id = 1",
            "UPDATE items SET id = 3 WHERE id = 2",
            "DELETE FROM items WHERE id = 1",
            database=pgdb,
        )
        items = read_until(reader, store, lambda got: len(rows(got)) >= 5)
    finally:
        reader.stop()
    got = [(r["op"], r["key"], *images(r)) for r in rows(items)]
    assert got == [
        ("c", "[1]", None, {"id": 1, "name": "a", "qty": 1}),
        ("c", "[2]", None, {"id": 2, "name": "b", "qty": 2}),
        ("u", "[1]", None, {"id": 1, "name": "a", "qty": 10}),
        ("u", "[3]", {"id": 2, "name": None, "qty": None}, {"id": 3, "name": "b", "qty": 2}),
        ("d", "[1]", {"id": 1, "name": None, "qty": None}, None),
    ]
    [announce] = schema_events(items)[:1]
    assert json.loads(announce["after"]) == {"kind": "announce"}
    assert announce["db"] == "public" and announce["table"] == "items"
    for event in [announce, *rows(items)]:
        assert (event["source"]["db"], event["source"]["schema"]) == (pgdb, "public")
    positions = [r["source"]["position"] for r in rows(items)]
    assert positions == sorted(positions) and len(set(positions)) == 5
    lsns = [r["source"]["lsn"] for r in rows(items)]
    assert lsns == sorted(lsns) and all(lsn > start.lsn for lsn in lsns)
    assert len({r["transaction"]["id"] for r in rows(items)}) == 4  # the insert, 2 updates, delete
    assert all(i.after.at_boundary for i in items)


TYPED_COLUMNS = (
    "id bigint PRIMARY KEY, amount numeric(12,2), note text, at timestamptz, flag boolean, "
    "data bytea, day date, f4 real, f8 double precision, small smallint, big numeric"
)


def test_typed_images_equal_the_json_images_read_back(
    postgres: ThrowawayPostgres, pgdb: str
) -> None:
    postgres.execute(f"CREATE TABLE t ({TYPED_COLUMNS})", database=pgdb)
    inserts = (
        "INSERT INTO t VALUES (1, 12.50, 'héllo', '2024-02-29 13:14:15.123456+02', true, "
        "'\\x00ff10', '1999-12-31', 1.5, 0.1, -3, 123456789012345678901234567890.5)",
        "INSERT INTO t (id) VALUES (2)",
        "UPDATE t SET note = 'x', flag = false WHERE id = 1",
    )
    seen: dict[bool, Items] = {}
    for typed in (False, True):
        reader, store, _ = opened(postgres, pgdb, f"s_typed_{int(typed)}", typed=typed)
        try:
            postgres.execute(*inserts, database=pgdb)
            seen[typed] = read_until(reader, store, lambda got: len(rows(got)) >= 3)
        finally:
            reader.stop()
        postgres.execute("DELETE FROM t", database=pgdb)
    json_rows = rows(seen[False])
    with PostgresSource(source_of(postgres, pgdb, "s_typed_0")).catalog() as catalog:
        schema = catalog.load_schema("public", "t")
    expected_after = decode_images(pa.array([r["after"] for r in json_rows]), schema)
    typed_items = [i for i in seen[True] if i.batch is not None and not i.is_ddl]
    fields = list(expected_after.type)
    positions = pa.concat_arrays([i.batch.column("source").field("position") for i in typed_items])
    found = [t for i in typed_items for t in i.images]
    _, _, after = images_of(positions, found, fields)
    assert after.to_pylist() == expected_after.to_pylist()
    assert json.loads(json_rows[0]["after"])["amount"] == "12.50"
    assert json.loads(json_rows[0]["after"])["at"] == "2024-02-29T11:14:15.123456Z"


def test_columns_added_and_dropped_and_truncate_come_from_the_stream(
    postgres: ThrowawayPostgres, pgdb: str
) -> None:
    postgres.execute("CREATE TABLE evo (id int PRIMARY KEY, a text)", database=pgdb)
    reader, store, _ = opened(postgres, pgdb, "s_evo")
    items: Items = []

    def step(*statements: str, changes: int, events: int) -> None:
        """Run statements and read their changes before the next step: the reader's catalog
        then says what the log says (no DDL beyond the Relation message read)."""
        postgres.execute(*statements, database=pgdb)
        done = items + read_until(
            reader, store,
            lambda got: len(rows(items + got)) >= changes
            and len(schema_events(items + got)) >= events,
        )  # fmt: skip
        items[:] = done

    try:
        step("INSERT INTO evo VALUES (1, 'x')", changes=1, events=1)
        step("ALTER TABLE evo ADD COLUMN b numeric(5,1)", "INSERT INTO evo VALUES (2, 'y', 2.5)",
             changes=2, events=2)  # fmt: skip
        step(
            "ALTER TABLE evo DROP COLUMN a", "INSERT INTO evo VALUES (3, 3.5)", changes=3, events=3
        )
        step("TRUNCATE evo", changes=3, events=4)
    finally:
        reader.stop()
    assert [images(r)[1] for r in rows(items)] == [
        {"id": 1, "a": "x"}, {"id": 2, "a": "y", "b": "2.5"}, {"id": 3, "b": "3.5"},
    ]  # fmt: skip
    kinds = [json.loads(r["after"])["kind"] for r in schema_events(items)]
    assert kinds == ["announce", "alter", "alter", "truncate"]
    altered = [json.loads(r["schema"]) for r in schema_events(items)[1:3]]
    assert [[c["name"] for c in s["columns"]] for s in altered] == [["id", "a", "b"], ["id", "b"]]
    assert schema_events(items)[3]["ddl"] == "TRUNCATE public.evo"
    ddl_items = [i for i in items if i.is_ddl]
    assert [i.open_transaction for i in ddl_items] == [False, True, True, True]  # each held by
    # the store until its transaction's end is in it


def test_a_truncate_alone_is_handed_out_without_waiting_for_the_next_change(
    postgres: ThrowawayPostgres, pgdb: str
) -> None:
    """The store holds a TRUNCATE until its transaction's end is in it: a transaction with no
    other captured change ends in a progress marker, which the reader puts once it has read
    what the server sent, so the TRUNCATE does not wait for the next change."""
    postgres.execute("CREATE TABLE lone (id int PRIMARY KEY)", database=pgdb)
    reader, store, _ = opened(postgres, pgdb, "s_lone")
    try:
        announced = read_until(reader, store, lambda got: len(schema_events(got)) >= 1)
        postgres.execute("TRUNCATE lone", database=pgdb)
        got = read_until(reader, store, lambda got: len(schema_events(got)) >= 1)
    finally:
        reader.stop()
    assert reader.error is None
    assert json.loads(schema_events(announced)[0]["after"])["kind"] == "announce"
    assert schema_events(got)[0]["ddl"] == "TRUNCATE public.lone"
    truncate = next(i for i in got if i.is_ddl)
    assert truncate.open_transaction and got[-1] is truncate  # handed out alone, as a DDL


def test_the_slot_moves_only_to_what_was_acknowledged_and_follows_the_wal_when_idle(
    postgres: ThrowawayPostgres, pgdb: str
) -> None:
    postgres.execute(
        "CREATE TABLE watched (id int PRIMARY KEY)",
        "CREATE SCHEMA misc",
        "CREATE TABLE misc.other (id int)",
        database=pgdb,
    )
    reader, store, start = opened(postgres, pgdb, "s_ack", status_interval=0.2, heartbeat=0.3)
    try:
        postgres.execute("INSERT INTO watched VALUES (1)", database=pgdb)
        items = read_until(reader, store, lambda got: len(rows(got)) >= 1)
        committed = items[-1].after
        assert isinstance(committed, LsnOffset) and committed.lsn > start.lsn
        time.sleep(1.0)  # statuses went out: the slot holds at the start, nothing acknowledged
        assert confirmed_lsn(postgres, "s_ack") <= start.lsn
        reader.ack(committed)
        wait_for(lambda: confirmed_lsn(postgres, "s_ack") == committed.lsn)
        # traffic on a table not captured: the idle stream's markers follow the server's WAL
        postgres.execute("INSERT INTO misc.other SELECT generate_series(1, 1000)", database=pgdb)
        [(end,)] = postgres.query("SELECT pg_current_wal_insert_lsn()::text", database=pgdb)
        marks = read_until(
            reader,
            store,
            lambda got: any(i.after.lsn >= parse_lsn(end) for i in got),  # type: ignore[attr-defined]
        )
        assert rows(marks) == []
        reader.ack(marks[-1].after)
        wait_for(lambda: confirmed_lsn(postgres, "s_ack") >= parse_lsn(end))
    finally:
        reader.stop()


def test_a_split_transaction_resumes_after_the_rows_already_delivered(
    postgres: ThrowawayPostgres, pgdb: str
) -> None:
    postgres.execute("CREATE TABLE big (id int PRIMARY KEY)", database=pgdb)
    reader, store, start = opened(postgres, pgdb, "s_split", item_rows=2)
    try:
        postgres.execute("INSERT INTO big SELECT generate_series(1, 5)", database=pgdb)
        items = read_until(reader, store, lambda got: len(rows(got)) >= 5)
    finally:
        reader.stop()
    inner = [i.after for i in items if i.batch is not None and not i.is_ddl]
    assert [o.skip for o in inner] == [2, 4, 0]
    again, store2, _ = opened(postgres, pgdb, "s_split", item_rows=2, start=inner[0])
    try:
        rest = read_until(again, store2, lambda got: len(rows(got)) >= 3)
    finally:
        again.stop()
    assert [r["key"] for r in rows(rest)] == ["[3]", "[4]", "[5]"]
    assert [r["transaction"]["total_order"] for r in rows(rest)] == [3, 4, 5]


def test_a_toasted_value_left_out_of_the_log_is_marked_unless_identity_is_full(
    postgres: ThrowawayPostgres, pgdb: str
) -> None:
    """Without REPLICA IDENTITY FULL the after image names the column the log left out, for
    the sink to fill (tests/integration/test_pg_toast.py); with it the old row holds the value."""
    big = "(SELECT string_agg(md5(i::text), '') FROM generate_series(1, 2000) i)"
    postgres.execute(
        "CREATE TABLE doc (id int PRIMARY KEY, body text, n int)",
        f"INSERT INTO doc VALUES (1, {big}, 0)",
        database=pgdb,
    )
    reader, store, _ = opened(postgres, pgdb, "s_toast")
    try:
        postgres.execute("UPDATE doc SET n = 1", database=pgdb)
        items = read_until(reader, store, lambda got: len(rows(got)) >= 1)
    finally:
        reader.stop()
    assert reader.error is None
    assert images(rows(items)[0])[1] == {UNCHANGED_KEY: ["body"], "id": 1, "n": 1}
    postgres.execute("ALTER TABLE doc REPLICA IDENTITY FULL", database=pgdb)
    reader, store, _ = opened(postgres, pgdb, "s_toast2")
    try:
        postgres.execute("UPDATE doc SET n = 2", database=pgdb)
        items = read_until(reader, store, lambda got: len(rows(got)) >= 1)
    finally:
        reader.stop()
    [(body,)] = postgres.query("SELECT body FROM doc", database=pgdb)
    assert images(rows(items)[0])[1] == {"id": 1, "body": body, "n": 2}


def test_enum_and_domain_columns_are_no_schema_change(
    postgres: ThrowawayPostgres, pgdb: str
) -> None:
    """pgoutput's Type messages cannot name an enum or a domain over numeric; the catalog's
    description stands, rather than a change to an unmapped type."""
    postgres.execute(
        "CREATE TYPE mood AS ENUM ('sad', 'ok')",
        "CREATE DOMAIN money2 AS numeric(10,2)",
        "CREATE TABLE feel (id int PRIMARY KEY, m mood, p money2)",
        database=pgdb,
    )
    reader, store, _ = opened(postgres, pgdb, "s_enum")
    try:
        postgres.execute("INSERT INTO feel VALUES (1, 'ok', 2.50)", database=pgdb)
        items = read_until(reader, store, lambda got: len(rows(got)) >= 1)
    finally:
        reader.stop()
    assert [json.loads(r["after"])["kind"] for r in schema_events(items)] == ["announce"]
    assert images(rows(items)[0])[1] == {"id": 1, "m": "ok", "p": "2.50"}


def test_a_captured_table_renamed_or_a_new_matching_table_stops_the_stream(
    postgres: ThrowawayPostgres, pgdb: str
) -> None:
    postgres.execute("CREATE TABLE old_name (id int PRIMARY KEY)", database=pgdb)
    reader, store, _ = opened(postgres, pgdb, "s_rename")
    try:
        postgres.execute(
            "INSERT INTO old_name VALUES (1)", "ALTER TABLE old_name RENAME TO new_name",
            "INSERT INTO new_name VALUES (2)", database=pgdb,
        )  # fmt: skip
        with pytest.raises(SourceError, match="public.old_name .* renamed to public.new_name"):
            read_until(reader, store, lambda got: len(rows(got)) >= 2)
    finally:
        reader.stop()
    postgres.execute("CREATE TABLE first (id int PRIMARY KEY)", database=pgdb)
    reader, store, _ = opened(postgres, pgdb, "s_newtable")
    try:
        postgres.execute(
            "CREATE TABLE second (id int PRIMARY KEY)",
            "ALTER PUBLICATION s_newtable ADD TABLE second",
            "INSERT INTO second VALUES (1)", database=pgdb,
        )  # fmt: skip
        with pytest.raises(SourceError, match="public.second matches source.tables"):
            read_until(reader, store, lambda got: len(rows(got)) >= 1)
    finally:
        reader.stop()


def test_a_reader_opened_before_the_slot_position_stops_with_a_sentence(
    postgres: ThrowawayPostgres, pgdb: str
) -> None:
    """Another client moved the pipeline's slot past where the pipeline goes on: the changes in
    between are gone from the slot, so the reader refuses rather than skip them."""
    postgres.execute("CREATE TABLE moved (id int PRIMARY KEY)", database=pgdb)
    source = PostgresSource(source_of(postgres, pgdb, "s_moved"))
    start = source.startup_offset("latest")
    postgres.execute(
        "INSERT INTO moved VALUES (1)",
        "SELECT pg_replication_slot_advance('s_moved', pg_current_wal_lsn())",
        database=pgdb,
    )
    with pytest.raises(LogPositionGone, match="s_moved .* pipelines must not share a slot"):
        source.open_reader(start, EventStore(), "", 64)
