"""No raw exception from any decoder: damaged binlog and pgoutput streams stop with the project's
own error, naming the event and its place (``file:pos``, ``LSN``).

The property tests mutate real streams (``tests/fuzz``: the real MySQL files of
``../shared/mysql-binlogs``, our MySQL 8 writer's, pgoutput built from the protocol's layouts)
a fixed number of times; ``scripts/fuzz.sh`` runs the coverage-guided search for longer. Below
them, each input the fuzzers found that once escaped as a raw exception (or never ended), as
bytes, with the sentence it gives now.
"""

from __future__ import annotations

import struct
import zlib

import pytest
import zstandard
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sparkcdc.core.errors import DecodeError, SourceError
from sparkcdc.sources.mysql.binlog import _packets  # type: ignore[attr-defined]
from sparkcdc.sources.mysql.binlog.compressed import inflate
from sparkcdc.sources.mysql.binlog.json_binary import BinaryJsonError, json_text
from sparkcdc.sources.mysql.binlog.packets import split_packets
from sparkcdc.sources.mysql.binlog.payload import inner_events
from sparkcdc.sources.postgres.pgoutput import messages as pm
from tests.fuzz import binlog, pgoutput
from tests.fuzz.mutate import KINDS, Mutation, mutate

BINLOG_SEEDS = binlog.seed_streams()
PG_SEEDS = [(items, pgoutput.captured_schemas(items)) for _, items in pgoutput.seed_streams()]
FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
MUTATIONS = st.lists(
    st.tuples(st.sampled_from(KINDS), st.integers(0, 1 << 20), st.integers(0, 1 << 20),
              st.integers(0, (1 << 32) - 1)),
    min_size=1, max_size=4,
)  # fmt: skip


@FUZZ
@given(seed=st.integers(0, len(BINLOG_SEEDS) - 1), mutations=MUTATIONS,
       mode=st.sampled_from(binlog.MODES), fix=st.booleans())  # fmt: skip
def test_damaged_binlog_streams_stop_with_the_projects_error(
    seed: int, mutations: list[Mutation], mode: str, fix: bool
) -> None:
    _, events = BINLOG_SEEDS[seed]
    binlog.check(mutate(events, mutations, binlog.fix_size if fix else lambda d: d), mode)


@FUZZ
@given(seed=st.integers(0, len(PG_SEEDS) - 1), mutations=MUTATIONS, typed=st.booleans())
def test_damaged_pgoutput_streams_stop_with_the_projects_error(
    seed: int, mutations: list[Mutation], typed: bool
) -> None:
    items, schemas = PG_SEEDS[seed]
    pgoutput.check(mutate(items, mutations), schemas, typed)


@pytest.mark.parametrize("mode", binlog.MODES)
def test_the_seed_streams_decode_rows(mode: str) -> None:
    """The harness decodes rows (it does not stop at the first event): our writer's streams
    read whole and put items, in every mode."""
    for name, events in BINLOG_SEEDS:
        if name.startswith("writer:"):
            reader = binlog.DecodingReader(typed=mode != "json")
            reader.read(events)
            assert reader.items > 0, name
    for items, schemas in PG_SEEDS:
        assert pgoutput.check(items, schemas, typed=mode != "json") is None


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300), st.integers(0, 300))
def test_the_compiled_packet_splitter_matches_its_python_twin(buf: bytes, start: int) -> None:
    data = bytearray(buf)
    start = min(start, len(data))
    assert _packets.split(data, start, len(data)) == split_packets(data, start, len(data))


# --------------------------------------------------------------------------- found: binlog

# MySQL 8.0.36's FORMAT_DESCRIPTION (CRC32 on), ending at 126
FDE = bytes.fromhex(
    "00f153650f010000007a0000007e00000001000400382e302e33360000000000000000000000000000000000"
    "00000000000000000000000000000000000000000000000000000000f1536513000d00080000000004000400"
    "00006200041a08000000080808020000000a0a0a2a2a001234000a2800012ba5fd58"
)
GTID = (33, "01" + "000102030405060708090a0b0c0d0e0f" + "0100000000000000")  # sid:1
BEGIN = (2, "00424547494e")  # what the reader needs of a QUERY BEGIN: its end
DECIMAL_4_2_MAP = (19, "0100000000000100017300017400 01 f6 02 0402 00")  # s.t (d DECIMAL(4,2))


