"""The PostgreSQL wire client's pieces without a server: LSNs, SCRAM-SHA-256 against RFC 7677's
test vector, SASLprep, MD5, message framing and parsing, the error table, the slot command's
two syntaxes, and the replication stream's splitting over a socket pair fed in small pieces."""

from __future__ import annotations

import hashlib
import socket
import struct
import threading
import time

import pytest

from sparkcdc.core.errors import (
    ConnectionFailed,
    LogNotReady,
    LogPositionGone,
    MissingPrivilege,
    SourceError,
)
from sparkcdc.sources.postgres.wire import messages as m
from sparkcdc.sources.postgres.wire.auth import ScramSha256, md5_password, saslprep
from sparkcdc.sources.postgres.wire.connection import PgConnection
from sparkcdc.sources.postgres.wire.errors import PgError, pg_error
from sparkcdc.sources.postgres.wire.lsn import format_lsn, parse_lsn
from sparkcdc.sources.postgres.wire.replication import publication_names, slot_command
from sparkcdc.sources.postgres.wire.stream import XLOG_HEADER, ReplicationStream, unpack_xlog

# -- LSNs ---------------------------------------------------------------------------------------


def test_lsn_text() -> None:
    assert parse_lsn("16/B374D848") == 0x16B374D848
    assert parse_lsn("0/0") == 0 and parse_lsn(" 0/16b3748 ") == 0x16B3748
    assert format_lsn(0x16B374D848) == "16/B374D848"
    assert format_lsn(0) == "0/0"
    assert format_lsn((1 << 64) - 1) == "FFFFFFFF/FFFFFFFF"
    for lsn in (1, 0xFFFFFFFF, 1 << 32, 0x0123456789ABCDEF):
        assert parse_lsn(format_lsn(lsn)) == lsn


@pytest.mark.parametrize("text", ["", "16", "16/", "/1", "G/1", "1/123456789", "+1/2", "1_0/2"])
def test_lsn_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="not a log sequence number"):
        parse_lsn(text)


def test_lsn_range() -> None:
    for lsn in (-1, 1 << 64):
        with pytest.raises(ValueError):
            format_lsn(lsn)


# -- logins -------------------------------------------------------------------------------------

RFC_SERVER_FIRST = (
    b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
)


