"""Schema history: latest record at or before an offset, durable lines, torn tails survived."""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
from pathlib import Path

from sparkcdc.core.schema import TableSchema
from sparkcdc.sources.mysql.offset import BinlogOffset
from sparkcdc.sources.mysql.schema.column_types import column
from sparkcdc.sources.mysql.schema.history import SchemaHistory


def schema(table: str, *cols: str) -> TableSchema:
    return TableSchema(
        "shop", table, tuple(column(c, "int", nullable=False) for c in cols), primary_key=(cols[0],)
    )


def off(n: int, pos: int, skip: int = 0) -> BinlogOffset:
    return BinlogOffset(f"mysql-bin.{n:06d}", pos, gtid=f"0-1-{pos}", skip=skip)


def test_latest_record_at_or_before(tmp_path: Path) -> None:
    h = SchemaHistory(tmp_path / "h.jsonl")
    assert h.schemas_at(off(1, 4)) is None
    v1 = {("shop", "a"): schema("a", "id")}
    v2 = {("shop", "a"): schema("a", "id", "x"), ("shop", "b"): schema("b", "k")}
    v3 = {("shop", "b"): schema("b", "k")}
    h.record(off(1, 100), v1)
    h.record(off(1, 900), v2)
    h.record(off(3, 50), v3)
    assert h.schemas_at(off(1, 99)) is None
    assert h.schemas_at(off(1, 100)) == v1
    assert h.schemas_at(off(1, 899)) == v1
    assert h.schemas_at(off(1, 900)) == v2
    assert h.schemas_at(off(2, 4)) == v2  # file order comes first
    assert h.schemas_at(off(3, 50, skip=3)) == v3
    # a fresh reader sees the same
    again = SchemaHistory(tmp_path / "h.jsonl")
    assert again.schemas_at(off(2, 10_000)) == v2
    assert again.offsets() == [off(1, 100), off(1, 900), off(3, 50)]


def test_equal_offsets_last_written_wins(tmp_path: Path) -> None:
    h = SchemaHistory(tmp_path / "h.jsonl")
    h.record(off(1, 100), {("shop", "a"): schema("a", "id")})
    h.record(off(2, 100), {("shop", "a"): schema("a", "id", "z")})
    h.record(off(1, 100), {("shop", "a"): schema("a", "id", "y")})  # the log read again
    assert h.schemas_at(off(1, 500)) == {("shop", "a"): schema("a", "id", "y")}


def test_torn_last_line_is_ignored_and_cut(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    h = SchemaHistory(path)
    v1 = {("shop", "a"): schema("a", "id")}
    h.record(off(1, 100), v1)
    whole = path.read_bytes()
    line = whole.decode().strip()
    with open(path, "ab") as f:
        f.write(line[: len(line) // 2].encode())  # what kill -9 mid-write leaves
    reopened = SchemaHistory(path)
    assert reopened.schemas_at(off(9, 4)) == v1
    v2 = {("shop", "a"): schema("a", "id", "b")}
    reopened.record(off(2, 4), v2)
    lines = path.read_text().splitlines()
    assert len(lines) == 2 and all(json.loads(x) for x in lines)
    assert SchemaHistory(path).schemas_at(off(9, 4)) == v2


def _append_forever(path: str) -> None:
    h = SchemaHistory(path)
    wide = tuple(column(f"c{i}", "varchar", length=200, charset="utf8mb4") for i in range(300))
    i = 0
    while True:
        i += 1
        h.record(off(1, i), {("shop", "w"): TableSchema("shop", "w", wide, primary_key=("c0",))})


def test_kill_9_while_recording(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    ctx = multiprocessing.get_context("fork")
    proc = ctx.Process(target=_append_forever, args=(str(path),))
    proc.start()
    while not path.exists() or path.stat().st_size < 200_000:
        pass
    assert proc.pid is not None
    os.kill(proc.pid, signal.SIGKILL)
    proc.join()
    h = SchemaHistory(path)
    offsets = h.offsets()
    assert offsets and offsets == sorted(offsets)
    last = h.schemas_at(off(2, 4))
    assert last is not None and len(last[("shop", "w")].columns) == 300
    h.record(off(2, 4), {})
    assert SchemaHistory(path).schemas_at(off(2, 4)) == {}
