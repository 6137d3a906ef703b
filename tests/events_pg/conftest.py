from __future__ import annotations

import pytest

from tests.support.postgres import database_url


@pytest.fixture
def pg_url() -> str:
    return database_url()
