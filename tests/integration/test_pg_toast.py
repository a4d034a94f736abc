"""TOASTed values an update left out of the log (REPLICA IDENTITY DEFAULT), against a real
PostgreSQL: the reader marks them in a JSON after image while the run's other changes stay
typed, and the Delta sink fills them from the key's change before in the micro-batch or from the
replica (as it was before a replayed batch), or stops the batch when neither holds the row."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pytest

from sparkcdc.core.errors import SinkError
from sparkcdc.core.images import images_of
from sparkcdc.sinks.changes import unchanged
from sparkcdc.sinks.delta.sink import DeltaSink
from sparkcdc.sources.postgres.stream.reader import PgLogReader
from sparkcdc.sources.postgres.throwaway import ThrowawayPostgres
from sparkcdc.store.ring import EventStore
from tests.cases.pg_stream import Items, images, opened, read_until, rows
from tests.cases.pg_toast import (
    DOC,
    big,
    changelog,
    replica,
    source_rows,
)

pytestmark = pytest.mark.postgres


def collect(reader: PgLogReader, store: EventStore, changes: int) -> Items:
    return read_until(reader, store, lambda got: len(rows(got)) >= changes)


def write(sink: DeltaSink, items: Items, batch_id: int) -> None:
    """``items`` as one micro-batch, as Spark hands the sink the store's batch."""
    envelope = pa.Table.from_batches([i.batch for i in items if i.batch is not None])
    sink.write(envelope, batch_id, images=[t for i in items for t in i.images])


@pytest.mark.parametrize("typed", [True, False])
def test_an_update_leaving_a_toasted_value_out_is_marked_and_the_rest_stays_typed(
    postgres: ThrowawayPostgres, pgdb: str, typed: bool
) -> None:
    postgres.execute(
        *DOC, f"INSERT INTO doc VALUES (1, {big('a')}, 0), (2, 'short', 0)", database=pgdb
    )
    reader, store, _ = opened(postgres, pgdb, f"s_mark_{int(typed)}", typed=typed)
    try:
        postgres.execute("UPDATE doc SET n = n + 1", database=pgdb)  # one run of two updates
        items = collect(reader, store, 2)
    finally:
        reader.stop()
    got = {r["key"]: r for r in rows(items)}
    assert images(got["[1]"]) == (None, {unchanged.UNCHANGED_KEY: ["body"], "id": 1, "n": 1})
    plain = {"id": 2, "body": "short", "n": 1}
    positions = [r["source"]["position"] for r in rows(items)]
    assert len(set(positions)) == 2 and positions == sorted(positions)
    if not typed:
        assert images(got["[2]"]) == (None, plain)
        return
    assert got["[2]"]["after"] is None  # typed: its images travel beside the envelope
    changes = [i for i in items if i.batch is not None and not i.is_ddl]
    where = pa.array([got["[2]"]["source"]["position"]])
    fields = [pa.field("id", pa.int32()), pa.field("body", pa.string()), pa.field("n", pa.int32())]
    _, _, after = images_of(where, [t for i in changes for t in i.images], fields)
    assert after.to_pylist() == [plain]


@pytest.mark.parametrize("typed", [True, False])
def test_the_sink_fills_from_the_change_before_in_the_batch_and_from_the_replica(
    postgres: ThrowawayPostgres, pgdb: str, tmp_path: Path, typed: bool
) -> None:
    postgres.execute(*DOC, database=pgdb)
    reader, store, _ = opened(postgres, pgdb, f"s_fill_{int(typed)}", typed=typed)
    sink = DeltaSink(str(tmp_path), "p")
    try:
        postgres.execute(
            f"INSERT INTO doc VALUES (1, {big('a')}, 0), (2, {big('b')}, 0)",
            "UPDATE doc SET n = 1 WHERE id = 1",  # its insert is in the same batch
            database=pgdb,
        )
        write(sink, collect(reader, store, 3), 0)
        postgres.execute(
            "UPDATE doc SET n = 2",  # both from the replica
            "UPDATE doc SET n = 3 WHERE id = 2",  # from the change before, filled itself
            "UPDATE doc SET id = 3 WHERE id = 2",  # a key update: found by its old key
            "UPDATE doc SET n = 4 WHERE id = 3",
            database=pgdb,
        )
        write(sink, collect(reader, store, 5), 1)
    finally:
        reader.stop()
    source = source_rows(postgres, pgdb)
    assert [r["id"] for r in source] == [1, 3]
    assert replica(tmp_path) == source
    bodies = {1: source[0]["body"], 2: source[1]["body"], 3: source[1]["body"]}
    log = changelog(tmp_path)
    assert [r["op"] for r in log] == ["c", "c", "u", "u", "u", "u", "u", "u"]
    assert all(r["after"]["body"] == bodies[r["after"]["id"]] for r in log)
    assert [r["after"]["n"] for r in log] == [0, 0, 1, 2, 2, 3, 3, 4]


