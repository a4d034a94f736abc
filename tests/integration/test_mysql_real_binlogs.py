"""Binlog files real MySQL 5.6 to 9.6 servers wrote (``../shared/mysql-binlogs``, PROVENANCE.md
there), each served by the MySQL test primary (:mod:`tests.cases.mysql8.real` says what is
changed for that) and read by the project's log reader from its start to its end.

The values asserted are those the tests of the repository each file comes from assert
(rust_mysql_common's ``src/binlog/mod.rs``, mysql-binlog-connector-java's
``BinaryLogFileReaderIntegrationTest`` and ``TransactionPayloadEventDataDeserializerTest``),
written here as the log reader's JSON images; where those tests assert no values, the values
``mariadb-binlog -v`` prints for the file, or what the server itself computed into the same row
(generated columns). MySQL 5.7.20's file is compared with ``mariadb-binlog -v`` row by row.
What sparkcdc does not read stops the stream with a sentence, before any change of it is
delivered: VECTOR columns, a change written as a statement (MySQL 5.6), a binlog without GTID
events (MySQL 5.7.1), a partial JSON update whose before image lacks the document
(``binlog_row_image=MINIMAL``), a functional index's hidden column (a MySQL 8.0.17 relay log).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from sparkcdc.config.model import HeartbeatConfig, SourceConfig
from sparkcdc.core.errors import SourceError
from sparkcdc.core.logitem import LogItem
from sparkcdc.sources.mysql.offset import BinlogOffset
from tests.cases.mysql8 import Column, Table
from tests.cases.mysql8.real import (
    MOVIE_COLUMNS,
    MOVIE_LENGTHS,
    ONCE_UPON_A_TIME,
    REAL,
    SERVED,
    description,
    end_of,
    served_events,
)
from tests.cases.mysql8.stream import change_rows, read_until, read_while
from tests.fakes.mysql_primary import MySQLPrimary

SEEN = Table("seen", "placeholder", [Column("id", "int")], ["id"])  # a table to capture at start
ZERO_TO_NINE = "0123456789"
LONG = (ZERO_TO_NINE * 12 + ZERO_TO_NINE[:9]) * 2 + ZERO_TO_NINE * 4  # 298 characters


def read_real(
    tmp: Path, primaries: list[MySQLPrimary], name: str, capture: str, *tables: Table,
    keys: dict[str, tuple[str, ...]] | None = None, relay_log: bool = False,
) -> tuple[list[LogItem], SourceError | None]:  # fmt: skip
    """The items the log reader puts reading ``files/<name>`` (served as SERVED) from its start
    to its end, capturing ``capture`` (a pattern over db.table), and the error that stopped it."""
    events = served_events(name, relay_log)
    version = description(events).server_version
    primary = MySQLPrimary(files={SERVED: events}, tables=[SEEN, *tables], version=version)
    primaries.append(primary)
    source = SourceConfig("127.0.0.1", primary.port, "cdc", "cdc-pw", (r"seen\..*", capture),
                          key_columns=keys or {})  # fmt: skip
    items: list[LogItem] = []
    try:
        read_until(source, BinlogOffset(SERVED, 4), BinlogOffset(SERVED, end_of(events)), tmp,
                   items)  # fmt: skip
    except SourceError as exc:
        return items, exc
    return items, None


def changes(items: list[LogItem]) -> list[tuple[str, Any, Any]]:
    """(op, before, after) of every change, images as dicts."""
    return [(r["op"], _image(r["before"]), _image(r["after"])) for r in change_rows(items)]


def _image(text: str | None) -> Any:
    return None if text is None else json.loads(text)


def ddl_kinds(items: list[LogItem]) -> list[str]:
    return [json.loads(r["after"])["kind"] for i in items if i.is_ddl and i.batch is not None
            for r in i.batch.to_pylist()]  # fmt: skip


def test_mysql_8_0_28_enum_set_char_and_varchar_values(
    tmp_path: Path, primaries: list[MySQLPrimary]
) -> None:
    """rust_mysql_common: the insert, the update and the delete of myapp.t (f1 CHAR(128), f2
    VARCHAR(300), f3 ENUM, f4 SET, f5 TEXT), ENUM by index 1/2, SET by bits 0b101/0b1010."""
    items, error = read_real(tmp_path, primaries, "mysql-enum-string-set.000001", r"myapp\..*",
                             keys={"myapp.t": ("f1",)})  # fmt: skip
    assert error is None
    first = {"f1": ZERO_TO_NINE * 10, "f2": LONG, "f3": "var1", "f4": "one,three",
             "f5": ZERO_TO_NINE}  # fmt: skip
    second = {"f1": "field1", "f2": "field_2", "f3": "variant2", "f4": "two,four", "f5": LONG}
    assert changes(items) == [("c", None, first), ("u", first, second), ("d", second, None)]


def test_mysql_8_0_26_bit_columns(tmp_path: Path, primaries: list[MySQLPrimary]) -> None:
    """rust_mysql_common: BIT(3) 0b100, TEXT 'foo', BIT(8) 0b100000."""
    items, error = read_real(tmp_path, primaries, "mysql_type_bit.000001", r"myapp\..*",
                             keys={"myapp.foo": ("a",)})  # fmt: skip
    assert error is None
    assert changes(items) == [("c", None, {"a": 0b100, "b": "foo", "c": 0b100000})]


def test_mysql_8_0_40_minimal_metadata_signedness_and_a_partial_image(
    tmp_path: Path, primaries: list[MySQLPrimary]
) -> None:
    """rust_mysql_common: column 4 (INT UNSIGNED) reads 3230202323, with the signedness of
    ``binlog_row_metadata=MINIMAL`` (the row image holds columns 0, 2 and 4: mariadb-binlog)."""
    t1 = Table("noria", "t1", [Column("c0", "int", nullable=False), Column("c1", "text"),
                               Column("c2", "char(2)"), Column("c3", "int"),
                               Column("c4", "int unsigned")])  # fmt: skip
    items, error = read_real(tmp_path, primaries, "minimal_row_metadata.000001", r"noria\..*",
                             t1, keys={"noria.t1": ("c0",)})  # fmt: skip
    assert error is None
    assert changes(items) == [("c", None, {"c0": 1, "c2": "a", "c4": 3230202323})]


def test_mysql_8_0_40_a_negative_time(tmp_path: Path, primaries: list[MySQLPrimary]) -> None:
    """rust_mysql_common: TIME -(21 days 3:48:27)."""
    t = Table("noria", "t", [Column("t", "time")])
    items, error = read_real(tmp_path, primaries, "time_issue.000001", r"noria\..*", t,
                             keys={"noria.t": ("t",)})  # fmt: skip
    assert error is None
    assert changes(items) == [("c", None, {"t": "-507:48:27.000000"})]


def test_mysql_8_0_32_and_8_0_28_compressed_transactions(
    tmp_path: Path, primaries: list[MySQLPrimary]
) -> None:
    """rust_mysql_common: a compressed insert into test.tb1 (its row: 1); mysql-binlog-connector-
    java: a compressed update of demo.movies (the values its payload test asserts)."""
    tb1 = Table("test", "tb1", [Column("a", "int")])
    items, error = read_real(tmp_path, primaries, "transaction_compression.000001", r"test\..*",
                             tb1, keys={"test.tb1": ("a",)})  # fmt: skip
    assert error is None
    assert changes(items) == [("c", None, {"a": 1})]
    movies = Table("demo", "movies", [
        Column(n, "int" if n in ("id", "year") else f"varchar({MOVIE_LENGTHS.get(n, 256)})",
               nullable=False) for n in MOVIE_COLUMNS], ["id"])  # fmt: skip
    items, error = read_real(tmp_path / "b", primaries, "mysql-bin.compressed", r"demo\..*",
                             movies)  # fmt: skip
    assert error is None
    before = ONCE_UPON_A_TIME
    assert changes(items) == [("u", before, {**before, "genre": "Western|Action"})]


def test_mysql_8_0_26_invisible_columns(tmp_path: Path, primaries: list[MySQLPrimary]) -> None:
    """rust_mysql_common reads the table map's COLUMN_VISIBILITY; the rows as mariadb-binlog -v
    prints them (f1, f2, f6 INVISIBLE; f3 a signed INT, f5 a BLOB)."""
    items, error = read_real(tmp_path, primaries, "binlog-invisible-columns.000001",
                             r"myapp\..*", keys={"myapp.t1": ("f3",)})  # fmt: skip
    assert error is None
    one = {"f1": 1, "f2": 2, "f3": -3, "f4": "4", "f5": "BQ==", "f6": 6000000000}
    two = {"f1": None, "f2": None, "f3": -33, "f4": "44", "f5": "VQ==", "f6": None}
    three = {"f1": 111, "f2": 222, "f3": -333, "f4": "444", "f5": "VQ==", "f6": None}
    assert changes(items) == [("c", None, one), ("c", None, two), ("u", two, three)]


def test_mysql_8_0_22_json_generated_columns_then_a_partial_update_it_cannot_apply(
    tmp_path: Path, primaries: list[MySQLPrimary]
) -> None:
    """Six inserts and six updates whose JSON documents agree with the generated columns the
    server computed from them (name = json_col->>'$.name', age = json_col->'$.age'); then a
    PARTIAL_UPDATE_ROWS written with binlog_row_image=MINIMAL, whose before image lacks the
    document its diff applies to: the stream stops there."""
    items, error = read_real(tmp_path, primaries, "json.binlog.000001", r"myapp\..*")
    assert error is not None and "partial JSON update of column json_col of myapp.t" in str(error)
    assert "set binlog_row_image=FULL" in str(error)
    got = changes(items)
    assert [op for op, _, _ in got] == ["c"] * 6 + ["u"] * 6
    for _, before, after in got:
        for image in filter(None, (before, after)):
            doc = json.loads(image["json_col"])
            assert (doc["name"], doc["age"]) == (image["name"], image["age"])
    assert [a["age"] for _, _, a in got] == [24, 32, 40, 24, 32, 40, 25, 33, 41, 25, 33, 41]


def test_mysql_9_0_1_json_opaque_values(tmp_path: Path, primaries: list[MySQLPrimary]) -> None:
    """rust_mysql_common: JSON holding MySQL opaque values (a VARCHAR, DATE, DATETIME, TIME,
    DECIMALs), printed as MySQL prints JSON (a DECIMAL as a number)."""
    items, error = read_real(tmp_path, primaries, "json-opaque.binlog", r"foo\..*",
                             keys={"foo.test": ("a",)})  # fmt: skip
    assert error is None
    assert [json.loads(after["a"]) for _, _, after in changes(items)] == [
        {"a": "base64:type15:VQ=="}, {"b": "2012-03-18"}, {"c": "2012-03-18 11:30:45.000000"},
        {"c": "87:31:46.654321"}, {"d": 123.456}, {"e": 9.00}, {"e": [0, 1, True, False]},
        {"e": None},
    ]  # fmt: skip


def test_mysql_9_6_0_tagged_gtids(tmp_path: Path, primaries: list[MySQLPrimary]) -> None:
    """rust_mysql_common: the tagged PREVIOUS_GTIDS (uuid 55778904-…: [1, 14), mytag [1, 3))
    and the GTID_TAGGED_LOG_EVENT of uuid:mytag:3, opening an insert into test.orders."""
    orders = Table("test", "orders", [Column("id", "int"), Column("q", "int"),
                                      Column("p", "decimal(10,2)")], ["id"])  # fmt: skip
    items, error = read_real(tmp_path, primaries, "binlog_transaction_with_GTID_TAG.000001",
                             r"test\..*", orders)  # fmt: skip
    assert error is None
    uuid = "55778904-0299-11f1-b1b8-4ef0c4956feb"
    (row,) = change_rows(items)
    assert row["source"]["gtid"] == f"{uuid}:mytag:3"
    assert json.loads(row["after"]) == {"id": 3, "q": 100, "p": "250.00"}
    assert items[-1].after.gtid == f"{uuid}:1-13:mytag:1-3"


def test_mysql_8_0_40_untagged_previous_gtids(
    tmp_path: Path, primaries: list[MySQLPrimary]
) -> None:
    """rust_mysql_common: PREVIOUS_GTIDS of one uuid, [1, 3); the file holds no transaction,
    so the set shows in the position a heartbeat puts at the file's end."""
    events = served_events("binlog_transaction_previous_GTID_no_tag.000001")
    primary = MySQLPrimary(files={SERVED: events}, tables=[SEEN], version="8.0.40")
    primaries.append(primary)
    source = SourceConfig("127.0.0.1", primary.port, "cdc", "cdc-pw", (r"seen\..*",),
                          heartbeat=HeartbeatConfig(interval=0.1))  # fmt: skip
    end = end_of(events)
    items = read_while(source, BinlogOffset(SERVED, 4), tmp_path,
                       lambda got: any(i.after.pos == end for i in got))  # fmt: skip
    assert items[-1].after == BinlogOffset(SERVED, end, "b9b88c66-0755-11f1-9899-4a9da94c4d71:1-2")


