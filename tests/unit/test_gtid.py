"""GTID positions of both flavours: MySQL GTID sets (tagged ones of MySQL 8.3+ too) parsed,
printed as MySQL prints them, kept by adding transactions, and encoded as
``COM_BINLOG_DUMP_GTID`` and PREVIOUS_GTIDS carry them, checked against the bytes real MySQL
8.0.40 and 9.6.0 servers wrote; a position of the wrong flavour or shape is refused with a
sentence."""

from __future__ import annotations

import struct
import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sparkcdc.core.errors import ConfigError
from sparkcdc.sources.mysql.binlog.dump import _flavoured_gtid
from sparkcdc.sources.mysql.binlog.gtid import (
    GtidSet,
    check_gtid,
    format_mariadb_gtid,
    parse_mariadb_gtid,
)
from sparkcdc.sources.mysql.binlog.serialized import parse_tagged_gtid, read_varlen, varlen
from tests.cases.mysql8.real import file_bytes, split_file

A = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
B = "4f22fb58-82db-22f2-af44-d91bba53a673"


def test_a_set_reads_and_prints_as_mysql_does() -> None:
    text = f"{B}:1-7, {A.upper()}:1-100:105:107-109"
    gset = GtidSet.parse(text)
    assert gset.text() == f"{A}:1-100:105:107-109,{B}:1-7"
    assert (A, 105) in gset and (A, 104) not in gset and (B, 8) not in gset
    for gno in (101, 102, 103, 104, 106):
        gset.add(A, gno)
    assert gset.text() == f"{A}:1-109,{B}:1-7"
    assert GtidSet.parse(f"{A}:1-3,{A}:4-9").text() == f"{A}:1-9"
    assert GtidSet().text() == ""


def test_the_dump_and_previous_gtids_encoding() -> None:
    gset = GtidSet.parse(f"{A}:1-5:8")
    sid = uuid.UUID(A).bytes
    expected = struct.pack("<Q", 1) + sid + struct.pack("<Qqqqq", 2, 1, 6, 8, 9)
    assert gset.encoded() == expected
    assert GtidSet.decode(b"xx" + expected, 2).text() == gset.text()


@given(st.lists(st.tuples(st.sampled_from([A, B]), st.integers(1, 60)), max_size=80))
def test_adding_transactions_keeps_the_set_of_exactly_those(added: list[tuple[str, int]]) -> None:
    gset, seen = GtidSet(), set()
    for sid, gno in added:
        text = gset.add_new(sid, gno)
        assert (text is not None) == ((sid, gno) not in seen)
        assert text is None or text == gset.text()
        seen.add((sid, gno))
    assert {(s, n) for s in (A, B) for n in range(1, 61) if (s, n) in gset} == set(added)
    again = GtidSet.parse(gset.text())
    assert again.text() == gset.text()
    assert GtidSet.decode(gset.encoded(), 0).text() == gset.text()


def test_mariadb_positions_and_what_is_refused() -> None:
    assert parse_mariadb_gtid("0-1-5, 2-3-9") == {0: (1, 5), 2: (3, 9)}
    assert format_mariadb_gtid({2: (3, 9), 0: (1, 5)}) == "0-1-5,2-3-9"
    assert check_gtid(f" {A}:1-5 ") == f"{A}:1-5"
    for bad in ("0-1", f"{A}:0-3", f"{A}:5-2", "not-a-uuid:1-3", f"{A}"):
        with pytest.raises(ConfigError, match="neither a MariaDB GTID position .* MySQL GTID set"):
            check_gtid(bad)
    with pytest.raises(ConfigError, match="not a MySQL GTID position, and the server is MySQL"):
        _flavoured_gtid("0-1-5", False, "8.0.36")
    with pytest.raises(ConfigError, match="not a MariaDB GTID position, and the server is Mar"):
        _flavoured_gtid(f"{A}:1-5", True, "10.11.6-MariaDB")


T = "55778904-0299-11f1-b1b8-4ef0c4956feb"  # the source of MySQL 9.6.0's tagged binlog


def test_tagged_sets_read_and_print_as_mysql_8_4_does() -> None:
    gset = GtidSet.parse(f"{B}:1-3, {A}:Blue:4-6:2:red:1,{A}:1-9:blue:1")
    assert gset.text() == f"{A}:1-9:blue:1-2:4-6:red:1,{B}:1-3"
    assert gset.tagged and not GtidSet.parse(f"{A}:1-9").tagged
    assert (f"{A}:blue", 5) in gset and (f"{A}:blue", 3) not in gset and (A, 5) in gset
    assert gset.add_new(f"{A}:red", 2) == f"{A}:1-9:blue:1-2:4-6:red:1-2,{B}:1-3"
    assert gset.add_new(f"{A}:red", 2) is None
    only = GtidSet.parse(f"{A}:_x9:3")
    assert only.add_new(f"{A}:_x9", 4) == f"{A}:_x9:3-4"  # one interval: its own fast text
    assert check_gtid(f"{A.upper()}:MyTag:1-5") == f"{A}:mytag:1-5"
    long_tag = "t" * 33
    for bad in (f"{A}:blue", f"{A}:1-3:blue", f"{A}:blue:red:1", f"{A}:9lives:1",
                f"{A}:{long_tag}:1", f"{A}:bl-ue:1"):  # fmt: skip
        with pytest.raises(ConfigError, match="neither a MariaDB GTID position"):
            check_gtid(bad)


