"""The contract suites run every test once per registered implementation: the source suite
against MySQL/MariaDB and PostgreSQL on private servers and the fake source on a file; the sink
suite against Delta, Iceberg and the in-memory sink."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.contract.harness import FakeHarness, Harness, MariaDBHarness, PostgresHarness
from tests.contract.sink_harness import (
    DeltaHarness,
    IcebergHarness,
    MemoryHarness,
    SinkHarness,
)


@pytest.fixture(params=["mysql", "postgres", "fake"])
def harness(request: pytest.FixtureRequest, tmp_path: Path) -> Harness:
    if request.param == "fake":
        return FakeHarness(tmp_path)
    if request.param == "postgres":
        return PostgresHarness(request.getfixturevalue("postgres"), request.getfixturevalue("pgdb"))
    server = request.getfixturevalue("mariadb")
    return MariaDBHarness(server, request.getfixturevalue("db"))


@pytest.fixture(params=["delta", "iceberg", "memory"])
def sink_harness(request: pytest.FixtureRequest, tmp_path: Path) -> SinkHarness:
    if request.param == "memory":
        return MemoryHarness(tmp_path)
    if request.param == "iceberg":
        return IcebergHarness(tmp_path)
    return DeltaHarness(tmp_path)
