"""The ``store`` fixture: every contract test runs once per backend.

A new backend adds one parameter here and one branch to ``_open``.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from clawlog.events import EventRegistry, EventStore, MemoryBackend, SqliteBackend, open_store
from clawlog.events.domain import all_event_classes
from tests.contracts.sample_events import SAMPLE_EVENTS

#: The PostgreSQL backend (issue 11) joins this list when it lands.
BACKENDS = ["memory", "sqlite", "postgres"]


def make_registry() -> EventRegistry:
    return EventRegistry((*all_event_classes(), *SAMPLE_EVENTS))


async def _open(kind: str, tmp_path: Path, registry: EventRegistry) -> EventStore:
    if kind == "memory":
        return await open_store(MemoryBackend(), registry=registry)
    if kind == "sqlite":
        return await open_store(SqliteBackend(tmp_path / "log.db"), registry=registry)
    if kind == "postgres":
        from tests.support.postgres import fresh_postgres_backend

        return await open_store(await fresh_postgres_backend(), registry=registry)
    raise AssertionError(kind)


@pytest.fixture(params=BACKENDS)
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[EventStore]:
    kind = request.param
    if kind == "postgres" and not os.environ.get("CLAWLOG_TEST_DATABASE_URL"):
        if os.environ.get("CI"):
            pytest.fail("CLAWLOG_TEST_DATABASE_URL is not set: run the tests via scripts/test.sh")
        pytest.skip("no PostgreSQL server: run the tests via scripts/test.sh")
    opened = await _open(kind, tmp_path, make_registry())
    try:
        yield opened
    finally:
        await opened.close()
