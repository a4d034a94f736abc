"""The chunk scan against a real MariaDB, with writes forced into the watermark window by hooks:
the corrected chunk equals the source's rows of the split's range at the high watermark (and,
for the batch read, at the fixed point it rewinds to); the splitter's chunks on real tables."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator

import pyarrow as pa
import pytest

from sparkcdc.config.model import SourceConfig
from sparkcdc.core.chunk import KeyColumn, Split
from sparkcdc.snapshot.scan import scan_run, scan_split_at
from sparkcdc.snapshot.splitter import ChunkSplitter, SplitterSettings
from sparkcdc.sources.mysql.binlog.backfill import changes_between
from sparkcdc.sources.mysql.chunks.dialect import MySQLChunks
from sparkcdc.sources.mysql.server.catalog import MySQLCatalog
from sparkcdc.sources.mysql.throwaway import ThrowawayMariaDB

pytestmark = pytest.mark.mariadb


def source(server: ThrowawayMariaDB, db: str) -> SourceConfig:
    return SourceConfig("127.0.0.1", server.port, "root", "", (rf"{db}\..*",), "earliest", 6301)


@pytest.fixture
def chunks(mariadb: ThrowawayMariaDB, db: str) -> Iterator[MySQLChunks]:
    with MySQLChunks(source(mariadb, db)) as found:
        yield found


def rows_in(server: ThrowawayMariaDB, db: str, where: str) -> dict[int, tuple[object, ...]]:
    return {r[0]: tuple(r) for r in server.query(f"SELECT id, v FROM t WHERE {where}", db)}


def as_rows(table: pa.Table) -> dict[int, tuple[object, ...]]:
    """``id -> (id, v)`` of a chunk of row images or of typed columns; its key texts agree."""
    if "after" in table.column_names:
        rows = [json.loads(text) for text in table.column("after").to_pylist()]
    else:
        rows = table.select(["id", "v"]).to_pylist()
    assert table.column("key").to_pylist() == [f"[{r['id']}]" for r in rows]
    return {r["id"]: (r["id"], r["v"]) for r in rows}


def scan(
    server: ThrowawayMariaDB,
    db: str,
    chunks: MySQLChunks,
    split: Split,
    hook: Callable,
    typed: bool = False,
    low: object = None,
) -> object:
    with MySQLCatalog("127.0.0.1", server.port, "root", "") as cat:
        schema = cat.load_schema(db, "t")
    keys = chunks.key_columns(db, "t", ["id"])
    src = source(server, db)
    return scan_run(
        [split],
        schema,
        keys,
        chunks,
        lambda d, t, lo, hi: changes_between(src, d, t, lo, hi, 6302),
        hook,
        typed=typed,
        low=low,  # type: ignore[arg-type]
    )[0]


WRITES = (
    "UPDATE t SET v = 'changed' WHERE id = 20",  # inside
    "DELETE FROM t WHERE id = 30",  # inside
    "INSERT INTO t VALUES (25, 'new inside')",
    "INSERT INTO t VALUES (5, 'below the split')",
    "INSERT INTO t VALUES (500, 'beyond the split')",
    "UPDATE t SET id = 900 WHERE id = 40",  # moves out of the split
    "UPDATE t SET id = 45 WHERE id = 300",  # moves into the split
    "UPDATE t SET v = 'outside' WHERE id = 200",
)


@pytest.mark.parametrize("typed", [False, True], ids=["images", "typed"])
@pytest.mark.parametrize("stage", ["low", "chunk"])
def test_writes_inside_the_window_are_applied_to_the_chunk(
    mariadb: ThrowawayMariaDB, db: str, chunks: MySQLChunks, stage: str, typed: bool
) -> None:
    mariadb.execute(
        "CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(20))",
        "INSERT INTO t SELECT seq * 10, CONCAT('v', seq) FROM seq_1_to_30",
        database=db,
    )
    split = Split(f"{db}.t", 1, (10,), (100,))

    def hook(at: str, _split: Split) -> None:
        if at == stage:
            mariadb.execute(*WRITES, database=db)

    result = scan(mariadb, db, chunks, split, hook, typed)
    assert result.high > result.low  # type: ignore[attr-defined]
    assert result.window_changes == len(WRITES)  # type: ignore[attr-defined]
    got = as_rows(result.rows)  # type: ignore[attr-defined]
    assert got == rows_in(mariadb, db, "id >= 10 AND id < 100")
    assert 25 in got and 45 in got and 30 not in got and 40 not in got and 5 not in got


@pytest.mark.parametrize("typed", [False, True], ids=["images", "typed"])
def test_a_split_read_after_another_starts_its_window_at_that_ones_high_watermark(
    mariadb: ThrowawayMariaDB, db: str, chunks: MySQLChunks, typed: bool
) -> None:
    """As a split task reads its splits: the next split takes no low watermark of its own.
    Writes between the first split's high watermark and the second's SELECT are in the
    second's window, so they are replayed onto it whether or not its SELECT saw them."""
    mariadb.execute(
        "CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(20))",
        "INSERT INTO t SELECT seq * 10, CONCAT('v', seq) FROM seq_1_to_60",
        database=db,
    )
    first, second = Split(f"{db}.t", 0, None, (100,)), Split(f"{db}.t", 1, (100,), (400,))
    between = (
        "UPDATE t SET v = 'between' WHERE id = 150",
        "DELETE FROM t WHERE id = 160",
        "INSERT INTO t VALUES (155, 'new between')",
        "UPDATE t SET v = 'first split' WHERE id = 50",
    )
    inside = ("UPDATE t SET v = 'inside' WHERE id = 250", "INSERT INTO t VALUES (255, 'in')")

    def hook(stage: str, split: Split) -> None:
        if split == first and stage == "high":
            mariadb.execute(*between, database=db)
        if split == second and stage == "chunk":
            mariadb.execute(*inside, database=db)

    one = scan(mariadb, db, chunks, first, hook, typed)
    two = scan(mariadb, db, chunks, second, hook, typed, low=one.high)  # type: ignore[attr-defined]
    assert two.low == one.high  # type: ignore[attr-defined]
    assert two.window_changes == len(between) + len(inside)  # type: ignore[attr-defined]
    assert as_rows(two.rows) == rows_in(mariadb, db, "id >= 100 AND id < 400")  # type: ignore[attr-defined]
    assert as_rows(one.rows)[50] == (50, "v5")  # the first split is as of its own high mark


