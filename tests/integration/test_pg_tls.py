"""``source.tls`` on every PostgreSQL connection, against a real server the module starts with
``ssl=on``, a certificate signed by a CA the test makes, and ``hostssl`` lines only in
pg_hba.conf (one user must also show a client certificate of that CA, ``clientcert=verify-ca``),
and against the session's server without TLS.

Each connection kind's encryption is read from the server's ``pg_stat_ssl``: the catalog's
session, the exported snapshot's replication connection, a snapshot chunk reader's COPY (in
that snapshot) and the log reader's replication stream (with a change streamed through it).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import psycopg2
import pytest

from sparkcdc.config.model import SourceConfig, TlsConfig
from sparkcdc.core.errors import ConnectionFailed
from sparkcdc.sources.postgres.chunks.copy import text_columns
from sparkcdc.sources.postgres.chunks.dialect import PostgresChunks
from sparkcdc.sources.postgres.chunks.export import ExportedSnapshot
from sparkcdc.sources.postgres.server.catalog import PostgresCatalog
from sparkcdc.sources.postgres.settings import PostgresSettings
from sparkcdc.sources.postgres.throwaway import ServerTls, ThrowawayPostgres
from sparkcdc.sources.postgres.wire import PgConnection
from sparkcdc.sources.registry import open_source
from sparkcdc.store.ring import EventStore
from tests.cases.tls import make_certificates, make_client_certificate

pytestmark = pytest.mark.postgres

DATABASE = "shop"
CERT_USER = "certuser"  # pg_hba.conf asks this user for a client certificate
HBA = f"""\
local    all          all                   trust
local    replication  all                   trust
hostssl  all          {CERT_USER}  127.0.0.1/32  scram-sha-256  clientcert=verify-ca
hostssl  all          all          127.0.0.1/32  scram-sha-256
hostssl  replication  all          127.0.0.1/32  scram-sha-256
"""
ENCRYPTING = ["preferred", "required", "verify-ca", "verify-identity"]
OWN_SSL = "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()"


class Secure:
    """The module's TLS-only server and the certificates the test made."""

    def __init__(self, server: ThrowawayPostgres, folder: Path) -> None:
        self.server, self.folder = server, folder
        self.ca = folder / "ca.pem"

    def source(self, mode: str, *, host: str = "127.0.0.1", slot: str = "tls") -> SourceConfig:
        settings = PostgresSettings(database=DATABASE, slot=slot, publication="tls_pub")
        return SourceConfig(
            host, self.server.port, self.server.user, self.server.password, (r"public\.t",),
            type="postgres", connect_timeout=5, settings=settings,
            tls=TlsConfig(mode, ca=str(self.ca) if "verify" in mode else None),
        )  # fmt: skip

    def ssl_of_slot(self, slot: str) -> bool | None:
        """``pg_stat_ssl.ssl`` of the WAL sender holding ``slot`` (None: none holds it)."""
        rows = self.server.query(
            "SELECT s.ssl FROM pg_replication_slots r JOIN pg_stat_ssl s ON s.pid = r.active_pid "
            f"WHERE r.slot_name LIKE '{slot}'"
        )
        return rows[0][0] if rows else None


@pytest.fixture(scope="module")
def secure(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secure]:
    folder = tmp_path_factory.mktemp("pgtls")
    certs = make_certificates(folder)
    make_client_certificate(folder, CERT_USER)
    server = ThrowawayPostgres.start(
        tls=ServerTls(certs["server"], certs["key"], ca=certs["ca"]), hba=HBA
    )
    try:
        server.create_database(DATABASE)
        server.execute(
            "CREATE TABLE t (id int PRIMARY KEY, v text)",
            "INSERT INTO t VALUES (1, 'one')",
            f"CREATE ROLE {CERT_USER} LOGIN REPLICATION PASSWORD 'cert-pw'",
            f"GRANT SELECT ON t TO {CERT_USER}",
            database=DATABASE,
        )
        yield Secure(server, folder)
    finally:
        server.stop()


def test_the_server_lets_nobody_in_without_tls(secure: Secure) -> None:
    """The fixture is what the other tests rely on: a clear-text login is refused."""
    with pytest.raises(psycopg2.OperationalError, match="no encryption"):
        secure.server.connect(DATABASE, sslmode="disable")


@pytest.mark.parametrize("mode", ENCRYPTING)
def test_every_connection_kind_is_encrypted(secure: Secure, mode: str) -> None:
    source = secure.source(mode, slot=f"tls_{mode.replace('-', '_')}")
    with PostgresCatalog.of(source) as catalog:  # the catalog (psycopg2)
        assert catalog.session.query(OWN_SSL) == [(True,)]
    pin = ExportedSnapshot(source, "pin")  # the exported snapshot's replication connection
    try:
        assert secure.ssl_of_slot("pin_pin_%") is True
        with PostgresChunks(source, pin.pin) as chunks:  # a chunk reader's COPY, in the pin
            copied = text_columns(chunks.session.copy(OWN_SSL), 1)[0].to_pylist()
            assert copied == ["t"]
            assert chunks.row_count("public", "t") >= 1
    finally:
        pin.close()
    stream_one_change(secure, source)


