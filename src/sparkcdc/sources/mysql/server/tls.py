"""``source.tls`` on the three kinds of connection to a MySQL/MariaDB server: PyMySQL (catalog,
watermarks), connectorx (snapshot chunks) and the replication connection, which negotiates TLS
itself (:mod:`sparkcdc.sources.mysql.binlog.protocol`, with :mod:`sparkcdc.sources.tls`'s
context). Every mode means the same on all three (:class:`~sparkcdc.config.model.TlsConfig`); a
mode that requires TLS fails with :func:`sparkcdc.sources.tls.not_encrypted` when the server does
not offer it, rather than going on in clear text."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from sparkcdc.config.model import TlsConfig


def pymysql_options(tls: TlsConfig) -> dict[str, Any]:
    """PyMySQL's connect arguments for ``tls`` (``preferred`` and ``required``: PyMySQL offers
    TLS by itself; ``required`` is checked once connected)."""
    if tls.mode == "disabled":
        return {"ssl_disabled": True}
    out: dict[str, Any] = {}
    if tls.verifies:
        out = {"ssl_verify_cert": True, "ssl_verify_identity": tls.mode == "verify-identity"}
        if tls.ca:
            out["ssl_ca"] = tls.ca
    if tls.cert:
        out.update(ssl_cert=tls.cert, ssl_key=tls.key)
    return out


def connectorx_params(tls: TlsConfig, offered: bool) -> str:
    """The connectorx URL parameters for ``tls`` (``&``-prefixed); ``offered``: whether the
    server offers TLS (connectorx has no preferred mode of its own: it encrypts or not)."""
    if tls.mode == "disabled" or (tls.mode == "preferred" and not offered):
        return ""
    mode = "required" if tls.mode == "preferred" else tls.mode.replace("-", "_")
    return f"&ssl-mode={mode}" + (f"&ssl-ca={quote(tls.ca)}" if tls.ca else "")
