"""Which server a MySQL-protocol source is: MariaDB, whose binary log sparkcdc reads, or MySQL.

MySQL's binary log opens each transaction with a GTID event of its own (types 33 and 34) where
MariaDB writes its GTID event (162); a reader that waits for MariaDB's would drop every change
of a MySQL server without a word. Until MySQL's flavour of the binlog is read, a MySQL server is
refused where it is first met: ``sparkcdc check``, the start of ``sparkcdc run`` and the Spark
source (the catalog's readiness check), and the log reader itself (its GTID events).
"""

from __future__ import annotations

from sparkcdc.core.errors import SourceError


def is_mariadb(version: str) -> bool:
    """Whether ``SELECT VERSION()`` (``10.11.6-MariaDB-0+deb12u1``) names a MariaDB server."""
    return "mariadb" in version.lower()


def check_flavour(version: str, address: str) -> None:
    """Raise unless the server at ``address`` is MariaDB."""
    if not is_mariadb(version):
        raise SourceError(
            f"The server at {address} is MySQL {version}, whose binary log sparkcdc does not "
            "read yet (only MariaDB's); capture a MariaDB server, since streaming this one "
            "would miss its changes.",
            version=version,
        )
