"""Notifications of the incremental snapshots (``n`` events): the sink keeps them in order, once
per micro-batch, logs them in words, and never takes them for changes of a table."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from sparkcdc.core.event import OP_NOTICE, envelope_schema
from sparkcdc.core.offset_events import notice_batch
from sparkcdc.sinks.changes.notices import describe, notification_rows
from sparkcdc.sinks.delta.notifications import (
    NOTIFICATIONS_DIR,
    read_notifications,
    write_notifications,
)
from sparkcdc.sinks.delta.sink import DeltaSink
from sparkcdc.sources.mysql.offset import BinlogOffset
from tests.cases.envelopes import Changes
from tests.cases.schemas import ACCOUNTS

FILE = "mysql-bin.000003"
CHUNK: dict[str, Any] = {
    "type": "chunk", "rows": 16192, "last_key": [16192], "max_key": [2000000], "snapshot_id": "s1",
}  # fmt: skip


def events(*notes: tuple[str, str, dict[str, Any]], pos: int = 500, ts_ms: int = 7) -> pa.Table:
    at = BinlogOffset(FILE, pos, "0-1-5")
    return pa.Table.from_batches([notice_batch(list(notes), at, ts_ms)])


def batch(*parts: pa.Table) -> pa.Table:
    return pa.concat_tables(parts)


def test_notice_batch_builds_envelope_rows() -> None:
    rows = events(("shop", "orders", CHUNK), ("", "", {"type": "completed"}))
    assert rows.schema.equals(envelope_schema(BinlogOffset))
    got = rows.to_pylist()
    assert [r["op"] for r in got] == [OP_NOTICE, OP_NOTICE]
    assert [(r["db"], r["table"]) for r in got] == [("shop", "orders"), ("", "")]
    assert json.loads(got[0]["after"]) == CHUNK
    assert all(r[c] is None for r in got for c in ("key", "before", "schema", "ddl", "schema_id"))
    assert [(r["source"]["file"], r["source"]["pos"], r["source"]["row"]) for r in got] == [
        (FILE, 500, 0), (FILE, 500, 1),
    ]  # fmt: skip
    place = BinlogOffset(FILE, 500).position()
    assert [r["source"]["position"] for r in got] == [f"{place}:0000000000"] * 2
    assert got[0]["source"]["db"] == "shop" and got[0]["source"]["ts_ms"] == 7
    assert got[0]["transaction"] is None
    assert notice_batch([], BinlogOffset(FILE, 1), 0).num_rows == 0


def test_notifications_are_kept_in_order(tmp_path: Path) -> None:
    sink = DeltaSink(str(tmp_path), "p")
    first = events(
        ("shop", "orders", {"type": "started", "snapshot_id": "s1"}),
        ("shop", "orders", CHUNK),
        pos=100,
    )
    report = sink.write(first, 0)
    assert report.changes == 0 and report.notifications == 2 and report.tables == []
    done = {"type": "table-done", "rows": 2000000, "snapshot_id": "s1"}
    sink.write(events(("shop", "orders", done), ("", "", {"type": "completed"}), pos=200), 1)
    kept = read_notifications(str(tmp_path))
    assert [(r["batch_id"], r["index"], r["type"]) for r in kept] == [
        (0, 0, "started"), (0, 1, "chunk"), (1, 0, "table-done"), (1, 1, "completed"),
    ]  # fmt: skip
    assert kept[1] == {
        "batch_id": 0, "index": 1, "type": "chunk", "db": "shop", "table": "orders",
        "details": json.dumps(CHUNK),
        "position": f"{BinlogOffset(FILE, 100).position()}:0000000000", "ts_ms": 7,
    }  # fmt: skip
    assert kept[3]["db"] == "" and kept[3]["table"] == ""
    columns = pa.schema(DeltaTable(str(tmp_path / NOTIFICATIONS_DIR)).schema().to_arrow()).names
    assert columns == [
        "batch_id", "index", "type", "db", "table", "details", "position", "ts_ms",
    ]  # fmt: skip


def test_a_replayed_batch_keeps_its_notifications_once(tmp_path: Path) -> None:
    rows = events(("shop", "orders", CHUNK))
    DeltaSink(str(tmp_path), "p").write(rows, 0)
    DeltaSink(str(tmp_path), "p").write(rows, 0)
    assert len(read_notifications(str(tmp_path))) == 1
    assert not write_notifications(str(tmp_path), notification_rows(rows), "p", 0)
    assert write_notifications(str(tmp_path), notification_rows(rows), "another pipeline", 0)
    assert not write_notifications(str(tmp_path), notification_rows(events()), "p", 1)
    assert len(read_notifications(str(tmp_path))) == 2


def test_notifications_are_no_changes_of_their_table(tmp_path: Path) -> None:
    """No schema of shop.orders was ever announced: a change would stop the batch."""
    sink = DeltaSink(str(tmp_path), "p")
    sink.write(events(("shop", "orders", CHUNK), ("shop", "orders", {"type": "paused"})), 0)
    assert not (tmp_path / "shop").exists()
    assert sink.changes == 0 and sink.last_report is not None
    assert sink.last_report.tables == [] and sink.last_report.skipped == []


def test_a_batch_of_changes_and_notifications_writes_both(tmp_path: Path) -> None:
    a = ACCOUNTS
    sink = DeltaSink(str(tmp_path), "p")
    changes = Changes().schema(a).change("c", a, after={"id": 1, "owner": "o", "balance": "1"})
    done = {"type": "table-done", "rows": 1}
    report = sink.write(batch(changes.table(), events(("shop", "accounts", done))), 0)
    assert report.changes == 1 and report.tables == ["shop.accounts"]
    assert report.notifications == 1
    replica = DeltaTable(str(tmp_path / "shop" / "accounts")).to_pyarrow_table().to_pylist()
    assert [r["id"] for r in replica] == [1]
    log = DeltaTable(str(tmp_path / "shop" / "accounts__changelog")).to_pyarrow_table()
    assert log.column("op").to_pylist() == ["c"]
    assert [r["type"] for r in read_notifications(str(tmp_path))] == ["table-done"]


def test_notifications_are_logged_in_words(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="sparkcdc.sink")
    sink = DeltaSink(str(tmp_path), "p")
    sink.write(
        events(
            ("shop", "orders", CHUNK),
            ("shop", "orders", {"type": "table-done", "rows": 2000000}),
            ("", "", {"type": "completed"}),
            ("", "", {"type": "paused"}),
            ("shop", "items", {"type": "skipped", "reason": "no primary key"}),
        ),
        0,
    )
    said = [r.getMessage() for r in caplog.records if r.name == "sparkcdc.sink"]
    assert said == [
        "incremental snapshot of shop.orders: chunk done, 16,192 rows so far "
        "(last key [16192] of [2000000])",
        "incremental snapshot of shop.orders: done, 2,000,000 rows",
        "incremental snapshots completed",
        "incremental snapshots paused",
        "incremental snapshot of shop.items skipped: no primary key",
    ]
    caplog.clear()
    DeltaSink(str(tmp_path), "p").write(events(("", "", {"type": "completed"})), 0)  # a replay
    assert not [r for r in caplog.records if r.levelno >= logging.INFO]


def test_every_kind_of_notification_in_words() -> None:
    said = {
        '{"type": "started", "where": "id > 5", "estimate": 12000}':
            "incremental snapshot of shop.orders started (where id > 5), about 12,000 rows",
        '{"type": "queued", "where": null}': "incremental snapshot of shop.orders queued",
        '{"type": "chunk", "rows": 2048, "max_key": [9]}':
            "incremental snapshot of shop.orders: chunk done, 2,048 rows so far (keys up to [9])",
        '{"type": "stopped", "rows": 4096}':
            "incremental snapshot of shop.orders stopped after 4,096 rows",
        '{"type": "resumed"}': "incremental snapshot of shop.orders resumed",
    }  # fmt: skip
    for details, words in said.items():
        assert describe("shop", "orders", details) == words
    logged = describe("", "", '{"type": "log", "message": "hi"}')
    assert logged == "incremental snapshots: hi"


def test_an_unknown_notification_is_told_as_it_came() -> None:
    said = describe("", "", '{"type": "new"}')
    assert said == 'incremental snapshots: {"type": "new"}'
    assert describe("a", "b", "not json") == "incremental snapshot of a.b: not json"
