"""Client connections: PyMySQL's preferred-TLS context is made once per process, not once per
connection (it loads the system's CA certificates); TLS options still go to PyMySQL as given."""

from __future__ import annotations

import ssl
from typing import Any

import pytest

from sparkcdc.sources.mysql.server import connect as module
from sparkcdc.sources.mysql.server.connect import connect
from sparkcdc.sources.mysql.throwaway import ThrowawayMariaDB

pytestmark = pytest.mark.mariadb


def test_connections_share_one_preferred_tls_context(
    mariadb: ThrowawayMariaDB, monkeypatch: pytest.MonkeyPatch
) -> None:
    loads: list[ssl.SSLContext] = []
    real = ssl.SSLContext.load_default_certs

    def counted(self: ssl.SSLContext, *args: Any) -> None:
        loads.append(self)
        real(self, *args)

    monkeypatch.setattr(ssl.SSLContext, "load_default_certs", counted)
    monkeypatch.setattr(module, "_PREFERRED", None)
    contexts = []
    for _ in range(3):
        conn = connect(host=mariadb.host, port=mariadb.port, user="root", autocommit=True)
        with conn.cursor() as cur:
            cur.execute("SELECT 1")
            assert cur.fetchone() == (1,)
        contexts.append(conn.ctx)
        conn.close()
    assert len(loads) == 1 and all(c is contexts[0] for c in contexts)
    # PyMySQL's own preferred context: TLS if the server offers it, no certificate checked
    assert contexts[0].verify_mode == ssl.CERT_NONE and not contexts[0].check_hostname


def test_tls_options_are_pymysql_s(mariadb: ThrowawayMariaDB, tmp_path: Any) -> None:
    missing = tmp_path / "missing-ca.pem"
    with pytest.raises(OSError):  # PyMySQL loads the named CA file itself
        connect(host=mariadb.host, port=mariadb.port, user="root", ssl_ca=str(missing))
