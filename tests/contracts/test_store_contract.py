"""The store contract (:mod:`clawlog.events.testing`) run against every backend we ship.

A new backend adds one subclass here.
"""

from __future__ import annotations

from pathlib import Path

from clawlog.events import MemoryBackend, SqliteBackend, StorageBackend
from clawlog.events.testing import StoreContract


class TestMemoryBackend(StoreContract):
    async def make_backend(self, tmp_path: Path) -> StorageBackend:
        return MemoryBackend()


class TestSqliteBackend(StoreContract):
    async def make_backend(self, tmp_path: Path) -> StorageBackend:
        return SqliteBackend(tmp_path / "log.db")


class TestPostgresBackend(StoreContract):
    async def make_backend(self, tmp_path: Path) -> StorageBackend:
        from tests.support.postgres import database_url, fresh_postgres_backend  # asyncpg

        database_url()  # skips without a server (fails in CI)
        return await fresh_postgres_backend()
