"""Tagged GTIDs (MySQL 8.3+, ``uuid:tag:n``) end to end on streams the MySQL test primary serves:
GTID_TAGGED_LOG_EVENTs and tagged PREVIOUS_GTIDS read into each change's ``source.gtid`` and
the offsets' GTID sets, a start by a tagged GTID set sent in MySQL's tagged encoding (and
refused by a server without tags), a resume whose set holds a tagged transaction, broken tagged
events stopped with a sentence, and a tagged offset kept by the checkpoint and shown by
``sparkcdc status``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sparkcdc.cli.status import describe_state
from sparkcdc.core.errors import ConfigError, SourceError
from sparkcdc.sources.mysql.offset import BinlogOffset
from sparkcdc.sources.mysql.server.catalog import MySQLCatalog
from sparkcdc.sources.mysql.server.startup import resolve_startup
from sparkcdc.spark.pipeline.state import read_pipeline_state
from tests.cases.mysql8 import BinlogWriter, Column, Table
from tests.cases.mysql8.real import SERVED, end_of, served_events, with_crc
from tests.cases.mysql8.stream import change_rows, read_until, serve, source_of, stream
from tests.fakes.mysql_primary import MySQLPrimary

U = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
ITEMS = Table("shop", "items", [Column("id", "int"), Column("name", "varchar(20)")], ["id"],
              table_id=11)  # fmt: skip
GTIDS = [(U, 1), (f"{U}:blue", 1), (f"{U}:blue", 2), (U, 2), (f"{U}:red", 1), (f"{U}:blue", 3)]


def tagged_binlog() -> BinlogWriter:
    """MySQL 8.4: six transactions of one row each (GTIDS), a rotation after the fourth."""
    writer = BinlogWriter(version="8.4.0")
    for row, gtid in enumerate(GTIDS, 1):
        writer.transaction([("c", ITEMS, None, (row, f"r{row}"))], gtid=gtid)
        if row == 4:
            writer.rotate()
    return writer


def ids(items: list) -> list[int]:  # type: ignore[type-arg]
    return [json.loads(r["after"])["id"] for r in change_rows(items)]


def test_each_change_carries_its_tagged_gtid_and_offsets_the_tagged_set(
    tmp_path: Path, primaries: list[MySQLPrimary]
) -> None:
    primary = serve(primaries, tagged_binlog(), ITEMS)
    items = stream(primary, BinlogOffset("binlog.000001", 4), tmp_path, 6)
    rows = change_rows(items)
    assert [r["source"]["gtid"] for r in rows] == [
        f"{U}:1", f"{U}:blue:1", f"{U}:blue:2", f"{U}:2", f"{U}:red:1", f"{U}:blue:3"
    ]  # fmt: skip
    afters = [i.after.gtid for i in items if i.batch is not None and not i.is_ddl]
    assert afters[2] == f"{U}:1:blue:1-2" and afters[-1] == f"{U}:1-2:blue:1-3:red:1"
    # the second file opens with a tagged PREVIOUS_GTIDS: a stream from there starts with it
    second = stream(primary, BinlogOffset("binlog.000002", 4), tmp_path / "b", 2)
    assert [i.after.gtid for i in second if i.batch is not None and not i.is_ddl] == [
        f"{U}:1-2:blue:1-2:red:1", f"{U}:1-2:blue:1-3:red:1"
    ]  # fmt: skip


def test_a_start_by_a_tagged_set_skips_what_it_holds_and_a_resume_keeps_it(
    tmp_path: Path, primaries: list[MySQLPrimary]
) -> None:
    primary = serve(primaries, tagged_binlog(), ITEMS)
    source = source_of(primary)
    with MySQLCatalog("127.0.0.1", primary.port, "cdc", "cdc-pw") as catalog:
        assert catalog.current_offset().gtid == f"{U}:1-2:blue:1-3:red:1"
        start = resolve_startup(catalog, source, f"gtid:{U}:1-2:BLUE:1-2")
    assert primary.gtid_dumps == [f"{U}:1-2:blue:1-2"]  # sent in MySQL's tagged encoding
    assert (start.file, start.gtid) == ("binlog.000002", f"{U}:1-2:blue:1-2")
    items = stream(primary, start, tmp_path / "a", 2)
    assert ids(items) == [5, 6]
    # a resume whose set already holds red:1 (a set of a stream opened by GTIDs) skips it
    stale = BinlogOffset("binlog.000002", start.pos, f"{U}:1-2:blue:1-2:red:1")
    again = stream(primary, stale, tmp_path / "b", 1, settle=1.0)
    assert ids(again) == [6]


def test_a_server_without_tags_is_never_sent_a_tagged_set(primaries: list[MySQLPrimary]) -> None:
    writer = BinlogWriter(version="8.0.36")
    writer.transaction([("c", ITEMS, None, (1, "a"))], gtid=(U, 1))
    primary = serve(primaries, writer, ITEMS)
    with (
        MySQLCatalog("127.0.0.1", primary.port, "cdc", "cdc-pw") as catalog,
        pytest.raises(ConfigError, match="holds tagged GTIDs .* which MySQL 8.0.36 does not"),
    ):
        resolve_startup(catalog, source_of(primary), f"gtid:{U}:1:blue:1")
    assert primary.gtid_dumps == []


def broken(name: str, event_type: int, cut: int) -> tuple[list[bytes], int]:
    """The real tagged binlog with its event of ``event_type`` cut ``cut`` bytes short (size,
    next positions and CRC32 kept consistent); that event's position."""
    events = served_events(name)
    at = next(i for i, e in enumerate(events) if e[4] == event_type)
    pos = int.from_bytes(events[at][13:17], "little") - len(events[at])
    event = bytearray(events[at][: -4 - cut] + events[at][-4:])
    event[9:13] = len(event).to_bytes(4, "little")
    events[at] = with_crc(bytes(event), True)
    for i in range(at, len(events)):  # every event from there on ends ``cut`` bytes earlier
        data = bytearray(events[i])
        data[13:17] = (int.from_bytes(data[13:17], "little") - cut).to_bytes(4, "little")
        events[i] = with_crc(bytes(data), True)
    return events, pos


