"""The end-to-end suite runs a test taking ``source`` once per database: MariaDB and PostgreSQL,
each on its private server in a database of the test's own (see ``tests/cases/e2e_sources.py``)."""

from __future__ import annotations

import pytest

from tests.cases.e2e_sources import E2ESource, MariaDBSource, PostgresSource

SOURCES = [
    pytest.param("mysql", marks=pytest.mark.mariadb),
    pytest.param("postgres", marks=pytest.mark.postgres),
]


@pytest.fixture(params=SOURCES)
def source(request: pytest.FixtureRequest) -> E2ESource:
    if request.param == "postgres":
        return PostgresSource(request.getfixturevalue("postgres"), request.getfixturevalue("pgdb"))
    return MariaDBSource(request.getfixturevalue("mariadb"), request.getfixturevalue("db"))
