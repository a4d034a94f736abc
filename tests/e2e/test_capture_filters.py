"""Capture filters end to end, on every source: a marker written into a left-out column, three
masked columns and a left-out table goes through the initial snapshot, the stream and an
incremental snapshot, and no file under the lake or the checkpoint holds it (Parquet and Arrow
files read decoded, every other file byte by byte); the replica holds the masked values, equal
to the source's masked the same way, and ``verify`` (masking the source's rows) finds it equal.
A kept column's marker is found, so the scan can find one."""

from __future__ import annotations

import contextlib
import hashlib
from pathlib import Path

import pyarrow as pa
import pyarrow.ipc as ipc
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable

from tests.cases.e2e_sources import E2ESource
from tests.e2e.cli import available_now, run
from tests.e2e.incremental_runs import Launch, notes, signal, stop, wait_for

pytestmark = [pytest.mark.spark, pytest.mark.slow]

SECRET = "qz7-private-marker"
VISIBLE = "kept-column-marker"
SALT = "pepper-9"
COLUMNS = ["id", "name", "email", "note", "phone"]


def _capture(schema: str) -> str:
    people = rf"{schema}\.people"
    return (
        rf", tables_exclude: ['{schema}\.audit'], columns: {{exclude: ['{people}\.ssn']}}, "
        rf"masks: [{{columns: ['{people}\.email'], hash: SHA-256, salt: {SALT}}}, "
        rf"{{columns: ['{people}\.note'], truncate: 4}}, "
        rf"{{columns: ['{people}\.phone'], mask: 5}}]"
    )


def _insert(source: E2ESource, first: int, last: int) -> None:
    values = ", ".join(
        f"({i}, '{VISIBLE}-{i}', '{SECRET}-ssn-{i}', '{SECRET}-{i}@example.com', "
        f"'{SECRET} note {i}', '{SECRET}-tel-{i}')"
        for i in range(first, last + 1)
    )
    source.execute(f"INSERT INTO people (id, name, ssn, email, note, phone) VALUES {values}")
    source.execute(f"INSERT INTO audit (id, secret) VALUES ({first}, '{SECRET}-audit-{first}')")


def _masked(rows: list[tuple[object, ...]]) -> list[tuple[object, ...]]:
    """The source's rows masked as the pipeline file says."""

    def hashed(v: object) -> object:
        return None if v is None else hashlib.sha256((SALT + str(v)).encode()).hexdigest()

    return sorted(
        (i, name, hashed(email), None if note is None else str(note)[:4],
         None if phone is None else "*****")
        for i, name, email, note, phone in rows
    )  # fmt: skip


def _replica(path: Path) -> list[tuple[object, ...]]:
    table = DeltaTable(str(path)).to_pyarrow_table()
    assert "ssn" not in table.column_names
    return sorted(tuple(r[c] for c in COLUMNS) for r in table.to_pylist())


def _holding(root: Path, marker: str) -> list[str]:
    """The files under ``root`` that hold ``marker``: Parquet and Arrow files decoded, every
    file's bytes too."""
    found = []
    needle = marker.encode()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        data = path.read_bytes()
        texts = [data]
        if data[:4] == b"PAR1":
            texts.append(str(pq.read_table(path).to_pylist()).encode())
        elif data[:6] == b"ARROW1":
            with pa.memory_map(str(path)) as mapped:
                texts.append(str(ipc.open_file(mapped).read_all().to_pylist()).encode())
        elif data[4:8] == b"\xff\xff\xff\xff" or data[:4] == b"\xff\xff\xff\xff":
            with contextlib.suppress(pa.ArrowInvalid):
                texts.append(str(ipc.open_stream(data).read_all().to_pylist()).encode())
        if any(needle in t for t in texts):
            found.append(str(path.relative_to(root)))
    return found


