"""``source.tls`` for the protocol clients sparkcdc speaks itself (MySQL's replication
connection, PostgreSQL's wire client): one TLS context per mode and one sentence per refusal,
so every source and connection kind says the same thing.

The modes (:class:`~sparkcdc.config.model.TlsConfig`, as MySQL's clients name them):
``disabled`` (no context: clear text), ``preferred`` and ``required`` (encrypt, trust any
certificate), ``verify-ca`` (the server's certificate signed by ``ca``, else by the system's
authorities), ``verify-identity`` (and naming the host); ``cert``/``key`` are presented when
the server asks for a client certificate. A mode that requires TLS stops with
:func:`not_encrypted` when the server does not offer it, rather than going on in clear text.
"""

from __future__ import annotations

import ssl

from sparkcdc.config.model import TlsConfig
from sparkcdc.core.errors import ConnectionFailed


def context(tls: TlsConfig) -> ssl.SSLContext | None:
    """The TLS context a connection upgrades to (None: ``disabled``)."""
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


def not_encrypted(
    address: str, tls: TlsConfig, server_settings: str = "ssl_cert, ssl_key"
) -> ConnectionFailed:
    """The server at ``address`` (``host:port``) offers no TLS and ``tls`` requires it;
    ``server_settings`` name what turns TLS on there."""
    return ConnectionFailed(
        f"The server at {address} does not offer TLS, which source.tls ({tls.mode}) requires; "
        f"enable TLS on the server ({server_settings}) or set source.tls to preferred.",
        key="source.tls",
    )


def handshake_failed(where: str, detail: object, **fields: object) -> ConnectionFailed:
    """The TLS handshake with ``where`` failed (a certificate not trusted, not naming the
    host, a client certificate refused); ``detail``: the TLS library's words."""
    return ConnectionFailed(
        f"The TLS handshake with {where} failed ({detail}); check source.tls (its mode and ca, "
        "and cert and key where the server asks for a client certificate).",
        **{"key": "source.tls", **fields},
    )
