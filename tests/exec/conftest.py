from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from clawlog.events import EventStore, open_store

from .support import StoreRecorder


@pytest.fixture
def root(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    return path


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[EventStore]:
    async with await open_store(tmp_path / "log.db") as opened:
        yield opened


@pytest.fixture
def recorder(store: EventStore) -> StoreRecorder:
    return StoreRecorder(store)
