"""GTID positions of both flavours: MySQL GTID sets parsed, printed as MySQL prints them, kept
by adding transactions, and encoded as ``COM_BINLOG_DUMP_GTID`` and PREVIOUS_GTIDS carry them;
a position of the wrong flavour or shape is refused with a sentence."""

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
