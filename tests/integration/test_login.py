"""Logins against a real MariaDB: a user with MariaDB's ed25519 plugin on the catalog and the
replication connection, and a wrong ed25519 password refused with a sentence."""

from __future__ import annotations

from dataclasses import replace

import pytest

from sparkcdc.core.errors import ConnectionFailed
from sparkcdc.sources.mysql.binlog.auth import ed25519_signature
from sparkcdc.sources.mysql.binlog.dump import open_dump
from sparkcdc.sources.mysql.server.catalog import MySQLCatalog
from sparkcdc.sources.mysql.throwaway import ThrowawayMariaDB

pytestmark = pytest.mark.mariadb


@pytest.fixture
def ed25519_user(mariadb: ThrowawayMariaDB) -> str:
    installed = mariadb.query(
        "SELECT COUNT(*) FROM information_schema.PLUGINS WHERE PLUGIN_NAME = 'ed25519'"
    )[0][0]
    if not installed:
        mariadb.execute("INSTALL SONAME 'auth_ed25519'")
    mariadb.execute(
        "DROP USER IF EXISTS cdc_ed",
        "CREATE USER cdc_ed IDENTIFIED VIA ed25519 USING PASSWORD('s3cret-x')",
        "GRANT SELECT, RELOAD, REPLICATION SLAVE, BINLOG MONITOR ON *.* TO cdc_ed",
    )
    return "cdc_ed"


def test_an_ed25519_user_logs_in_on_every_connection(
    mariadb: ThrowawayMariaDB, ed25519_user: str
) -> None:
    source = replace(mariadb.source_config(r"x\..*"), user=ed25519_user, password="s3cret-x")
    with MySQLCatalog.of(source) as catalog:
        assert catalog.query("SELECT CURRENT_USER()")[0][0].startswith("cdc_ed@")
    conn, events = open_dump(source, 4301, "", 4, "0-1-0")
    try:
        assert next(events)  # logged in, and the dump streams
    finally:
        conn.close()
    wrong = replace(source, password="s3cret")
    with pytest.raises(ConnectionFailed, match="refused user 'cdc_ed'.*source.password"):
        open_dump(wrong, 4302, "", 4, "0-1-0")


def test_the_ed25519_answer_is_a_signature_of_the_scramble() -> None:
    from nacl.signing import VerifyKey

    from sparkcdc.sources.mysql.binlog import auth

    scramble = bytes(range(32))
    signature = ed25519_signature("pw", scramble)
    digest = auth.hashlib.sha512(b"pw").digest()
    scalar = bytearray(digest[:32])
    scalar[0] &= 248
    scalar[31] = scalar[31] & 127 | 64
    public = auth.sodium.crypto_scalarmult_ed25519_base_noclamp(bytes(scalar))
    assert VerifyKey(public).verify(scramble, signature) == scramble
