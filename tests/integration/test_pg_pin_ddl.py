"""DDL made while a PostgreSQL snapshot is pinned (against a real server): chunks read through
the pin afterwards read the tables as the pin saw them (a renamed column under its old name, a
column retyped without a rewrite in its old type, a dropped one as null, a table an ALTER
rewrote read in a later pin of its own, since the old snapshot sees it empty), and the log
reader started at the pin's point with the schema history the pin wrote judges each DDL as it
would any later one. A pin taken again after a restart keeps the first pin's schemas, and a
table whose columns changed between the two pins is read again once the log reaches it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sparkcdc.core.schema import TableSchema
from sparkcdc.snapshot.dialect import SnapshotDialect
from sparkcdc.sources.port import PinHolder, SnapshotPin
from sparkcdc.sources.postgres.chunks.pin_token import PinToken
from sparkcdc.sources.postgres.offset import LsnOffset
from sparkcdc.sources.postgres.source import PostgresSource
from sparkcdc.sources.postgres.stream.history import RelationHistory
from sparkcdc.sources.postgres.throwaway import ThrowawayPostgres
from tests.cases.pg_stream import opened, read_until, schema_events, source_of

pytestmark = pytest.mark.postgres

ROWS = 10


def make(pg: ThrowawayPostgres, db: str, table: str, columns: str, values: str) -> None:
    pg.execute(
        f"CREATE TABLE {table} (id int PRIMARY KEY, {columns})",
        f"INSERT INTO {table} SELECT g, {values} FROM generate_series(1, {ROWS}) g",
        database=db,
    )


def chunk(dialect: SnapshotDialect, holder: PinHolder, name: str) -> tuple[list[Any], LsnOffset]:
    """Every row of table ``name`` read through a dialect of ``holder``'s pin with the pin's
    schema (after images, by id), and where the read saw the table."""
    schema = holder.schema(name)
    assert isinstance(schema, TableSchema)
    keys = dialect.key_columns(schema.db, schema.table, ["id"])
    rows = dialect.read_chunk(schema, keys, None, None)
    point = dialect.read_point()
    assert point is not None
    after = sorted((json.loads(a) for a in rows.column("after").to_pylist()), key=lambda r: r["id"])
    return after, LsnOffset.of(point)


def alters(pg: ThrowawayPostgres, db: str, slot: str, start: LsnOffset, history: Path,
           tables: set[str]) -> dict[str, dict[str, Any]]:  # fmt: skip
    """The ``existing`` of the first ``alter`` row of each of ``tables`` in the log from
    ``start``, read by a reader starting from ``history``."""
    reader, store, _ = opened(pg, db, slot, start=start, history=str(history))

    def found(items: Any) -> dict[str, dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {}
        for event in schema_events(items):
            change = json.loads(event["after"])
            if change["kind"] == "alter":
                out.setdefault(event["table"], change.get("existing", {}))
        return out

    try:
        return found(read_until(reader, store, lambda items: set(found(items)) >= tables))
    finally:
        reader.stop()


def test_chunks_read_after_ddl_show_the_pinned_tables_and_the_log_judges_it(
    postgres: ThrowawayPostgres, pgdb: str, tmp_path: Path
) -> None:
    make(postgres, pgdb, "t", "a text, s varchar(10), k int", "'a' || g, 's' || g, g")
    make(postgres, pgdb, "dr", "d int, k int", "g * 10, g")
    make(postgres, pgdb, "w", "v numeric(10,3)", "g / 7.0")
    source = PostgresSource(source_of(postgres, pgdb, "pin_ddl"))
    history = tmp_path / "history.jsonl"
    holder = source.pin_snapshot(str(history))
    at = LsnOffset.of(holder.pin.point)
    try:
        postgres.execute(
            "ALTER TABLE t RENAME COLUMN a TO b",
            "ALTER TABLE t ALTER COLUMN s TYPE text",  # no rewrite: the stored values stay
            "ALTER TABLE t ADD COLUMN x int DEFAULT 5",
            "UPDATE t SET k = -k WHERE id = 3",  # after the pin: not in its rows
            "ALTER TABLE dr DROP COLUMN d",
            "ALTER TABLE w ALTER COLUMN v TYPE numeric(10,1)",  # rewrites the table
            "UPDATE dr SET k = -k WHERE id = 3",
            "UPDATE w SET v = 0 WHERE id = 3",
            database=pgdb,
        )
        with source.chunks(holder.pin) as dialect:  # one task's reads
            rows, point = chunk(dialect, holder, "public.w")  # a pin of its own, past the rewrite
            assert [r["id"] for r in rows] == list(range(1, 11)) and point > at
            assert {r["v"] for r in rows} == {None}  # converted: read when the table is again
            rows, point = chunk(dialect, holder, "public.t")
            assert rows == [{"id": i, "a": f"a{i}", "s": f"s{i}", "k": i} for i in range(1, 11)]
            assert point == at
            rows, point = chunk(dialect, holder, "public.dr")
            assert rows == [{"id": i, "d": None, "k": i} for i in range(1, 11)] and point == at
            postgres.execute("ALTER TABLE t RENAME COLUMN b TO c", database=pgdb)
            again, point = chunk(dialect, holder, "public.t")  # names read before: read again
            assert again == [{"id": i, "a": f"a{i}", "s": f"s{i}", "k": i} for i in range(1, 11)]
            assert point == at
        token = PinToken.parse(holder.pin.token)  # one naming w's columns, not t's: by name
        only_w = PinToken(token.snapshot, {"public.w": token.columns["public.w"]})
        with source.chunks(SnapshotPin(only_w.text(), holder.pin.point)) as dialect:
            assert chunk(dialect, holder, "public.w")[1] > at
            renamed = "ALTER TABLE t RENAME COLUMN c TO a"  # the pinned name again
            postgres.execute(renamed, database=pgdb)
            rows, point = chunk(dialect, holder, "public.t")
            assert point == at and len(rows) == ROWS
    finally:
        holder.close()
    judged = alters(postgres, pgdb, "pin_ddl", at, history, {"t", "dr", "w"})
    assert judged["t"] == {"copy": {"b": "a"}, "fill": {"x": 5}}  # at t's first change
    assert judged["dr"] == {}
    assert "reads the table again" in judged["w"]["resnapshot"]


def test_a_pin_taken_again_keeps_the_first_pins_schemas(
    postgres: ThrowawayPostgres, pgdb: str, tmp_path: Path
) -> None:
    make(postgres, pgdb, "t", "a text, k int", "'a' || g, g")
    make(postgres, pgdb, "quiet", "k int", "g")
    source = PostgresSource(source_of(postgres, pgdb, "pin_again"))
    history = tmp_path / "history.jsonl"
    first = source.pin_snapshot(str(history))
    schema, at = first.schema("public.t"), LsnOffset.of(first.pin.point)
    first.close()  # the driver died
    postgres.execute(
        "ALTER TABLE t RENAME COLUMN a TO b",
        "ALTER TABLE t ADD COLUMN x int DEFAULT 5",
        "UPDATE t SET x = 7 WHERE id = 2",  # a fill judged from the log would overwrite it
        database=pgdb,
    )
    again = source.pin_snapshot(str(history))
    try:
        assert again.schema("public.t") == schema and LsnOffset.of(again.pin.point) > at
        with source.chunks(again.pin) as dialect:
            rows, point = chunk(dialect, again, "public.t")
        assert rows == [{"id": i, "a": f"a{i}", "k": i} for i in range(1, 11)]
        assert point == LsnOffset.of(again.pin.point)
    finally:
        again.close()
    states = RelationHistory(history).states_at(at)
    baseline = states[("public", "t")].baseline
    assert baseline is not None and baseline.attnums is None  # which column is which: unsure
    quiet = states[("public", "quiet")].baseline
    assert quiet is not None and quiet.attnums is not None  # no DDL: judged as usual
    judged = alters(postgres, pgdb, "pin_again", at, history, {"t"})
    assert "reads the table again" in judged["t"]["resnapshot"]