def test_a_run_of_splits_is_read_in_one_window_and_each_split_made_exact(
    mariadb: ThrowawayMariaDB, db: str, chunks: MySQLChunks
) -> None:
    """Four consecutive splits in one SELECT: writes forced into the window (inside splits,
    below, beyond, and a key moved from one split to another) are replayed onto the split
    that holds each key, so every split equals the source's rows of its range at the run's
    high watermark."""
    mariadb.execute(
        "CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(20))",
        "INSERT INTO t SELECT seq * 10, CONCAT('v', seq) FROM seq_1_to_30",
        database=db,
    )
    ranges = [(None, (100,)), ((100,), (250,)), ((250,), (400,)), ((400,), None)]
    run = [Split(f"{db}.t", i, lo, hi) for i, (lo, hi) in enumerate(ranges)]
    writes = (
        *WRITES,
        "UPDATE t SET id = 265 WHERE id = 110",  # from the second split to the third
        "INSERT INTO t VALUES (-5, 'first, open below')",
        "INSERT INTO t VALUES (9000, 'last, open beyond')",
    )
    stages = []

    def hook(stage: str, split: Split) -> None:
        stages.append((stage, split.index))
        if (stage, split.index) == ("chunk", 1):
            mariadb.execute(*writes, database=db)

    with MySQLCatalog("127.0.0.1", mariadb.port, "root", "") as cat:
        schema = cat.load_schema(db, "t")
    keys = chunks.key_columns(db, "t", ["id"])
    src = source(mariadb, db)
    results = scan_run(
        run, schema, keys, chunks, lambda d, t, lo, hi: changes_between(src, d, t, lo, hi, 6302),
        hook, typed=True,
    )  # fmt: skip
    assert stages == [(s, i) for s in ("low", "chunk", "high") for i in range(4)]
    assert [r.split for r in results] == run
    assert len({(r.low, r.high) for r in results}) == 1 and results[0].high > results[0].low
    assert all(r.window_changes == len(writes) for r in results)
    wheres = ["id < 100", "id >= 100 AND id < 250", "id >= 250 AND id < 400", "id >= 400"]
    for result, where in zip(results, wheres, strict=True):
        assert as_rows(result.rows) == rows_in(mariadb, db, where), where
    assert 265 in as_rows(results[2].rows) and 110 not in as_rows(results[1].rows)


def test_a_quiet_window_is_not_read(
    mariadb: ThrowawayMariaDB, db: str, chunks: MySQLChunks
) -> None:
    mariadb.execute(
        "CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(20))",
        "INSERT INTO t VALUES (1, 'a'), (2, 'b')",
        database=db,
    )
    result = scan(mariadb, db, chunks, Split(f"{db}.t", 0, None, None), lambda *_: None)
    assert result.high == result.low and result.window_changes == 0  # type: ignore[attr-defined]
    assert as_rows(result.rows) == rows_in(mariadb, db, "TRUE")  # type: ignore[attr-defined]


