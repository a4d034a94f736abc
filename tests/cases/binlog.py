"""Server settings some binlog tests run under."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from sparkcdc.sources.mysql.throwaway import ThrowawayMariaDB


@contextlib.contextmanager
def compressed_binlog(server: ThrowawayMariaDB, on: bool = True) -> Iterator[None]:
    """MariaDB writes compressed query and rows events (``log_bin_compress``) for every event of
    10 bytes or more while inside (nothing changes with ``on`` False)."""
    if not on:
        yield
        return
    server.execute("SET GLOBAL log_bin_compress = ON", "SET GLOBAL log_bin_compress_min_len = 10")
    try:
        yield
    finally:
        server.execute(
            "SET GLOBAL log_bin_compress = OFF", "SET GLOBAL log_bin_compress_min_len = 256"
        )


@contextlib.contextmanager
def full_row_metadata(server: ThrowawayMariaDB, on: bool = True) -> Iterator[None]:
    """Table maps carry every column's name, signedness and charset
    (``binlog_row_metadata=FULL``) while inside."""
    if not on:
        yield
        return
    server.execute("SET GLOBAL binlog_row_metadata = FULL")
    try:
        yield
    finally:
        server.execute("SET GLOBAL binlog_row_metadata = NO_LOG")