@pytest.mark.parametrize(
    ("name", "capture", "stops", "before"),
    [
        ("vector.binlog", r"dtb\..*",
         "column vector_column of dtb.foo has type vector, which sparkcdc does not decode",
         ["create", "create"]),
        ("binlog_56_gtid_reserved_word.000001", r"test\..*",
         r"a change of test.GENERATED written as a statement at binlog.000001:585 \(`INSERT "
         r"INTO GENERATED VALUES \(1\), \(2\), \(3\)`\), whose rows it does not carry",
         ["create", "create"]),
        ("bug32407.001", r"test\..*",
         r"changes of test.t1 at binlog.000001:350 in a transaction that no GTID event opens.*"
         r"\(5.7.1-m11-log\)", ["create"]),
        ("rpl_unfiltered_hidden_gcol.000001", r"test\..*",
         r"3 columns for test.t but the tracked schema has 2; .*\(a functional index's hidden "
         "column", ["create", "alter"]),
    ],
    ids=["mysql-9.0.1-vector", "mysql-5.6.41-statement", "mysql-5.7.1-no-gtid-events",
         "mysql-8.0.17-relay-log-hidden-column"],
)  # fmt: skip
def test_what_sparkcdc_does_not_read_stops_the_stream_with_a_sentence(
    tmp_path: Path, primaries: list[MySQLPrimary], name: str, capture: str, stops: str,
    before: list[str],
) -> None:  # fmt: skip
    keys = {"test.t1": ("a",), "test.t": ("a",), "test.GENERATED": ("a",)}
    items, error = read_real(tmp_path, primaries, name, capture, keys=keys,
                             relay_log=name.startswith("rpl_"))  # fmt: skip
    assert error is not None and re.search(stops, str(error)), error
    assert change_rows(items) == []  # nothing of it delivered
    assert ddl_kinds(items)[1:] == before  # after the announcement: the DDL before the stop