@pytest.mark.parametrize("typed", [False, True], ids=["images", "typed"])
def test_the_batch_scan_rewinds_to_its_fixed_point(
    mariadb: ThrowawayMariaDB, db: str, chunks: MySQLChunks, typed: bool
) -> None:
    mariadb.execute(
        "CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(20))",
        "INSERT INTO t SELECT seq * 10, CONCAT('v', seq) FROM seq_1_to_30",
        database=db,
    )
    at = chunks.watermark()
    expected = rows_in(mariadb, db, "id < 100")
    mariadb.execute(*WRITES[:4], database=db)  # after the fixed point, before the SELECT
    with MySQLCatalog("127.0.0.1", mariadb.port, "root", "") as cat:
        schema = cat.load_schema(db, "t")
    keys = chunks.key_columns(db, "t", ["id"])
    src = source(mariadb, db)

    def hook(stage: str, _split: Split) -> None:
        if stage == "chunk":  # after the SELECT, before the high mark
            mariadb.execute(*WRITES[4:], database=db)

    result = scan_split_at(
        Split(f"{db}.t", 0, None, (100,)),
        schema,
        keys,
        chunks,
        lambda d, t, lo, hi: changes_between(src, d, t, lo, hi, 6303),
        at,
        hook,
        typed=typed,
    )
    assert as_rows(result.rows) == expected


def splits_of(chunks: MySQLChunks, db: str, keys: list[KeyColumn], size: int) -> list[Split]:
    splitter = ChunkSplitter(chunks, f"{db}.t", keys, SplitterSettings(size, 0.05, 1000.0))
    out = []
    while not splitter.done:
        out.append(splitter.next())
    return out


def count(server: ThrowawayMariaDB, db: str, split: Split, where: Callable[[Split], str]) -> int:
    return int(server.query(f"SELECT COUNT(*) FROM t WHERE {where(split)}", db)[0][0])


def int_range(split: Split) -> str:
    lo = "TRUE" if split.lo is None else f"id >= {split.lo[0]}"
    hi = "TRUE" if split.hi is None else f"id < {split.hi[0]}"
    return f"{lo} AND {hi}"


def test_even_chunks_cover_a_dense_key_and_skew_never_makes_a_giant_chunk(
    mariadb: ThrowawayMariaDB, db: str, chunks: MySQLChunks
) -> None:
    mariadb.execute(
        "CREATE TABLE t (id BIGINT PRIMARY KEY, v VARCHAR(20))",
        "INSERT INTO t SELECT seq, 'x' FROM seq_1_to_5000",
        # skew: 5000 more keys packed into a narrow band far away
        "INSERT INTO t SELECT 1000000 + seq, 'y' FROM seq_1_to_5000",
        database=db,
    )
    keys = chunks.key_columns(db, "t", ["id"])
    splits = splits_of(chunks, db, keys, 500)
    sizes = [count(mariadb, db, s, int_range) for s in splits]
    assert sum(sizes) == 10000
    assert max(sizes) <= 1000  # never more than twice the chunk size
    assert splits[0].lo is None and splits[-1].hi is None
    assert all(a.hi == b.lo for a, b in zip(splits, splits[1:], strict=False))


def test_uneven_chunks_of_a_case_insensitive_string_key(
    mariadb: ThrowawayMariaDB, db: str, chunks: MySQLChunks
) -> None:
    mariadb.execute(
        "CREATE TABLE t (id VARCHAR(20) COLLATE utf8mb4_general_ci PRIMARY KEY, v INT)",
        "INSERT INTO t SELECT CONCAT(IF(seq % 2, 'a', 'B'), LPAD(seq, 5, '0')), seq "
        "FROM seq_1_to_3000",
        database=db,
    )
    keys = chunks.key_columns(db, "t", ["id"])
    splits = splits_of(chunks, db, keys, 400)
    assert len(splits) == 8

    def where(split: Split) -> str:
        lo = "TRUE" if split.lo is None else f"id >= '{split.lo[0]}'"
        hi = "TRUE" if split.hi is None else f"id < '{split.hi[0]}'"
        return f"{lo} AND {hi}"

    sizes = [count(mariadb, db, s, where) for s in splits]
    assert sizes == [400] * 7 + [200]


def test_an_empty_table_is_one_open_split(
    mariadb: ThrowawayMariaDB, db: str, chunks: MySQLChunks
) -> None:
    mariadb.execute("CREATE TABLE t (a INT, b VARCHAR(5), PRIMARY KEY (a, b))", database=db)
    keys = chunks.key_columns(db, "t", ["a", "b"])
    assert splits_of(chunks, db, keys, 100) == [Split(f"{db}.t", 0, None, None)]
