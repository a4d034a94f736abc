"""Transactions streamed while they run (pgoutput protocol version 2 on PostgreSQL 14+), on a
server whose ``logical_decoding_work_mem`` is 64 kB so that a few thousand rows are streamed:
a streamed transaction reaches the store only at its commit, in commit order among the others,
without the rows of a subtransaction rolled back, and an aborted one not at all; its messages
spill to disk past the reader's memory limit; a reader opened inside it delivers the rest."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator

import pytest

from sparkcdc.sources.postgres.offset import LsnOffset
from sparkcdc.sources.postgres.stream.streamed import StreamedTransactions
from sparkcdc.sources.postgres.throwaway import ThrowawayPostgres, throwaway_postgres
from tests.cases.pg_stream import opened, read_until, rows

pytestmark = pytest.mark.postgres


@pytest.fixture(scope="module")
def small_memory() -> Iterator[ThrowawayPostgres]:
    with throwaway_postgres(settings={"logical_decoding_work_mem": "64kB"}) as server:
        server.create_database("streaming")
        server.execute("CREATE TABLE big (id int PRIMARY KEY, v text)", database="streaming")
        yield server


def streamed_transactions(server: ThrowawayPostgres, slot: str) -> int:
    found = server.query(
        f"SELECT stream_txns FROM pg_stat_replication_slots WHERE slot_name = '{slot}'",
        database="streaming",
    )
    return int(found[0][0]) if found else 0


def test_streamed_transactions_arrive_whole_at_their_commit(
    small_memory: ThrowawayPostgres,
) -> None:
    server, db = small_memory, "streaming"
    reader, store, _ = opened(server, db, "s_streamed", item_rows=1000)
    reader._streamed = StreamedTransactions(memory_limit=100_000)  # spills past 100 kB
    long_running = server.connect(db)
    try:
        with long_running.cursor() as cur:
            long_running.autocommit = False
            cur.execute("INSERT INTO big SELECT i, md5(i::text) FROM generate_series(1, 5000) i")
            cur.execute("SAVEPOINT s")
            cur.execute("INSERT INTO big SELECT i, 'undone' FROM generate_series(10001, 12000) i")
            cur.execute("ROLLBACK TO SAVEPOINT s")
            cur.execute("INSERT INTO big SELECT i, 'after' FROM generate_series(20001, 21000) i")
            server.execute("INSERT INTO big VALUES (100000, 'small')", database=db)
            with contextlib.closing(server.connect(db)) as aborted, aborted.cursor() as other:
                aborted.autocommit = False
                other.execute("INSERT INTO big SELECT i, 'x' FROM generate_series(30001, 35000) i")
                aborted.rollback()
            time.sleep(0.5)  # the server has streamed them meanwhile
            assert [r["key"] for r in rows(read_until(reader, store, lambda g: bool(rows(g))))] == [
                "[100000]"
            ]
            long_running.commit()
        items = read_until(reader, store, lambda got: len(rows(got)) >= 6000)
    finally:
        long_running.close()
        reader.stop()
    keys = [int(r["key"][1:-1]) for r in rows(items)]
    assert keys == list(range(1, 5001)) + list(range(20001, 21001))
    assert streamed_transactions(server, "s_streamed") >= 2  # the committed and the aborted one
    inner = [i.after for i in items if i.batch is not None and not i.is_ddl]
    assert isinstance(inner[2], LsnOffset) and inner[2].skip == 3000
    again, store2, _ = opened(server, db, "s_streamed", item_rows=1000, start=inner[2])
    try:
        rest = read_until(again, store2, lambda got: len(rows(got)) >= 3000)
    finally:
        again.stop()
    assert [int(r["key"][1:-1]) for r in rows(rest)] == list(range(3001, 5001)) + list(
        range(20001, 21001)
    )
