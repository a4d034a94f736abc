"""The replication connection's login to a MySQL 8 server, against the protocol-level test
primary (``tests/fakes/mysql_primary.py``): ``caching_sha2_password`` by its fast path, its full
authentication over TLS, and the sentences for what it refuses."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparkcdc.config.model import SourceConfig, TlsConfig
from sparkcdc.core.errors import ConnectionFailed
from sparkcdc.sources.mysql.binlog.dump import open_dump
from tests.cases.tls import make_certificates
from tests.fakes.mysql_primary import MySQLPrimary

EVENTS = [b"first event bytes", b"second"]


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return make_certificates(tmp_path_factory.mktemp("certs"))


def dump_from(primary: MySQLPrimary, password: str, tls: str) -> list[bytes]:
    source = SourceConfig("127.0.0.1", primary.port, "cdc", password, (), tls=TlsConfig(tls))
    conn, stream = open_dump(source, 5001, "mysql-bin.000001", 4)
    try:
        return [event for events in stream for event in events]
    finally:
        conn.close()


def test_caching_sha2_fast_path_in_clear_text_and_full_authentication_over_tls(
    certs: dict[str, Path], primaries: list[MySQLPrimary]
) -> None:
    fast = MySQLPrimary("cdc", "pw-8", EVENTS)
    full = MySQLPrimary("cdc", "pw-8", EVENTS, cached=False, cert=certs["server"],
                        key=certs["key"])  # fmt: skip
    primaries += [fast, full]
    assert dump_from(fast, "pw-8", "preferred") == EVENTS
    assert dump_from(full, "pw-8", "required") == EVENTS
    assert (fast.logins, full.logins) == (["fast"], ["full over TLS"])


def test_what_the_login_refuses_is_said(
    certs: dict[str, Path], primaries: list[MySQLPrimary]
) -> None:
    clear = MySQLPrimary("cdc", "pw-8", EVENTS, cached=False)
    primaries.append(clear)
    assert dump_from(clear, "pw-8", "preferred") == EVENTS  # full authentication under RSA
    assert clear.logins == ["full with RSA"]
    with pytest.raises(ConnectionFailed, match="does not offer TLS, which source.tls"):
        dump_from(clear, "pw-8", "required")
    with pytest.raises(ConnectionFailed, match="refused user 'cdc'.*source.password"):
        dump_from(clear, "wrong", "preferred")