def test_a_tagged_set_encodes_in_mysqls_tagged_format() -> None:
    gset = GtidSet.parse(f"{A}:1-2:ab:5")
    sid = uuid.UUID(A).bytes
    assert gset.encoded() == (
        b"\x01" + (2).to_bytes(6, "little") + b"\x01"  # format 1, 2 sources, format 1
        + sid + b"\x00" + struct.pack("<Qqq", 1, 1, 3)  # untagged: tag length 0
        + sid + bytes([2 << 1]) + b"ab" + struct.pack("<Qqq", 1, 5, 6)
    )  # fmt: skip
    assert GtidSet.decode(gset.encoded(), 0).text() == gset.text()
    assert GtidSet.parse(f"{A}:1-2").encoded()[:8] == struct.pack("<Q", 1)  # untagged as ever
    for bad, why in ((b"\x02" + bytes(6) + b"\x02", "format byte is 2"),
                     (gset.encoded()[:-3], "ends within the 1 intervals"),
                     (gset.encoded()[:30], "ends where an interval count is")):  # fmt: skip
        with pytest.raises(ValueError, match=why):
            GtidSet.decode(bad, 0)


def test_real_previous_gtids_of_mysql_8_0_40_and_9_6_read_to_the_byte() -> None:
    """PREVIOUS_GTIDS as MySQL wrote them: 8.0.40's untagged one and 9.6.0's tagged one (the
    values rust_mysql_common's tests assert: one source [1, 3); the untagged [1, 14) and tag
    mytag [1, 3) of one uuid)."""
    for name, text in (("binlog_transaction_previous_GTID_no_tag.000001",
                        "b9b88c66-0755-11f1-9899-4a9da94c4d71:1-2"),
                       ("binlog_transaction_with_GTID_TAG.000001",
                        f"{T}:1-13:mytag:1-2")):  # fmt: skip
        (event,) = [e for e in split_file(file_bytes(name)) if e[4] == 35]  # fmt: skip
        body = event[19:-4]
        gset = GtidSet.decode(body, 0, len(body))
        assert gset.text() == text
        assert gset.encoded() == body  # and the project writes them as MySQL does


def test_a_real_tagged_gtid_event_reads_as_its_source_tag_and_number() -> None:
    """MySQL 9.6.0's GTID_TAGGED_LOG_EVENT: uuid 55778904-…, tag mytag, gno 3 (rust_mysql_common's
    assertion); a cut or malformed message is a ValueError naming what is wrong."""
    (event,) = [e for e in split_file(file_bytes("binlog_transaction_with_GTID_TAG.000001"))
                if e[4] == 42]  # fmt: skip
    found = parse_tagged_gtid(event, 19, len(event) - 4)
    assert (str(uuid.UUID(bytes=found.sid)), found.tag, found.gno) == (T, "mytag", 3)
    for end, why in ((20, "data ends there"), (60, "message says it holds 60 bytes")):
        with pytest.raises(ValueError, match=why):
            parse_tagged_gtid(event, 19, end)


@given(st.integers(0, 2**64 - 1))
def test_variable_length_integers_read_back(n: int) -> None:
    data = b"\xaa" + varlen(n) + b"\xbb"
    assert read_varlen(data, 1, len(data) - 1) == (n, len(data) - 1)
    assert len(varlen(n)) == next((k for k in range(1, 9) if n < 1 << 7 * k), 9)


@given(st.lists(st.tuples(st.sampled_from([A, B, f"{A}:x", f"{A}:_y", f"{B}:x"]),
                          st.integers(1, 40)), max_size=60))  # fmt: skip
def test_tagged_sets_keep_exactly_their_transactions(added: list[tuple[str, int]]) -> None:
    gset = GtidSet()
    for sid, gno in added:
        gset.add_new(sid, gno)
    sources = (A, B, f"{A}:x", f"{A}:_y", f"{B}:x")
    assert set(added) == {(s, n) for s in sources for n in range(1, 41) if (s, n) in gset}
    assert GtidSet.parse(gset.text()).text() == gset.text()
    assert GtidSet.decode(gset.encoded(), 0).text() == gset.text()


def test_a_tagged_start_is_refused_by_a_server_without_tags() -> None:
    with pytest.raises(ConfigError, match="holds tagged GTIDs .* which MySQL 8.0.36 does not know"):
        _flavoured_gtid(f"{A}:t:1-5", False, "8.0.36")
    assert _flavoured_gtid(f"{A}:T:1-5", False, "8.4.3") == f"{A}:t:1-5"
