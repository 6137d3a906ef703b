"""A fresh PostgreSQL-backed log per test: its own schema in the server scripts/test.sh runs."""

from __future__ import annotations

import os
import uuid

from clawlog.events.backends.postgres import PostgresBackend


async def fresh_postgres_backend() -> PostgresBackend:
    url = os.environ["CLAWLOG_TEST_DATABASE_URL"]
    return PostgresBackend(url, schema=f"t_{uuid.uuid4().hex[:16]}", pool_size=4)
