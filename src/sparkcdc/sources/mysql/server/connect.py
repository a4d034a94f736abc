"""Client connections to the source (PyMySQL), with PyMySQL's TLS negotiation kept as it is.

Without TLS options PyMySQL 1.2 prefers TLS: it offers it, and the server may accept or not. For
that it builds an ``ssl.SSLContext`` on every connection, and building one loads the system's
CA certificates, measured here at ~20 ms of CPU per connection, for a context that verifies no
certificate. A snapshot task opens connections as it reads, the planner one per micro-batch, and
the tests thousands. :func:`connect` builds that same context (PyMySQL's own code) once per
process; every other TLS option goes to PyMySQL unchanged.
"""

from __future__ import annotations

import ssl
import threading
from typing import Any

from pymysql.connections import Connection

_LOCK = threading.Lock()
_PREFERRED: ssl.SSLContext | None = None


class _Connection(Connection):
    @property
    def encrypted(self) -> bool:
        """Whether the connection runs over TLS."""
        return isinstance(getattr(self, "_sock", None), ssl.SSLSocket)

    def _create_ssl_ctx(self, sslp: Any) -> ssl.SSLContext:
        global _PREFERRED
        if sslp:  # TLS options given: PyMySQL as it is
            made: ssl.SSLContext = super()._create_ssl_ctx(sslp)  # type: ignore[misc]  # PyMySQL's, unstubbed
            return made
        with _LOCK:
            if _PREFERRED is None:
                _PREFERRED = super()._create_ssl_ctx(sslp)  # type: ignore[misc]
            return _PREFERRED


def connect(**kwargs: Any) -> _Connection:
    """``pymysql.connect(**kwargs)``, with the preferred-TLS context made once per process."""
    return _Connection(**kwargs)