@pytest.mark.extended("postgres")
def test_a_marker_in_left_out_and_masked_data_reaches_no_file(
    source: E2ESource, tmp_path: Path, launch: Launch
) -> None:
    schema = source.schema
    source.execute(
        "CREATE TABLE people (id INT PRIMARY KEY, name VARCHAR(60), ssn VARCHAR(60), "
        "email VARCHAR(80), note VARCHAR(80), phone VARCHAR(40))",
        "CREATE TABLE audit (id INT PRIMARY KEY, secret VARCHAR(60))",
    )
    _insert(source, 1, 40)
    extra = _capture(schema) + source.snapshot_settings(chunk=8)
    cfg = source.config(tmp_path, "(people|audit)", "initial", extra_source=extra)
    lake = source.lake(tmp_path)

    def source_rows() -> list[tuple[object, ...]]:
        return _masked(source.query(f"SELECT {', '.join(COLUMNS)} FROM people"))

    proc = launch(cfg)
    try:
        wait_for(proc, lambda: (lake / "people").exists() and len(_replica(lake / "people")) == 40,
                 "the initial snapshot", 180)  # fmt: skip
        _insert(source, 41, 60)
        source.execute(
            f"UPDATE people SET ssn = '{SECRET}-new', email = '{SECRET}-new@example.com', "
            f"note = '{SECRET} again', phone = NULL WHERE id = 1",
            "DELETE FROM people WHERE id = 2",
        )
        signal(cfg, "execute-snapshot", "--tables", f"{schema}.people")
        wait_for(proc, lambda: bool(notes(tmp_path / "lake", "completed")),
                 "the incremental snapshot", 180)  # fmt: skip
        wait_for(proc, lambda: _replica(lake / "people") == source_rows(), "the stream", 90)
    finally:
        stop(proc)

    assert not (lake / "audit").exists()
    reads = DeltaTable(str(lake / "people__changelog")).to_pyarrow_table().to_pylist()
    assert {r["op"] for r in reads} >= {"r", "c", "u", "d"}
    assert len([r for r in reads if r["op"] == "r"]) >= 40 + 58  # initial + incremental reads
    leaked = _holding(tmp_path / "lake", SECRET) + _holding(tmp_path / "checkpoint", SECRET)
    assert leaked == []
    assert _holding(tmp_path / "lake", VISIBLE)  # the scan finds what is there
    code, out = run(cfg, command="verify")
    assert code == 0, out  # --quiet: nothing printed when every table is equal


@pytest.mark.extended("mysql")
def test_skipped_deletes_and_truncates_stay_out_of_the_lake_and_verify_says_why(
    source: E2ESource, tmp_path: Path
) -> None:
    """``skip_operations: [d, t]``, as Debezium's ``skipped.operations``: an archive that keeps
    every row the source ever had."""
    source.execute(
        "CREATE TABLE kept (id INT PRIMARY KEY, v INT)",
        "INSERT INTO kept (id, v) VALUES (1, 1), (2, 2), (3, 3)",
    )
    extra = ", skip_operations: [d, t]" + source.snapshot_settings()
    cfg = source.config(tmp_path, "kept", "initial", extra_source=extra)
    available_now(cfg)
    source.execute(
        "UPDATE kept SET v = 20 WHERE id = 2",
        "DELETE FROM kept WHERE id = 1",
        "TRUNCATE TABLE kept",
        "INSERT INTO kept (id, v) VALUES (4, 4)",
    )
    available_now(cfg)
    lake = source.lake(tmp_path)
    rows = DeltaTable(str(lake / "kept")).to_pyarrow_table().to_pylist()
    assert sorted((r["id"], r["v"]) for r in rows) == [(1, 1), (2, 20), (3, 3), (4, 4)]
    log = DeltaTable(str(lake / "kept__changelog")).to_pyarrow_table(columns=["op"])
    ops = log.column("op").to_pylist()
    assert sorted(ops) == ["c", "r", "r", "r", "u"]
    code, out = run(cfg, command="verify")
    assert code == 78 and "source.skip_operations" in out, out