def test_scram_sha_256_rfc_7677_vector() -> None:
    scram = ScramSha256("pencil", user="user", nonce="rOprNGfwEbeRWgbNEkqO")
    assert scram.client_first() == b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
    assert scram.client_final(RFC_SERVER_FIRST) == (
        b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
        b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
    )
    scram.verify(b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")
    with pytest.raises(ValueError, match="signature is wrong"):
        scram.verify(b"v=7rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")
    with pytest.raises(ValueError, match="error invalid-proof"):
        scram.verify(b"e=invalid-proof")


def test_scram_as_postgresql_speaks_it() -> None:
    scram = ScramSha256("pencil")
    first = scram.client_first()
    assert first.startswith(b"n,,n=,r=") and len(first) == len(b"n,,n=,r=") + 24
    with pytest.raises(ValueError, match="does not extend ours"):
        scram.client_final(b"r=someone-else,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096")
    with pytest.raises(ValueError, match="lacks a salt"):
        scram.client_final(b"r=" + scram.nonce.encode() + b"x,i=4096")
    with pytest.raises(ValueError, match="signature is wrong"):
        scram.verify(b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")  # before any proof


def test_saslprep() -> None:
    assert saslprep("pencil") == "pencil"
    assert saslprep("tab\there") == "tab\there"  # ASCII is left alone, as PostgreSQL does
    assert saslprep("I\u00adX") == "IX"  # soft hyphen maps to nothing
    assert saslprep("\u2168") == "IX"  # NFKC
    assert saslprep("a\u00a0b\u00e9") == "a b\u00e9"  # a non-ASCII space becomes a space
    assert saslprep("\u00e9\u0007") == "\u00e9\u0007"  # prohibited: the password as it is
    assert saslprep("\u0627\u0031") == "\u0627\u0031"  # bidi rule broken: as it is


def test_md5_password() -> None:
    # PostgreSQL stores md5(password + user): "md53175bce1d3201d16594cebf9d7eb3f9d" for
    # postgres/postgres; the login answer hashes that hex with the salt
    salt = b"\x01\x02\x03\x04"
    expected = hashlib.md5(b"3175bce1d3201d16594cebf9d7eb3f9d" + salt).hexdigest().encode()
    assert md5_password("postgres", "postgres", salt) == b"md5" + expected


# -- messages -----------------------------------------------------------------------------------


def test_frontend_messages() -> None:
    assert m.startup_message({"user": "u", "database": "d"}) == (
        b"\0\0\0\x1b\0\x03\0\0user\0u\0database\0d\0\0"
    )
    assert m.query_message("SELECT 1") == b"Q\0\0\0\x0dSELECT 1\0"
    assert m.password_message(b"pw") == b"p\0\0\0\x07pw\0"
    assert m.sasl_initial_response("SCRAM-SHA-256", b"abc") == (
        b"p\0\0\0\x19SCRAM-SHA-256\0\0\0\0\x03abc"
    )
    assert m.sasl_response(b"xy") == b"p\0\0\0\x06xy"
    assert m.copy_data(b"r") == b"d\0\0\0\x05r"
    assert m.COPY_DONE == b"c\0\0\0\x04" and m.TERMINATE == b"X\0\0\0\x04"


def test_backend_messages() -> None:
    error = m.parse_error(
        b'SERROR\0VERROR\0C42704\0Mreplication slot "s" does not exist\0Dmore\0Hdo this\0'
        b"Fslot.c\0L1\0\0"
    )
    assert error == m.ServerError("ERROR", "42704", 'replication slot "s" does not exist',
                                  "more", "do this")  # fmt: skip
    assert m.parse_parameter_status(b"server_version\x0015.8 (Debian)\0") == (
        "server_version",
        "15.8 (Debian)",
    )
    assert m.parse_backend_key(b"\0\0\x01\0\x12\x34\x56\x78") == (256, b"\x12\x34\x56\x78")
    row = b"\0\x03" + b"\0\0\0\x01" + b"7" + b"\xff\xff\xff\xff" + b"\0\0\0\x03" + "zë".encode()
    assert m.parse_data_row(row) == ("7", None, "zë")
    column = b"id\0" + struct.pack(">IhIhih", 16384, 1, 23, 4, -1, 0)
    column2 = b"name\0" + struct.pack(">IhIhih", 16384, 2, 25, -1, -1, 0)
    assert m.parse_row_description(b"\0\x02" + column + column2) == [("id", 23), ("name", 25)]
    assert m.parse_command_complete(b"INSERT 0 3\0") == "INSERT 0 3"


def test_reader_joins_pieces_and_grows() -> None:
    ours, theirs = socket.socketpair()
    with ours, theirs:
        reader = m.MessageReader(ours, "PostgreSQL at test", bufsize=16)
        big = b"x" * 100
        data = b"Z\0\0\0\x05I" + b"d" + struct.pack(">I", 104) + big + b"C\0\0\0\x0bSELECT\0"
        for i in range(0, len(data), 3):
            theirs.sendall(data[i : i + 3])
        assert reader.read() == (ord("Z"), b"I")
        assert reader.read() == (ord("d"), big)
        assert reader.read() == (ord("C"), b"SELECT\0")
        theirs.close()
        with pytest.raises(ConnectionFailed, match="closed the connection"):
            reader.read()


@pytest.mark.parametrize("size", [0, 3, m.MAX_MESSAGE + 1, 0xFFFFFFFF])
def test_reader_refuses_a_length_no_server_sends(size: int) -> None:
    """A damaged length word is a connection out of step: one sentence, not a read of
    gigabytes nor a loop on a message of no length."""
    ours, theirs = socket.socketpair()
    with ours, theirs:
        reader = m.MessageReader(ours, "PostgreSQL at test", bufsize=16)
        theirs.sendall(b"d" + struct.pack(">I", size) + b"xyz")
        with pytest.raises(ConnectionFailed, match="whose length word says .* out of step"):
            reader.read()
        assert len(reader.buf) == 16


def test_stream_refuses_a_length_no_server_sends() -> None:
    ours, theirs = socket.socketpair()
    with ours, theirs:
        stream = stream_on(ours)
        sender = feed(theirs, xlog(0x200, b"B" * 30) + b"d\0\0\0\x02" + b"\0" * 40, 64)
        with pytest.raises(ConnectionFailed, match="out of step"):
            list(stream.batches(wait=None))
        sender.join()


# -- errors -------------------------------------------------------------------------------------

W = "PostgreSQL at db:5432"
CASES = [
    ("28P01", 'password authentication failed for user "cdc"', "", ConnectionFailed,
     "refused user 'cdc'"),
    ("28000", 'role "cdc" does not exist', "", ConnectionFailed, "refused user 'cdc'"),
    ("28000", 'no pg_hba.conf entry for host "10.0.0.1", user "cdc", database "shop"', "",
     ConnectionFailed, "has no pg_hba.conf line"),
    ("42501", "must be superuser or replication role to start walsender", "", MissingPrivilege,
     'ALTER ROLE "cdc" WITH REPLICATION'),
    ("42501", "permission denied to start WAL sender",
     "Only roles with the REPLICATION attribute may start a WAL sender process.",
     MissingPrivilege, 'ALTER ROLE "cdc" WITH REPLICATION'),
    ("3D000", 'database "shop" does not exist', "", ConnectionFailed, "check source.database"),
    ("53300", "number of requested standby connections exceeds max_wal_senders (currently 1)",
     "", ConnectionFailed, "raise max_wal_senders"),
    ("42704", 'replication slot "s1" does not exist', "", SourceError,
     'replication slot "s1" does not exist on PostgreSQL at db:5432; create it'),
    ("42704", 'publication "p" does not exist', "", SourceError, "has no such publication"),
    ("55006", 'replication slot "s1" is active for PID 4242', "", SourceError,
     "is held by another process"),
    ("55000", "logical decoding requires wal_level >= logical", "", LogNotReady,
     "set wal_level = logical"),
    ("55000", 'cannot read from logical replication slot "s1"',
     "This slot has been invalidated because it exceeded the maximum reserved size.",
     LogPositionGone, "(This slot has been invalidated because it exceeded the maximum "
     "reserved size); drop the slot"),
    ("58P01", 'requested WAL segment 000000010000000000000003 has already been removed', "",
     LogPositionGone, "has already removed WAL that replication slot \"s1\" needs"),
    ("53400", "all replication slots are in use", "", SourceError,
     "raise max_replication_slots"),
    ("42710", 'replication slot "s1" already exists', "", SourceError, "choose another slot"),
]  # fmt: skip


@pytest.mark.parametrize(("code", "message", "detail", "kind", "says"), CASES)
def test_error_table(
    code: str, message: str, detail: str, kind: type[SourceError], says: str
) -> None:
    server = m.ServerError("ERROR", code, message, detail, "")
    err = pg_error(server, W, user="cdc", database="shop", slot="s1")
    assert type(err) is kind and says in str(err)
    text = str(err)
    assert text.endswith(".") and text.count("; ") == 1 and "\n" not in text
    assert err.fields["sqlstate"] == code and err.fields["server_message"] == message


def test_tls_refusals_name_source_tls() -> None:
    """Clear text refused: the sentence names source.tls only where it was disabled (a server
    without a matching line says "no encryption" to every clear-text login)."""
    clear = m.ServerError("FATAL", "28000", 'no pg_hba.conf entry for host "10.0.0.1", user '
                          '"cdc", database "shop", no encryption')  # fmt: skip
    off = pg_error(clear, W, user="cdc", database="shop", tls_off=True)
    assert "in without TLS" in str(off) and "source.tls is disabled; set source.tls" in str(off)
    assert "source.tls" not in str(pg_error(clear, W, user="cdc", database="shop"))
    cert = m.ServerError("FATAL", "28000", "connection requires a valid client certificate")
    err = pg_error(cert, W, user="cdc", database="shop")
    assert type(err) is ConnectionFailed
    assert str(err) == (
        "PostgreSQL at db:5432 asks user 'cdc' for a client certificate (connection requires a "
        "valid client certificate); set source.tls's cert and key to a certificate signed by a "
        "CA the server trusts (its ssl_ca_file)."
    )
    assert str(off).count("; ") == str(err).count("; ") == 1


def test_error_fallback() -> None:
    err = pg_error(
        m.ServerError("ERROR", "42P01", 'relation "t" does not exist', "", "Create it."),
        W,
        statement="SELECT * FROM t",
    )
    assert isinstance(err, PgError) and err.sqlstate == "42P01" and err.hint == "Create it."
    assert str(err) == (
        'PostgreSQL at db:5432 rejected `SELECT * FROM t` (relation "t" does not exist; hint: '
        "Create it); fix what the server names."
    )


# -- replication commands and the stream --------------------------------------------------------


def test_slot_command_syntax() -> None:
    assert slot_command("s", "pgoutput", "export", False, 150008) == (
        'CREATE_REPLICATION_SLOT "s" LOGICAL "pgoutput" (SNAPSHOT \'export\')'
    )
    assert slot_command('a"b', "pgoutput", "nothing", True, 140011) == (
        'CREATE_REPLICATION_SLOT "a""b" TEMPORARY LOGICAL "pgoutput" NOEXPORT_SNAPSHOT'
    )
    assert slot_command("s", "pgoutput", "use", False, 100000).endswith(" USE_SNAPSHOT")
    assert publication_names("a", 'B"c') == '"a","B""c"'


def xlog(lsn: int, payload: bytes) -> bytes:
    return m.copy_data(b"w" + struct.pack(">QQQ", lsn, lsn, 0) + payload)


def keepalive(wal_end: int, reply: bool) -> bytes:
    return m.copy_data(b"k" + struct.pack(">QqB", wal_end, 0, reply))


def stream_on(sock: socket.socket) -> ReplicationStream:
    """A stream on one end of a socket pair: a PgConnection as a started one would be."""
    conn = PgConnection.__new__(PgConnection)
    conn.where, conn.user, conn.database, conn.replication = "PostgreSQL at test", "u", "d", True
    conn.sock, conn.status, conn.parameters, conn.columns = sock, "I", {}, []
    conn.reader = m.MessageReader(sock, conn.where, bufsize=64)
    return ReplicationStream(conn, "s1", 0x100, status_interval=60)


def feed(sock: socket.socket, data: bytes, piece: int) -> threading.Thread:
    def run() -> None:
        for i in range(0, len(data), piece):
            sock.sendall(data[i : i + piece])
            time.sleep(0.0005)

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def test_stream_splits_messages_fed_in_pieces() -> None:
    payloads = [b"B" + b"1" * 20, b"I" + b"2" * 200, b"C" + b"3" * 25]
    data = (
        xlog(0x200, payloads[0])
        + keepalive(0x900, reply=True)
        + xlog(0x300, payloads[1])
        + b"N\0\0\0\x0dSNOTICE\0\0"
        + xlog(0x400, payloads[2])
        + m.COPY_DONE
    )
    ours, theirs = socket.socketpair()
    with ours, theirs:
        stream = stream_on(ours)
        stream.confirm(0x250)
        stream.confirm(0x240)  # never back
        sender = feed(theirs, data, 7)
        items = [item for batch in stream.batches(wait=None) for item in batch]
        sender.join()
        assert [unpack_xlog(item) for item in items] == [
            (0x200, 0x200, payloads[0]),
            (0x300, 0x300, payloads[1]),
            (0x400, 0x400, payloads[2]),
        ]
        assert bytes(item[XLOG_HEADER] for item in items) == b"BIC"
        assert stream.server_wal_end == 0x900
        reply = theirs.recv(100)  # the keepalive's answer: the confirmed position, no more
        kind, size, sub, write, flush, apply, _, _ = struct.unpack(">cIcQQQqB", reply)
        assert (kind, size, sub) == (b"d", 38, b"r")
        assert write == flush == apply == 0x250


def test_stream_error_comes_after_the_items_before_it() -> None:
    error = b'SERROR\0VERROR\0C55000\0Mcannot read from logical replication slot "s1"\0'
    error += b"DThis slot has been invalidated because it exceeded the maximum reserved size.\0\0"
    data = xlog(0x200, b"B" * 30) + b"E" + struct.pack(">I", 4 + len(error)) + error
    data += b"Z\0\0\0\x05I"
    ours, theirs = socket.socketpair()
    with ours, theirs:
        stream = stream_on(ours)
        sender = feed(theirs, data, 5)
        batches = stream.batches(wait=None)
        assert [item[XLOG_HEADER] for item in next(batches)] == [ord("B")]
        with pytest.raises(LogPositionGone, match='replication slot "s1" on PostgreSQL at test'):
            next(batches)
        sender.join()
        assert stream.conn.status == "I"
