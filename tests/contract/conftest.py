"""The contract suite runs every test once per registered source: MySQL/MariaDB and PostgreSQL
on private servers, and the fake source on a file."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.contract.harness import FakeHarness, Harness, MariaDBHarness, PostgresHarness


@pytest.fixture(params=["mysql", "postgres", "fake"])
def harness(request: pytest.FixtureRequest, tmp_path: Path) -> Harness:
    if request.param == "fake":
        return FakeHarness(tmp_path)
    if request.param == "postgres":
        return PostgresHarness(request.getfixturevalue("postgres"), request.getfixturevalue("pgdb"))
    server = request.getfixturevalue("mariadb")
    return MariaDBHarness(server, request.getfixturevalue("db"))