def stream_one_change(secure: Secure, source: SourceConfig) -> None:
    """The log reader's replication stream, opened through the source port: encrypted, and a
    change written after its start arrives through it."""
    port = open_source(source)
    start = port.startup_offset("latest")
    store = EventStore(max_bytes=8 << 20, max_items=1024, batch_mode="MEMSIZE")
    reader = port.open_reader(start, store, "", 64)
    reader.start()
    try:
        slot = PostgresSettings.of(source).names()[0]
        deadline = time.monotonic() + 30
        while secure.ssl_of_slot(slot) is None:
            assert reader.error is None, reader.error
            assert time.monotonic() < deadline, "the reader did not start streaming"
            time.sleep(0.05)
        assert secure.ssl_of_slot(slot) is True
        secure.server.execute("UPDATE t SET v = v || '!' WHERE id = 1", database=DATABASE)
        rows = 0
        while rows == 0:
            assert reader.error is None, reader.error
            assert time.monotonic() < deadline, "the change did not arrive"
            batch = store.get(timeout=0.5)
            if batch is not None:
                rows += sum(item.rows for item in batch.items if not item.is_ddl)
                store.ack(batch)
    finally:
        reader.stop()


def test_disabled_is_refused_by_the_server_with_a_sentence_naming_source_tls(
    secure: Secure,
) -> None:
    source = secure.source("disabled")
    only_tls = "letting user 'postgres' in without TLS .*no encryption.* source.tls is disabled"
    with pytest.raises(ConnectionFailed, match=only_tls):
        PostgresCatalog.of(source)
    with pytest.raises(ConnectionFailed, match=only_tls):
        ExportedSnapshot(source, "pin")
    with pytest.raises(ConnectionFailed, match=only_tls):
        PostgresChunks(source)


def test_a_certificate_from_another_ca_or_for_another_name_is_refused(
    secure: Secure, tmp_path: Path
) -> None:
    other = make_certificates(tmp_path)["ca"]  # another CA
    wrong_ca = replace(secure.source("verify-ca"), tls=TlsConfig("verify-ca", ca=str(other)))
    wrong_name = secure.source("verify-identity", host="localhost")  # the certificate: 127.0.0.1
    for source, words in ((wrong_ca, "certificate verify failed"), (wrong_name, "")):
        failed = f"TLS handshake with PostgreSQL at .* failed .*{words}.*check source.tls"
        with pytest.raises(ConnectionFailed, match=failed):
            ExportedSnapshot(source, "pin")  # the wire client
        with pytest.raises(ConnectionFailed, match=failed):
            PostgresCatalog.of(source)  # libpq
    assert secure.ssl_of_slot("pin_pin_%") is None


def test_a_client_certificate_when_the_server_asks_for_one(secure: Secure) -> None:
    def login(source: SourceConfig) -> PgConnection:
        return PgConnection(
            source.host, source.port, CERT_USER, "cert-pw", DATABASE, replication=True,
            tls=source.tls,
        )  # fmt: skip

    without = replace(secure.source("verify-identity"), user=CERT_USER, password="cert-pw")
    wanted = "asks user 'certuser' for a client certificate .*set source.tls's cert and key"
    with pytest.raises(ConnectionFailed, match=wanted):
        login(without)
    with pytest.raises(ConnectionFailed, match=wanted):
        PostgresCatalog.of(without)
    cert, key = secure.folder / f"{CERT_USER}.pem", secure.folder / f"{CERT_USER}.key"
    tls = TlsConfig("verify-identity", ca=str(secure.ca), cert=str(cert), key=str(key))
    with login(replace(without, tls=tls)) as conn:
        assert conn.encrypted
        shown = "SELECT ssl, client_dn FROM pg_stat_ssl WHERE pid = pg_backend_pid()"
        assert conn.query(shown) == [("t", f"/CN={CERT_USER}")]
    with PostgresCatalog.of(replace(without, tls=tls)) as catalog:
        assert catalog.session.query(shown) == [(True, f"/CN={CERT_USER}")]


def test_a_server_without_tls(postgres: ThrowawayPostgres) -> None:
    """``required`` and stronger stop with a sentence; ``preferred`` goes on in clear text."""

    def source(mode: str) -> SourceConfig:
        return SourceConfig(
            postgres.host, postgres.port, postgres.user, postgres.password, (".*",),
            type="postgres", connect_timeout=5, tls=TlsConfig(mode),
        )  # fmt: skip

    for mode in ("required", "verify-ca", "verify-identity"):
        stopped = rf"does not offer TLS, which source.tls \({mode}\) requires; enable TLS"
        with pytest.raises(ConnectionFailed, match=stopped):
            ExportedSnapshot(source(mode), "pin")
        with pytest.raises(ConnectionFailed, match=stopped):
            PostgresCatalog.of(source(mode))
    with PostgresCatalog.of(source("preferred")) as catalog:
        assert catalog.session.query(OWN_SSL) == [(False,)]
    with PgConnection(postgres.host, postgres.port, postgres.user, postgres.password,
                      "postgres", tls=TlsConfig("preferred")) as conn:  # fmt: skip
        assert not conn.encrypted
        assert conn.query(OWN_SSL) == [("f",)]
