from __future__ import annotations

import os

import pytest


@pytest.fixture
def pg_url() -> str:
    url = os.environ.get("CLAWLOG_TEST_DATABASE_URL")
    if not url:
        if os.environ.get("CI"):
            pytest.fail("CLAWLOG_TEST_DATABASE_URL is not set: run the tests via scripts/test.sh")
        pytest.skip("no PostgreSQL server: run the tests via scripts/test.sh")
    return url