def test_a_replayed_batch_the_replica_holds_already_fills_from_the_replica_before_it(
    postgres: ThrowawayPostgres, pgdb: str, tmp_path: Path
) -> None:
    """A crash after the replica's commit of a batch and before the change log's: the replay
    reads the replica's version before that batch, not a value the batch wrote later."""
    postgres.execute(*DOC, database=pgdb)
    reader, store, _ = opened(postgres, pgdb, "s_replay", typed=True)
    try:
        postgres.execute(f"INSERT INTO doc VALUES (1, {big('a')}, 0)", database=pgdb)
        write(DeltaSink(str(tmp_path), "p"), collect(reader, store, 1), 0)
        [(old,)] = postgres.query("SELECT body FROM doc", database=pgdb)
        postgres.execute("UPDATE doc SET n = 1", f"UPDATE doc SET body = {big('c')}", database=pgdb)
        second = collect(reader, store, 2)
    finally:
        reader.stop()
    log_path = tmp_path / "public" / "doc__changelog"
    shutil.copytree(log_path, tmp_path / "saved")
    write(DeltaSink(str(tmp_path), "p"), second, 1)
    shutil.rmtree(log_path)
    shutil.move(tmp_path / "saved", log_path)  # the change log's commit of batch 1 never was
    write(DeltaSink(str(tmp_path), "p"), second, 1)
    assert replica(tmp_path) == source_rows(postgres, pgdb)
    log = changelog(tmp_path)
    assert [(r["after"]["n"], r["after"]["body"] == old) for r in log] == [
        (0, True), (1, True), (1, False),
    ]  # fmt: skip


def test_an_update_of_a_row_the_replica_lacks_stops_the_batch(
    postgres: ThrowawayPostgres, pgdb: str, tmp_path: Path
) -> None:
    postgres.execute(*DOC, f"INSERT INTO doc VALUES (1, {big('a')}, 0)", database=pgdb)
    reader, store, _ = opened(postgres, pgdb, "s_lacks", typed=True)  # after the insert
    try:
        postgres.execute("UPDATE doc SET n = 1", database=pgdb)
        items = collect(reader, store, 1)
    finally:
        reader.stop()
    with pytest.raises(SinkError) as stopped:
        write(DeltaSink(str(tmp_path), "p"), items, 0)
    sentence = str(stopped.value)
    assert "an update of public.doc (key [1]) left the TOASTed value of column body" in sentence
    assert "ALTER TABLE public.doc REPLICA IDENTITY FULL" in sentence
    assert "snapshot of the table" in sentence
    assert replica(tmp_path) == [] and changelog(tmp_path) == []
    assert json.loads(rows(items)[0]["after"])[unchanged.UNCHANGED_KEY] == ["body"]


def test_a_toasted_key_left_out_of_the_new_row_comes_from_the_old_key(
    postgres: ThrowawayPostgres, pgdb: str
) -> None:
    """PostgreSQL logs the old key when it is TOASTed; the new row's value comes from there."""
    postgres.execute(
        "CREATE TABLE tag (k text PRIMARY KEY, n int)",
        "ALTER TABLE tag ALTER COLUMN k SET STORAGE EXTERNAL",
        # 2,496 characters: TOASTed out of line, and still short enough for the key's index
        "INSERT INTO tag SELECT string_agg(md5(i::text), ''), 0 FROM generate_series(1, 78) i",
        database=pgdb,
    )
    reader, store, _ = opened(postgres, pgdb, "s_key")
    try:
        postgres.execute("UPDATE tag SET n = 1", database=pgdb)
        items = collect(reader, store, 1)
    finally:
        reader.stop()
    [(k,)] = postgres.query("SELECT k FROM tag", database=pgdb)
    [change] = rows(items)
    assert images(change)[1] == {"k": k, "n": 1} and json.loads(change["key"]) == [k]
