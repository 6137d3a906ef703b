from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from clawlog.actors import SupervisionPolicy, System
from tests.actors.sample import Added

FAST = SupervisionPolicy(max_failures=3, window_s=60, backoff_base_s=0.001, backoff_max_s=0.01)


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "actors.db"


@pytest.fixture
async def system(db_path: Path) -> AsyncIterator[System]:
    async with System.open(db_path, event_types=[Added], policy=FAST) as opened:
        yield opened
