"""Which server a MySQL-protocol source is: MariaDB or MySQL, told by its version string.

The two write the same binary log with different GTID events and GTID positions
(:mod:`sparkcdc.sources.mysql.binlog.gtid`), name their privileges and status statements
differently, and have their own server settings; everything that differs asks here.
"""

from __future__ import annotations

import re


def is_mariadb(version: str) -> bool:
    """Whether ``SELECT VERSION()`` (``10.11.6-MariaDB-0+deb12u1``) names a MariaDB server."""
    return "mariadb" in version.lower()


def version_tuple(version: str) -> tuple[int, int, int]:
    """``8.4.3-log`` -> ``(8, 4, 3)``; missing parts are 0."""
    parts = [int(x) for x in re.findall(r"\d+", version.split("-", 1)[0])[:3]]
    return (*parts, 0, 0, 0)[:3]  # type: ignore[return-value]


def status_statement(version: str) -> str:
    """The statement that reports the binary log's end: MySQL 8.2 renamed it (8.4 removed the
    old name); MariaDB and older MySQL know ``SHOW MASTER STATUS``."""
    if not is_mariadb(version) and version_tuple(version) >= (8, 2, 0):
        return "SHOW BINARY LOG STATUS"
    return "SHOW MASTER STATUS"
