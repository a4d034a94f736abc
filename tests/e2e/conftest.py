"""The end-to-end suite runs a test taking ``source`` once per database: MariaDB and PostgreSQL,
each on its private server in a database of the test's own (see ``tests/cases/e2e_sources.py``);
a test taking ``own_source`` runs once per database on a server of its own; a test taking
``source_and_sink`` runs twice: MariaDB into Delta and PostgreSQL into Iceberg."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cases.e2e_sources import E2ESource, MariaDBSource, PostgresSource
from tests.e2e.cli import crash, start
from tests.e2e.incremental_runs import Launch

SOURCES = [
    pytest.param("mysql", marks=pytest.mark.mariadb),
    pytest.param("postgres", marks=pytest.mark.postgres),
]


@pytest.fixture(params=SOURCES)
def source(request: pytest.FixtureRequest) -> E2ESource:
    if request.param == "postgres":
        return PostgresSource(request.getfixturevalue("postgres"), request.getfixturevalue("pgdb"))
    return MariaDBSource(request.getfixturevalue("mariadb"), request.getfixturevalue("db"))


@pytest.fixture(params=["mariadb-delta", "postgres-iceberg"])
def source_and_sink(request: pytest.FixtureRequest) -> tuple[E2ESource, str]:
    """A source and the sink type it writes: every source and every sink type, in two runs."""
    if request.param == "postgres-iceberg":
        pg = PostgresSource(request.getfixturevalue("postgres"), request.getfixturevalue("pgdb"))
        return pg, "iceberg"
    maria = MariaDBSource(request.getfixturevalue("mariadb"), request.getfixturevalue("db"))
    return maria, "delta"


@pytest.fixture
def launch() -> Iterator[Launch]:
    """``start`` for the test: a pipeline still running when the test ends (it failed) is
    killed with its process group."""
    procs: list[subprocess.Popen[bytes]] = []

    def launch(cfg: Path) -> subprocess.Popen[bytes]:
        procs.append(start(cfg))
        return procs[-1]

    yield launch
    for proc in procs:
        if proc.poll() is None:
            crash(proc)


@pytest.fixture(params=SOURCES)
def own_source(request: pytest.FixtureRequest) -> Iterator[E2ESource]:
    """The source on a server of the test's own, for a test that loses or reclaims the log."""
    kind = PostgresSource if request.param == "postgres" else MariaDBSource
    with kind.on_own_server() as source:
        yield source