@pytest.mark.parametrize(("event_type", "cut", "kind"), [(35, 10, "PREVIOUS_GTIDS"),
                                                         (42, 30, "tagged GTID")])  # fmt: skip
def test_a_broken_tagged_event_stops_the_stream_with_its_type_and_position(
    tmp_path: Path, primaries: list[MySQLPrimary], event_type: int, cut: int, kind: str
) -> None:
    events, pos = broken("binlog_transaction_with_GTID_TAG.000001", event_type, cut)
    primary = MySQLPrimary(files={SERVED: events}, version="9.6.0", tables=[
        Table("test", "orders", [Column("id", "int"), Column("q", "int"),
                                 Column("p", "decimal(10,2)")], ["id"])])  # fmt: skip
    primaries.append(primary)
    source = source_of(primary, r"test\..*")
    with pytest.raises(SourceError, match=rf"{kind} event \(type {event_type}\) at "
                                          rf"{SERVED}:{pos} cannot be read"):  # fmt: skip
        read_until(source, BinlogOffset(SERVED, 4), BinlogOffset(SERVED, end_of(events)), tmp_path)


def test_a_tagged_offset_survives_the_checkpoint_and_status_shows_it(tmp_path: Path) -> None:
    tagged = BinlogOffset("binlog.000002", 1234, f"{U}:1-2:blue:1-3")
    old = {"file": "mysql-bin.000007", "pos": 4, "gtid": f"{U}:1-9", "skip": 0}  # as before
    assert BinlogOffset.from_json(tagged.to_json()) == tagged
    assert BinlogOffset.from_json(old).gtid == f"{U}:1-9"
    spark = tmp_path / "cp" / "spark"
    meta = json.dumps({"batchWatermarkMs": 0, "batchTimestampMs": 1714557600000, "conf": {}})
    for folder in ("offsets", "commits"):
        (spark / folder).mkdir(parents=True)
    for batch, offset in enumerate((old, tagged.to_json())):
        (spark / "offsets" / str(batch)).write_text(f"v1\n{meta}\n{json.dumps(offset)}")
        (spark / "commits" / str(batch)).write_text('v1\n{"nextBatchWatermarkMs":0}')
    state = read_pipeline_state(tmp_path / "cp", BinlogOffset)
    assert state.committed is not None
    assert state.committed.position == f"binlog.000002:1234 gtid {U}:1-2:blue:1-3"
    assert ("", f"ends at binlog.000002:1234 gtid {U}:1-2:blue:1-3") in describe_state(state)
