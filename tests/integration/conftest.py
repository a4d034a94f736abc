"""Fixtures the integration tests share (the servers themselves: ``tests/conftest.py``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.cases.s3 import MotoS3
from tests.faults.store_proxy import StoreProxy


@pytest.fixture
def proxy(s3: MotoS3) -> Iterator[StoreProxy]:
    """The fault campaign's HTTP proxy before the test run's S3 server, passing until told."""
    found = StoreProxy(s3.port)
    try:
        yield found
    finally:
        found.close()
