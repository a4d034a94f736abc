"""Test harness: one private MariaDB server per test session (binlog ROW/FULL + GTID, a free
loopback port, a temporary data folder), a fresh database per test, and Spark's Python workers
pointed at this interpreter so executors import the same packages."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator

import pytest

from sparkcdc.sources.mysql.throwaway import ThrowawayMariaDB
from sparkcdc.sources.postgres.throwaway import ThrowawayPostgres
from tests.fakes.mysql_primary import MySQLPrimary

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)


@pytest.fixture(scope="session")
def mariadb() -> Iterator[ThrowawayMariaDB]:
    """A private MariaDB server for the whole session (root, empty password)."""
    server = ThrowawayMariaDB.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def db(mariadb: ThrowawayMariaDB, request: pytest.FixtureRequest) -> str:
    """A database of the test's own, created empty (named after the test)."""
    name = re.sub(r"[^a-z0-9_]", "_", request.node.name.lower())[:48]
    name = f"t_{name}"
    mariadb.execute(f"DROP DATABASE IF EXISTS `{name}`", f"CREATE DATABASE `{name}`")
    return name


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
def pgdb(postgres: ThrowawayPostgres, request: pytest.FixtureRequest) -> str:
    """A PostgreSQL database of the test's own, created empty (named after the test)."""
    name = re.sub(r"[^a-z0-9_]", "_", request.node.name.lower())[:48]
    name = f"t_{name}"
    postgres.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    postgres.create_database(name)
    return name


@pytest.fixture
def primaries() -> Iterator[list[MySQLPrimary]]:
    """MySQL 8 test primaries a test starts (appended here), closed after it."""
    made: list[MySQLPrimary] = []
    yield made
    for primary in made:
        primary.close()
