"""The log reader on MySQL 8's binary log, served by the protocol-level test primary
(``tests/fakes/mysql_primary.py``) from binlogs written byte by byte from MySQL's formats
(``tests/cases/mysql8``): GTID and anonymous-GTID transactions of inserts, updates and deletes
of every column type, a compressed transaction, a DDL, partial JSON updates, a start by GTID
set that skips what the set holds, and a change written as a statement."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest

from sparkcdc.core.errors import SourceError
from sparkcdc.core.schema import Column as SchemaColumn
from sparkcdc.sources.mysql.offset import BinlogOffset
from sparkcdc.sources.mysql.server.catalog import MySQLCatalog
from sparkcdc.sources.mysql.server.startup import resolve_startup
from tests.cases import partial_json as pj
from tests.cases.decoder import expected_json
from tests.cases.mysql8 import BinlogWriter, Column, Table
from tests.cases.mysql8 import events as mev
from tests.cases.mysql8.stream import change_rows, read_until, serve, source_of, stream
from tests.cases.mysql8.workload import sample_row
from tests.cases.mysql_types import (
    TYPES,
    U,
)
from tests.fakes.mysql_primary import MySQLPrimary

DOCS = Table(
    "shop", "docs", [Column("id", "int"), Column("doc", "json"), Column("note", "varchar(20)")],
    ["id"], table_id=7,
)  # fmt: skip


def expected(col: SchemaColumn, value: Any) -> Any:
    """The JSON image value of ``value`` as the writer wrote it."""
    if col.data_type == "json" and value is not None:
        return value
    if col.data_type == "bit" and isinstance(value, int):
        return value
    if isinstance(value, dt.datetime) and col.data_type == "timestamp":
        value = value.replace(microsecond=value.microsecond // 10_000 * 10_000)
    if isinstance(value, dt.timedelta):
        value = dt.timedelta(microseconds=value // dt.timedelta(microseconds=1000) * 1000)
    return expected_json(col, value)


def image(schema_columns: tuple[SchemaColumn, ...], text: str | None) -> dict[str, Any] | None:
    if text is None:
        return None
    values = json.loads(text)
    return {
        c.name: json.loads(values[c.name])
        if c.data_type == "json" and values[c.name] is not None
        else values[c.name]
        for c in schema_columns
    }


def test_every_column_type_through_gtid_anonymous_and_compressed_transactions(
    tmp_path: Path, primaries: list[MySQLPrimary]
) -> None:
    writer = BinlogWriter()
    rows = [sample_row(TYPES, i) for i in range(1, 6)]
    nulls = tuple(None if c.name != "id" else 6 for c in TYPES.columns)
    writer.transaction([("c", TYPES, None, rows[0]), ("c", TYPES, None, rows[1])], gtid=(U, 1))
    writer.transaction([("c", TYPES, None, rows[2]), ("c", TYPES, None, nulls)])  # anonymous
    writer.transaction([("u", TYPES, rows[0], rows[3])], gtid=(U, 2), compressed=True)
    writer.transaction([("d", TYPES, rows[1], None), ("c", TYPES, None, rows[4])], gtid=(U, 3))
    primary = serve(primaries, writer, TYPES)
    with MySQLCatalog("127.0.0.1", primary.port, "cdc", "cdc-pw") as catalog:
        schema = catalog.load_schema("shop", "types")
        start = resolve_startup(catalog, source_of(primary), "earliest")
    got = change_rows(stream(primary, start, tmp_path, 7))
    cols = schema.columns

    def want(row: tuple[Any, ...] | None) -> dict[str, Any] | None:
        return (
            None
            if row is None
            else {c.name: expected(c, v) for c, v in zip(cols, row, strict=True)}
        )

    assert [(r["op"], image(cols, r["before"]), image(cols, r["after"])) for r in got] == [
        ("c", None, want(rows[0])), ("c", None, want(rows[1])), ("c", None, want(rows[2])),
        ("c", None, want(nulls)), ("u", want(rows[0]), want(rows[3])),
        ("d", want(rows[1]), None), ("c", None, want(rows[4])),
    ]  # fmt: skip
    gtids = [r["source"]["gtid"] for r in got]
    assert gtids == [f"{U}:1", f"{U}:1", "", "", f"{U}:2", f"{U}:3", f"{U}:3"]
    positions = [r["source"]["position"] for r in got]
    assert positions == sorted(positions) and len(set(positions)) == len(positions)
    assert [r["source"]["row"] for r in got] == [0, 1, 0, 1, 0, 0, 0]


def partial_update(writer: BinlogWriter, gno: int, before: Any, diffs: bytes, compressed: bool
                   ) -> None:  # fmt: skip
    """A transaction holding one PARTIAL_UPDATE_ROWS event of DOCS row 1 (note kept)."""
    row = pj.partial_row(
        [pj.int32(1), pj.json_value(before), pj.varchar("n")],
        [pj.int32(1), diffs, pj.varchar("n")], [0], 1,
    )  # fmt: skip
    body = pj.event(3, [0, 1, 2], [0, 1, 2], [row])[19:]
    layout = writer.layout(DOCS)
    inner = [(mev.QUERY, mev.query_body("", "BEGIN")), (mev.TABLE_MAP, layout.table_map_body),
             (39, body), (mev.XID, mev.xid_body(900 + gno))]  # fmt: skip
    writer._group(inner, (U, gno), compressed, writer.now + 1, 0)


def test_partial_json_updates_arrive_as_whole_documents_and_a_ddl_changes_the_schema(
    tmp_path: Path, primaries: list[MySQLPrimary]
) -> None:
    writer = BinlogWriter()
    doc = {"a": 1, "list": [1, 2], "keep": "x"}
    writer.transaction([("c", DOCS, None, (1, doc, "n"))], gtid=(U, 1))
    primary = serve(primaries, writer, DOCS)
    with MySQLCatalog("127.0.0.1", primary.port, "cdc", "cdc-pw") as catalog:
        start = resolve_startup(catalog, source_of(primary), "earliest")
    replace = pj.diffs(pj.diff(pj.REPLACE, "$.a", 5), pj.diff(pj.INSERT, "$.list[1]", "x"))
    partial_update(writer, 2, doc, replace, compressed=False)
    changed = {"a": 5, "list": [1, "x", 2], "keep": "x"}
    partial_update(writer, 3, changed, pj.diffs(pj.diff(pj.REMOVE, "$.keep")), compressed=True)
    writer.ddl((U, 4), "shop", "ALTER TABLE docs ADD COLUMN extra JSON")
    wider = Table("shop", "docs", [*DOCS.columns, Column("extra", "json")], ["id"], table_id=8)
    writer.transaction([("c", wider, None, (2, [1], "m", {"z": None}))], gtid=(U, 5))
    items = stream(primary, start, tmp_path, 4)
    got = change_rows(items)
    afters = [json.loads(r["after"]) for r in got]
    assert [json.loads(a["doc"]) for a in afters] == [
        doc,
        changed,
        {"a": 5, "list": [1, "x", 2]},
        [1],
    ]
    assert json.loads(afters[3]["extra"]) == {"z": None}
    ddl = [i for i in items if i.is_ddl and i.batch is not None]
    assert any("ADD COLUMN extra JSON" in str(r["ddl"]) for i in ddl for r in i.batch.to_pylist())
    assert isinstance(items[-1].after, BinlogOffset) and items[-1].after.gtid == f"{U}:1-5"


def test_a_start_by_gtid_set_skips_what_it_holds_then_resumes_by_position(
    tmp_path: Path, primaries: list[MySQLPrimary]
) -> None:
    writer = BinlogWriter()
    for gno in range(1, 6):
        row = (gno, {"n": gno}, f"r{gno}")
        writer.transaction([("c", DOCS, None, row)], gtid=(U, gno))
        if gno == 3:
            writer.rotate()
    primary = serve(primaries, writer, DOCS)
    source = source_of(primary)
    with MySQLCatalog("127.0.0.1", primary.port, "cdc", "cdc-pw") as catalog:
        start = resolve_startup(catalog, source, f"gtid:{U}:1-3")
        assert catalog.current_offset().gtid == f"{U}:1-5"
    assert (start.file, start.gtid) == ("binlog.000002", f"{U}:1-3")
    items = stream(primary, start, tmp_path / "a", 2)
    assert [json.loads(r["after"])["id"] for r in change_rows(items)] == [4, 5]
    # the offset after transaction 4 resumes by file and position: only 5 follows
    after_four = next(i.after for i in items if i.batch is not None and not i.is_ddl)
    assert isinstance(after_four, BinlogOffset) and after_four.gtid == f"{U}:1-4"
    resumed = stream(primary, after_four, tmp_path / "b", 1, settle=1.0)
    assert [json.loads(r["after"])["id"] for r in change_rows(resumed)] == [5]
    # a set the reader resumes with that holds a later transaction: that one is not delivered
    stale = BinlogOffset("binlog.000002", start.pos, f"{U}:1-3:5")
    again = stream(primary, stale, tmp_path / "c", 1, settle=1.0)
    assert [json.loads(r["after"])["id"] for r in change_rows(again)] == [4]


def test_a_change_written_as_a_statement_stops_the_stream_unless_another_table_has_it(
    tmp_path: Path, primaries: list[MySQLPrimary]
) -> None:
    """A session with binlog_format=STATEMENT writes its changes as QUERY events: one of a
    table outside the capture passes, one of a captured table stops the stream there (treated
    as DDL it would be passed over without a word)."""
    writer = BinlogWriter()
    writer.transaction([("c", DOCS, None, (1, {"n": 1}, "a"))], gtid=(U, 1))
    writer.ddl((U, 2), "other", "INSERT INTO other.audit VALUES (1)")
    writer.transaction([("c", DOCS, None, (2, {"n": 2}, "b"))], gtid=(U, 3))
    _, query = writer.ddl((U, 4), "shop", "UPDATE docs SET note = 'x' WHERE id = 1")
    pos = writer.pos - len(query)
    writer.transaction([("c", DOCS, None, (3, {"n": 3}, "c"))], gtid=(U, 5))
    primary = serve(primaries, writer, DOCS)
    items: list[Any] = []
    stop = BinlogOffset("binlog.000001", writer.pos)
    with pytest.raises(
        SourceError,
        match=rf"a change of shop.docs written as a statement at "
        rf"binlog.000001:{pos} \(`UPDATE docs SET note = 'x' WHERE id = 1`\)",
    ):
        read_until(source_of(primary), BinlogOffset("binlog.000001", 4), stop, tmp_path, items)
    assert [json.loads(r["after"])["id"] for r in change_rows(items)] == [1, 2]
