"""``source.tls`` on the three kinds of connection to a MySQL/MariaDB server: PyMySQL (catalog,
watermarks), connectorx (snapshot chunks) and the replication connection, which negotiates TLS
itself (:mod:`sparkcdc.sources.mysql.binlog.protocol`). Every mode means the same on all three
(:class:`~sparkcdc.config.model.TlsConfig`); a mode that requires TLS fails with a sentence when
the server does not offer it, rather than going on in clear text."""

from __future__ import annotations

import ssl
from typing import Any
from urllib.parse import quote

from sparkcdc.config.model import TlsConfig
from sparkcdc.core.errors import ConnectionFailed


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


def context(tls: TlsConfig) -> ssl.SSLContext | None:
    """The TLS context the replication connection upgrades to (None: ``disabled``)."""
    if tls.mode == "disabled":
        return None
    ctx = (
        ssl.create_default_context(cafile=tls.ca)
        if tls.verifies
        else ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    )
    if not tls.verifies:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    else:
        ctx.check_hostname = tls.mode == "verify-identity"
    if tls.cert:
        ctx.load_cert_chain(tls.cert, keyfile=tls.key)
    return ctx


def not_encrypted(address: str, tls: TlsConfig) -> ConnectionFailed:
    return ConnectionFailed(
        f"The server at {address} does not offer TLS, which source.tls ({tls.mode}) requires; "
        "enable TLS on the server (ssl_cert, ssl_key) or set source.tls to preferred.",
        key="source.tls",
    )
