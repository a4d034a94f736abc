"""``source.tls`` on every connection, against a real MariaDB that requires TLS
(``require_secure_transport``, a certificate signed by a CA the test makes) and one without TLS."""

from __future__ import annotations

import ssl
from collections.abc import Iterator
from pathlib import Path

import connectorx as cx
import pytest

from sparkcdc.config.model import SourceConfig, TlsConfig
from sparkcdc.core.errors import ConnectionFailed
from sparkcdc.sources.mysql.binlog.dump import open_dump
from sparkcdc.sources.mysql.chunks.dialect import MySQLChunks
from sparkcdc.sources.mysql.server.catalog import MySQLCatalog
from sparkcdc.sources.mysql.throwaway import ThrowawayMariaDB
from tests.cases.tls import make_certificates

pytestmark = pytest.mark.mariadb


@pytest.fixture(scope="module")
def secure(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ThrowawayMariaDB, Path]]:
    folder = tmp_path_factory.mktemp("tls")
    certs = make_certificates(folder)
    server = ThrowawayMariaDB.start(
        base_dir=str(folder),
        extra_args=[f"--ssl-ca={certs['ca']}", f"--ssl-cert={certs['server']}",
                    f"--ssl-key={certs['key']}", "--require-secure-transport=ON"],
    )  # fmt: skip
    try:
        server.execute("CREATE DATABASE IF NOT EXISTS shop",
                       "CREATE TABLE IF NOT EXISTS shop.t (id INT PRIMARY KEY)")  # fmt: skip
        yield server, certs["ca"]
    finally:
        server.stop()


def source_of(server: ThrowawayMariaDB, tls: TlsConfig) -> SourceConfig:
    return server.source_config(r"shop\..*", tls=tls)


def cipher(catalog: MySQLCatalog) -> str:
    return str(catalog.query("SHOW SESSION STATUS LIKE 'Ssl_cipher'")[0][1])


@pytest.mark.parametrize("mode", ["preferred", "required", "verify-ca", "verify-identity"])
def test_every_connection_kind_is_encrypted_as_asked(
    secure: tuple[ThrowawayMariaDB, Path], mode: str
) -> None:
    server, ca = secure
    source = source_of(server, TlsConfig(mode, ca=str(ca) if "verify" in mode else None))
    with MySQLCatalog.of(source) as catalog:
        assert cipher(catalog)
    with MySQLChunks(source) as chunks:  # the snapshot's connectorx reads
        sql = "SELECT VARIABLE_VALUE FROM information_schema.SESSION_STATUS " \
              "WHERE VARIABLE_NAME = 'Ssl_cipher'"  # fmt: skip
        assert cx.read_sql(chunks._url("shop"), sql, return_type="arrow").to_pylist()[0]
    server.execute("INSERT INTO shop.t VALUES (1) ON DUPLICATE KEY UPDATE id = 1")
    conn, events = open_dump(source, 4242, "", 4, "0-1-0")  # the replication connection
    try:
        assert isinstance(conn.sock, ssl.SSLSocket)
        assert next(events)  # the dump streams over it
    finally:
        conn.close()


def test_a_certificate_not_from_the_ca_or_clear_text_is_refused(
    secure: tuple[ThrowawayMariaDB, Path], tmp_path: Path
) -> None:
    server, _ = secure
    other = make_certificates(tmp_path)["ca"]  # another CA
    source = source_of(server, TlsConfig("verify-ca", ca=str(other)))
    with pytest.raises(ConnectionFailed, match="TLS handshake .* failed .*source.tls"):
        open_dump(source, 4243, "", 4, "0-1-0")
    with pytest.raises(ConnectionFailed, match="TLS handshake .* failed .*source.tls"):
        MySQLCatalog.of(source)
    with pytest.raises(ConnectionFailed, match="source.tls"):
        MySQLCatalog.of(source_of(server, TlsConfig("disabled")))


def test_a_server_without_tls_is_refused_when_tls_is_required(mariadb: ThrowawayMariaDB) -> None:
    with MySQLCatalog.of(mariadb.source_config(r"x\..*")) as catalog:
        if catalog.server_variables("have_ssl").get("have_ssl") == "YES":
            pytest.skip("this server offers TLS")
    source = mariadb.source_config(r"x\..*", tls=TlsConfig("required"))
    with pytest.raises(ConnectionFailed, match="does not offer TLS, which source.tls"):
        MySQLCatalog.of(source)
    with pytest.raises(ConnectionFailed, match="does not offer TLS, which source.tls"):
        open_dump(source, 4244, "", 4, "0-1-0")