def mariadb_binlog_rows(path: Path, db: str) -> list[tuple[str, list[str], list[str]]]:
    """(op, before values, after values) of every row of database ``db`` that ``mariadb-binlog
    -v`` prints for a file, values as it prints them (``'text'``, ``'2018-10-30 18:02:09'``,
    ``1``, ``NULL``)."""
    binary = shutil.which("mariadb-binlog") or shutil.which("mysqlbinlog")
    assert binary, "mariadb-binlog is needed (Debian's mariadb-client: scripts/setup.sh)"
    out = subprocess.run([binary, "-v", "--base64-output=DECODE-ROWS", str(path)],
                         capture_output=True, text=True, check=True).stdout  # fmt: skip
    rows: list[tuple[str, list[str], list[str]]] = []
    side: list[str] | None = None  # the image being printed (None: another database's row)
    for line in out.splitlines():
        verb = re.match(r"### (INSERT INTO|UPDATE|DELETE FROM) `([^`]*)`", line)
        if verb:
            op = {"I": "c", "U": "u", "D": "d"}[verb.group(1)[0]]
            rows.append((op, [], []))
            side = rows[-1][2] if op == "c" else rows[-1][1]
            if verb.group(2) != db:
                rows.pop()
                side = None
        elif line == "### SET" and side is not None:
            side = rows[-1][2]
        elif line.startswith("###   @") and side is not None:
            side.append(line.split("=", 1)[1])
    return rows


