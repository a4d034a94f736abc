"""The snapshot's pin lost while its chunks are read (faults ``pg-walsender-kill`` and
``db-restart`` in the snapshot phase): the exported snapshot dies with the replication connection
that exported it, and no chunk can be read in it any more. A task reading then, or started
after, ends with one sentence naming the snapshot, why it is gone and the way out (a restart
pins a new one); no chunk is read in anything else."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from sparkcdc.core.errors import SourceError
from sparkcdc.core.schema import TableSchema
from sparkcdc.snapshot.dialect import SnapshotDialect
from sparkcdc.sources.postgres.chunks.pin_token import PinToken
from sparkcdc.sources.postgres.source import PostgresSource
from sparkcdc.sources.postgres.throwaway import ThrowawayPostgres
from tests.cases.pg_stream import source_of

pytestmark = pytest.mark.postgres

HOLDER = "SELECT active_pid FROM pg_replication_slots WHERE database = '{db}' AND temporary"


def kill_holder(pg: ThrowawayPostgres, db: str) -> None:
    """Terminate the walsender holding the pin's temporary slot, and wait until it is gone."""
    [(pid,)] = pg.query(HOLDER.format(db=db))
    assert pg.query(f"SELECT pg_terminate_backend({pid})") == [(True,)]
    deadline = time.monotonic() + 10
    while pg.query(f"SELECT 1 FROM pg_stat_activity WHERE pid = {pid}"):
        assert time.monotonic() < deadline, "the walsender did not end"
        time.sleep(0.05)


def read_from(dialect: SnapshotDialect, schema: TableSchema, low: int | None) -> int:
    keys = dialect.key_columns(schema.db, schema.table, ["id"])
    return int(dialect.read_chunk(schema, keys, None if low is None else (low,), None).num_rows)


def test_walsender_killed_mid_snapshot_names_the_lost_snapshot_and_the_restart(
    postgres: ThrowawayPostgres, pgdb: str, tmp_path: Path
) -> None:
    postgres.execute(
        "CREATE TABLE t (id int PRIMARY KEY, v text)",
        "INSERT INTO t SELECT g, 'v' || g FROM generate_series(1, 100) g",
        database=pgdb,
    )
    source = PostgresSource(source_of(postgres, pgdb, "pin_lost"))
    holder = source.pin_snapshot(str(tmp_path / "history.jsonl"))
    snapshot = PinToken.parse(holder.pin.token).snapshot
    schema = holder.schema("public.t")
    assert isinstance(schema, TableSchema)
    errors: list[SourceError] = []
    try:
        with source.chunks(holder.pin) as reading:  # a task reading when the pin goes
            assert read_from(reading, schema, None) == 100
            kill_holder(postgres, pgdb)
            with pytest.raises(SourceError) as lost:
                read_from(reading, schema, 50)
            errors.append(lost.value)
        with source.chunks(holder.pin) as later, pytest.raises(SourceError) as lost:
            read_from(later, schema, None)  # a task started after
        errors.append(lost.value)
    finally:
        holder.close()
        postgres.execute("SELECT pg_drop_replication_slot('pin_lost')", database=pgdb)
    for err in errors:
        text = str(err)
        assert "\n" not in text and "fix the cause" not in text, text
        assert f"exported snapshot {snapshot} " in text, text
        assert f"PostgreSQL at {postgres.host}:{postgres.port}" in text, text
        assert "the connection that exported it ended" in text, text
        assert "restart the pipeline" in text, text
        assert err.fields["snapshot"] == snapshot
