"""The contract suite runs every test once per registered source: MySQL/MariaDB on a private
server, and the fake source on a file."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.contract.harness import FakeHarness, Harness, MariaDBHarness


@pytest.fixture(params=["mysql", "fake"])
def harness(request: pytest.FixtureRequest, tmp_path: Path) -> Harness:
    if request.param == "fake":
        return FakeHarness(tmp_path)
    server = request.getfixturevalue("mariadb")
    return MariaDBHarness(server, request.getfixturevalue("db"))