def as_printed(value: Any) -> str:
    """A JSON image value as mariadb-binlog -v prints it (the 5.7.20 file's types)."""
    if value is None:
        return "NULL"
    if isinstance(value, str):
        stamp = re.fullmatch(r"(\d{4}-\d\d-\d\d)T(\d\d:\d\d:\d\d)\.000000", value)
        return f"'{stamp.group(1)} {stamp.group(2)}'" if stamp else f"'{value}'"
    return str(value)


def test_mysql_5_7_20_without_checksums_reads_exactly_as_mariadb_binlog_prints_it(
    tmp_path: Path, primaries: list[MySQLPrimary]
) -> None:
    """binlog_checksum=NONE and anonymous GTID events (gtid_mode OFF): three tables created in
    the log, then every row of every transaction equal to mariadb-binlog's reading."""
    keys = {f"account_db.{t}": ("id",) for t in ("account", "refresh_token", "message")}
    items, error = read_real(tmp_path, primaries, "mysql-bin.checksum-none", r"account_db\..*",
                             keys=keys)  # fmt: skip
    assert error is None
    expected = mariadb_binlog_rows(REAL / "files" / "mysql-bin.checksum-none", "account_db")
    got = [(op, [as_printed(v) for v in (before or {}).values()],
            [as_printed(v) for v in (after or {}).values()])
           for op, before, after in changes(items)]  # fmt: skip
    assert len(got) == len(expected) == 35
    assert got == expected
    assert ddl_kinds(items).count("create") == 3


READ_HERE = {
    "mysql-enum-string-set.000001", "mysql_type_bit.000001", "minimal_row_metadata.000001",
    "time_issue.000001", "transaction_compression.000001", "mysql-bin.compressed",
    "binlog-invisible-columns.000001", "json.binlog.000001", "json-opaque.binlog",
    "binlog_transaction_with_GTID_TAG.000001", "binlog_transaction_previous_GTID_no_tag.000001",
    "vector.binlog", "binlog_56_gtid_reserved_word.000001", "bug32407.001",
    "rpl_unfiltered_hidden_gcol.000001", "mysql-bin.checksum-none",
}  # fmt: skip


def test_every_real_binlog_file_is_read_here() -> None:
    assert {p.name for p in (REAL / "files").iterdir()} == READ_HERE
