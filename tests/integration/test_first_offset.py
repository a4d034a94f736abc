"""A new stream's first offset is resolved once (:mod:`sparkcdc.spark.stream.first_offset`).

Spark asks for the initial offset while it plans the first micro-batch and again when it runs
it. With ``startup: latest`` on PostgreSQL and WAL written in between, a second resolution lay
past the first batch's end: the log reader opened there confirmed the slot past it, and the
next micro-batch stopped with "the slot holds the WAL from … only". Driven here as Spark drives
the reader, with the WAL moving between the calls.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql.streaming.datasource import ReadAllAvailable

from sparkcdc.config.model import SourceConfig
from sparkcdc.sources.postgres.settings import PostgresSettings
from sparkcdc.sources.postgres.throwaway import ThrowawayPostgres
from sparkcdc.spark.stream.options import SourceOptions, source_options
from sparkcdc.spark.stream.reader import ChangeStreamReader

pytestmark = pytest.mark.postgres


def options(server: ThrowawayPostgres, pgdb: str, tmp: Path, start_file: bool) -> SourceOptions:
    source = SourceConfig(
        server.host, server.port, server.user, server.password, (r"public\.t",),
        startup="latest", type="postgres",
        settings=PostgresSettings(database=pgdb, slot="first_offset", publication="first_offset"),
    )  # fmt: skip
    opts = source_options(
        source, str(tmp / "schema_history.jsonl"), max_bytes=8 << 20, max_items=4096,
        batch_mode="MEMSIZE", item_rows=2048,
        start_file=str(tmp / "first_offset.json") if start_file else None,
    )  # fmt: skip
    return SourceOptions.parse(opts, "postgres")


def write_wal(server: ThrowawayPostgres) -> None:
    """WAL of another database: the server's end moves, the captured table stays quiet."""
    server.execute(
        "CREATE TABLE IF NOT EXISTS elsewhere (id int)",
        "INSERT INTO elsewhere SELECT generate_series(1, 1000)",
    )


def test_latest_is_resolved_once_and_the_first_batches_follow_it(
    postgres: ThrowawayPostgres, pgdb: str, tmp_path: Path
) -> None:
    postgres.execute("CREATE TABLE t (id int PRIMARY KEY)", database=pgdb)
    reader = ChangeStreamReader(options(postgres, pgdb, tmp_path, start_file=True))
    try:
        first = reader.initialOffset()
        write_wal(postgres)
        assert reader.initialOffset() == first  # asked again while the batch runs
        end = reader.latestOffset(first, ReadAllAvailable())
        write_wal(postgres)
        postgres.execute("INSERT INTO t VALUES (1)", database=pgdb)
        reader.partitions(reader.initialOffset(), end)  # Spark: the batch's start, asked anew
        reader.commit(end)
        rows = 0
        for _ in range(40):  # the next batches read on from end: the row is there, no error
            later = reader.latestOffset(end, ReadAllAvailable())
            parts = reader.partitions(end, later) if later != end else []
            rows += sum(b.num_rows for p in parts for b in reader.read(p))
            reader.commit(later)
            end = later
            if rows:
                break
        assert rows == 1
    finally:
        reader.stop()
    # a restart before the first batch committed (a new process): the same offset, from the file
    again = ChangeStreamReader(options(postgres, pgdb, tmp_path, start_file=True))
    try:
        assert again.initialOffset() == first
    finally:
        again.stop()