def stream(*events: tuple[int, str]) -> list[bytes]:
    """FDE, a GTID and its BEGIN, then ``events`` given as (type, body in hex), each framed
    with a header at the next position of mysql-bin.000007 and a CRC32."""
    out, pos = [FDE], 126
    for etype, body in (GTID, BEGIN, *events):
        raw = bytes.fromhex(body.replace(" ", ""))
        size = 19 + len(raw) + 4
        head = struct.pack("<IBIIIH", 1_700_000_000, etype, 1, size, pos + size, 0) + raw
        out.append(head + zlib.crc32(head).to_bytes(4, "little"))
        pos += size
    return out


def stopped(events: list[bytes], mode: str) -> SourceError:
    err = binlog.check(events, mode)
    assert isinstance(err, SourceError), err
    return err


@pytest.mark.parametrize("mode", binlog.MODES)
def test_a_rows_event_naming_no_column_stops_instead_of_looping_forever(mode: str) -> None:
    # present bitmap 00: every row image was zero bytes long, so the row loop never advanced
    rows = (30, "010000000000 0100 0200 01 00 00")
    err = stopped(stream(DECIMAL_4_2_MAP, rows), mode)
    assert str(err) == (
        "at mysql-bin.000007:246 (WRITE_ROWS event): a rows event of s.t does not match its "
        "table map and schema (a row image holds no column)"
    )


@pytest.mark.parametrize("mode", binlog.MODES)
def test_a_decimal_with_more_digits_than_its_precision_stops_at_its_event(mode: str) -> None:
    # DECIMAL(4,2) 0xff 0x22: an integer part of 127, three digits where the column has two;
    # the typed images failed later in Arrow ("Decimal value does not fit in precision 4")
    err = stopped(stream(DECIMAL_4_2_MAP, (30, "010000000000 0100 0200 01 01 00 ff22")), mode)
    assert "at mysql-bin.000007:246 (WRITE_ROWS event): a rows event of s.t" in str(err)
    assert "a DECIMAL(4,2) value holds more digits than that" in str(err)


def test_a_table_map_turning_a_json_column_into_geometry_stops() -> None:
    # the same table id mapped again with type 0xff (GEOMETRY) for its JSON column: the bytes
    # were read as a geometry value, which Arrow then refused as the column's string
    json_map = "0100000000000100017300017400 01 {} 01 04 00"
    events = stream((19, json_map.format("f5")), (19, json_map.format("ff")),
                    (30, "010000000000 0100 0200 01 01 00 02000000 0400"))  # fmt: skip
    err = stopped(events, "typed-python")
    assert str(err) == (
        "at mysql-bin.000007:287 (WRITE_ROWS event): the binlog describes column c0 of s.t as "
        "type code 255 but the tracked schema says json; the schema is out of date"
    )


def test_a_previous_gtids_event_cut_short_names_itself() -> None:
    # one uuid said, its intervals cut off (the tagged layout read as the untagged one failed
    # the same way: "struct.error: unpack_from requires a buffer of at least 131 bytes")
    err = stopped(stream((35, "0100000000000000 000102030405060708090a0b0c0d0e0f 01")), "json")
    assert "PREVIOUS_GTIDS event" in str(err) and "mysql-bin.000007:203" in str(err)


def test_a_rotate_to_a_damaged_file_name_keeps_the_file() -> None:
    name = b"mysql-bin.0\xff0008".hex()
    err = stopped(stream((4, "0400000000000000" + name)), "json")
    assert isinstance(err, DecodeError)
    assert str(err).startswith(
        "the ROTATE event at mysql-bin.000007:203 cannot be decoded (ValueError: a binlog file "
        "name holds bytes no file name has: 'mysql-bin.0\ufffd0008'); the stream stops here"
    )
    assert err.fields == {"event": "ROTATE event", "file": "mysql-bin.000007", "pos": 203}


def test_an_event_longer_or_shorter_than_its_header_says_stops() -> None:
    events = stream((16, "0700000000000000"))
    events[-1] = events[-1][:-2]
    err = stopped(events, "json")
    assert str(err) == (
        "at mysql-bin.000007:203 (XID event): its header says it is 31 bytes long but 29 bytes "
        "came; the binlog or the connection damaged it"
    )


def test_binary_json_nested_past_mysqls_depth_is_refused() -> None:
    # 2000 small arrays each holding the next (count, size, the entry at offset 7): a
    # RecursionError's worth of nesting, in 14 kB
    inner = struct.pack("<HH", 0, 4)  # an empty array at the bottom
    for _ in range(2000):
        inner = struct.pack("<HHBH", 1, 7 + len(inner), 2, 7) + inner
    with pytest.raises(BinaryJsonError, match="nests deeper than 100"):
        json_text(b"\x02" + inner)


