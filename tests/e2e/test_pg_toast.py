"""``sparkcdc run`` on a PostgreSQL table whose big text column is TOASTed, under REPLICA
IDENTITY DEFAULT: updates of other columns leave its value out of the log, in the micro-batch of
the row's insert or in a later one; the replica and every ``after`` of the change log still
carry the real value. An update of a row the replica never held stops the run with the way out.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sparkcdc.sources.postgres.throwaway import ThrowawayPostgres
from tests.cases.pg_toast import DOC, big, changelog, replica, source_rows
from tests.e2e.cli import available_now, run, write_pg_config

pytestmark = pytest.mark.postgres


def config(postgres: ThrowawayPostgres, pgdb: str, tmp_path: Path) -> Path:
    return write_pg_config(tmp_path, postgres, pgdb, r"public\.doc", startup="earliest")


def assert_replica_and_log(postgres: ThrowawayPostgres, pgdb: str, lake: Path) -> None:
    """The replica equals the source row by row; every ``after`` holds its row's big value
    (which no update here changes)."""
    source = source_rows(postgres, pgdb)
    assert replica(lake) == source
    bodies = {r["id"]: r["body"] for r in source}
    log = changelog(lake)
    assert log and all(len(r["after"]["body"]) == 9600 for r in log)
    assert all(r["after"]["body"] == bodies[r["after"]["id"]] for r in log)


def test_updates_leaving_a_toasted_value_out_keep_it_in_the_replica_and_the_change_log(
    postgres: ThrowawayPostgres, pgdb: str, tmp_path: Path
) -> None:
    postgres.execute(*DOC, database=pgdb)
    cfg = config(postgres, pgdb, tmp_path)
    available_now(cfg)  # makes the slot and the publication
    postgres.execute(
        f"INSERT INTO doc VALUES (1, {big('a')}, 0), (2, {big('b')}, 0)",
        "BEGIN",
        f"INSERT INTO doc VALUES (3, {big('c')}, 0)",
        "UPDATE doc SET n = 1 WHERE id = 3",  # in the insert's transaction
        "COMMIT",
        "UPDATE doc SET n = 1 WHERE id = 1",  # in the insert's micro-batch
        database=pgdb,
    )
    available_now(cfg)
    assert_replica_and_log(postgres, pgdb, tmp_path / "lake")
    postgres.execute(
        "UPDATE doc SET n = n + 1",  # a later micro-batch: from the replica
        "UPDATE doc SET n = 10 WHERE id = 2",  # from the change before it
        database=pgdb,
    )
    available_now(cfg)
    assert_replica_and_log(postgres, pgdb, tmp_path / "lake")
    assert [r["n"] for r in replica(tmp_path / "lake")] == [2, 10, 2]
    assert len(changelog(tmp_path / "lake")) == 3 + 2 + 3 + 1


def test_an_update_of_a_row_the_replica_never_held_stops_the_run_with_the_way_out(
    postgres: ThrowawayPostgres, pgdb: str, tmp_path: Path
) -> None:
    postgres.execute(*DOC, f"INSERT INTO doc VALUES (1, {big('a')}, 0)", database=pgdb)
    cfg = config(postgres, pgdb, tmp_path)
    available_now(cfg)  # the slot starts after the insert: the replica never gets the row
    postgres.execute("UPDATE doc SET n = 1", database=pgdb)
    code, out = run(cfg, "--available-now")
    assert code != 0
    flat = " ".join(out.split())
    assert "an update of public.doc (key [1]) left the TOASTed value of column body" in flat
    assert "ALTER TABLE public.doc REPLICA IDENTITY FULL" in flat
    assert replica(tmp_path / "lake") == []
