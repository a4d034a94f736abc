"""Test harness: one private MariaDB server per test session (binlog ROW/FULL + GTID, a free
loopback port, a temporary data folder), a fresh database per test, and Spark's Python workers
pointed at this interpreter so executors import the same packages."""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import sys
import time
from collections.abc import Iterator

import pytest

from sparkcdc.sources.mysql.throwaway import ThrowawayMariaDB
from sparkcdc.sources.postgres.throwaway import ThrowawayPostgres
from tests.cases.s3 import MotoS3
from tests.fakes.mysql_primary import MySQLPrimary

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

EXTENDED = "SPARKCDC_EXTENDED"  # 1: the tests marked ``extended`` run too


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip the tests marked ``extended`` unless SPARKCDC_EXTENDED=1, so the default run stays
    within its time: a second source or sink through a scenario the default run takes on
    another, a later phase of a trial. ``@pytest.mark.extended("postgres")`` marks only the
    parameter sets whose id is, or holds as a part, one of the names given (``postgres-delta``)."""
    if os.environ.get(EXTENDED) == "1":
        return
    skip = pytest.mark.skip(reason=f"extended: {EXTENDED}=1 runs it")
    for item in items:
        marker = item.get_closest_marker("extended")
        if marker is None:
            continue
        callspec = getattr(item, "callspec", None)
        ids = {callspec.id, *callspec.id.split("-")} if callspec is not None else set()
        if not marker.args or ids & set(marker.args):
            item.add_marker(skip)


@pytest.fixture(scope="session")
def mariadb() -> Iterator[ThrowawayMariaDB]:
    """A private MariaDB server for the whole session (root, empty password)."""
    server = ThrowawayMariaDB.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def s3() -> Iterator[MotoS3]:
    """An S3-compatible server (moto's) on loopback for the whole session."""
    server = MotoS3()
    try:
        yield server
    finally:
        server.stop()


def own_database(request: pytest.FixtureRequest) -> str:
    """The name of a test's own database: the test's name, and a digest of its whole id so that
    two tests (two parameters, long names cut short) never share one, run in parallel or not."""
    slug = re.sub(r"[^a-z0-9_]", "_", request.node.name.lower())[:40]
    return f"t_{slug}_{hashlib.sha1(request.node.nodeid.encode()).hexdigest()[:6]}"


@pytest.fixture
def db(mariadb: ThrowawayMariaDB, request: pytest.FixtureRequest) -> Iterator[str]:
    """A database of the test's own, created empty, dropped after the test."""
    name = own_database(request)
    mariadb.execute(f"DROP DATABASE IF EXISTS `{name}`", f"CREATE DATABASE `{name}`")
    yield name
    with contextlib.suppress(Exception):  # a session still holding it keeps it, harmlessly
        mariadb.execute("SET SESSION lock_wait_timeout = 10", f"DROP DATABASE IF EXISTS `{name}`")


@pytest.fixture(scope="session")
def postgres() -> Iterator[ThrowawayPostgres]:
    """A private PostgreSQL server for the whole session (wal_level=logical; the superuser
    ``postgres`` with a password over TCP)."""
    server = ThrowawayPostgres.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def pgdb(postgres: ThrowawayPostgres, request: pytest.FixtureRequest) -> Iterator[str]:
    """A PostgreSQL database of the test's own, created empty (named after the test); its
    replication slots and the database are dropped after the test, so the shared server keeps
    none."""
    name = own_database(request)
    postgres.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    postgres.create_database(name)
    yield name
    drop = (
        "SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots "
        f"WHERE database = '{name}' AND active_pid IS NOT NULL"
    )
    postgres.execute(drop)
    for _ in range(50):  # a terminated walsender lets go of its slot shortly after
        slots = postgres.query(
            f"SELECT slot_name, active FROM pg_replication_slots WHERE database = '{name}'"
        )
        if not any(active for _, active in slots):
            break
        time.sleep(0.1)
    for slot, _ in slots:
        postgres.execute(f"SELECT pg_drop_replication_slot('{slot}')")
    with contextlib.suppress(Exception):
        postgres.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def primaries() -> Iterator[list[MySQLPrimary]]:
    """MySQL 8 test primaries a test starts (appended here), closed after it."""
    made: list[MySQLPrimary] = []
    yield made
    for primary in made:
        primary.close()