def test_a_compressed_transaction_never_inflates_past_its_declared_size() -> None:
    frame = zstandard.ZstdCompressor(write_content_size=False).compress(bytes(1 << 22))
    body = bytes([2, 1, 0, 3, 4, 0xFE]) + (64).to_bytes(8, "little")  # zstd, 64 bytes declared
    body += bytes([1, 4, 0xFD]) + len(frame).to_bytes(3, "little") + bytes([0]) + frame
    with pytest.raises(SourceError, match=r"does not inflate \(it inflates past the 64 bytes"):
        inner_events(body, 0, len(body), "mysql-bin.000007:4")


def test_a_mariadb_compressed_record_never_inflates_past_its_declared_size() -> None:
    record = bytes([0x81, 16]) + zlib.compress(bytes(1 << 20))  # says 16 bytes
    with pytest.raises(SourceError, match="1 bytes inflated where it says 16|17 bytes"):
        inflate(record, 166)


# --------------------------------------------------------------------------- found: pgoutput


def read_pg(payloads: list[bytes], typed: bool = False) -> SourceError:
    items = pgoutput.xlog_items(payloads)
    err = pgoutput.check(items, PG_SEEDS[0][1], typed)
    assert isinstance(err, SourceError), err
    return err


def test_a_begin_with_an_lsn_past_any_a_server_writes_stops() -> None:
    # it became the offset, and building the batch failed: OverflowError: int too big
    begin = bytes.fromhex("42 ffffffffffff0000 0000000000000000 000002bc".replace(" ", ""))
    err = read_pg([begin])
    assert isinstance(err, pm.PgoutputError)
    assert str(err).startswith(
        "pgoutput message 'B' at LSN 0/16B3748 is truncated or malformed (PgoutputError: its "
        "LSN FFFFFFFF/FFFF0000 lies past any a server writes); the stream stops here"
    )
    assert err.fields == {"event": "pgoutput Begin message ('B')", "lsn": "0/16B3748"}


def test_a_row_with_more_values_than_its_table_has_columns_stops() -> None:
    # the extra value was dropped without a word (the JSON images zip the columns)
    err = read_pg(
        [
            pgoutput.begin(0x16B4000, 700),
            pgoutput.relation(16401, "narrow", pgoutput.NARROW),
            bytes.fromhex("49 00004011 4e 0003 74000000013174000000016174000000017a"),
        ]
    )
    assert str(err) == (
        "at LSN 0/16B3798 (pgoutput Insert message ('I')): pgoutput sent 3 values for the 2 "
        "columns of public.narrow; the stream stops rather than guess which is which."
    )


def test_an_item_shorter_than_its_xlogdata_header_stops() -> None:
    items = pgoutput.xlog_items([pgoutput.begin(0x16B4000, 700)])
    err = pgoutput.check([items[0][:12]], PG_SEEDS[0][1], typed=False)
    assert isinstance(err, DecodeError)
    assert str(err).startswith("pgoutput message type (empty) at LSN 0/16B3748 is unknown;")


def test_values_of_a_type_the_stream_cannot_map_stop_when_their_item_is_built() -> None:
    # a Relation adding a column of an OID nobody maps: typed images failed in Arrow later
    columns = [*pgoutput.NARROW, (0, "x", 99999, -1)]
    err = read_pg([pgoutput.begin(0x16B4000, 700), pgoutput.relation(16401, "narrow", columns),
                   pgoutput.insert(16401, ["1", "a", "?"]), pgoutput.commit(0x16B4000, 0x16B4100)],
                  typed=True)  # fmt: skip
    assert isinstance(err, DecodeError)
    assert str(err).startswith(
        "the changes of public.narrow at source.position 0000000000:0023805952:0000000001:"
    )
    assert "ValueError: column 'x' has type 'oid:99999', which sparkcdc does not map" in str(err)


def test_a_relation_message_is_placed_at_its_transactions_commit_lsn() -> None:
    # found by the fault campaign: pgoutput writes a Relation message with walStart 0 (it is not
    # the last write of its change), and a failure while judging it was placed "at LSN 0/0"
    items = pgoutput.xlog_items(
        [pgoutput.begin(0x16B4000, 700), pgoutput.relation(16402, "other", pgoutput.NARROW)]
    )
    items[1] = items[1][:1] + bytes(16) + items[1][17:]  # walStart and walEnd 0
    err = pgoutput.check(items, PG_SEEDS[0][1], typed=False)
    assert isinstance(err, SourceError)
    assert str(err).startswith(
        "at LSN 0/16B4000 (pgoutput Relation message ('R')): public.other matches source.tables "
        "but was not captured"
    )
    assert err.fields["lsn"] == "0/16B4000"
