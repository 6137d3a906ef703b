"""A fresh PostgreSQL-backed log per test: its own schema in the server scripts/test.sh runs."""

from __future__ import annotations

import os
import subprocess
import uuid
from pathlib import Path

import pytest

from clawlog.events.backends.postgres import PostgresBackend

ROOT = Path(__file__).parents[2]


async def fresh_postgres_backend() -> PostgresBackend:
    url = os.environ["CLAWLOG_TEST_DATABASE_URL"]
    return PostgresBackend(url, schema=f"t_{uuid.uuid4().hex[:16]}", pool_size=4)


def database_url() -> str:
    """The server's URL, or skip (fail in CI: a missing service never skips there)."""
    url = os.environ.get("CLAWLOG_TEST_DATABASE_URL")
    if not url:
        if os.environ.get("CI"):
            pytest.fail("CLAWLOG_TEST_DATABASE_URL is not set: run the tests via scripts/test.sh")
        pytest.skip("no PostgreSQL server: run the tests via scripts/test.sh")
    return url


def pg_ctl(action: str) -> None:
    """Run ``scripts/postgres.sh ACTION`` on the test server (stop-fast, start-again, ...)."""
    data = os.environ.get("CLAWLOG_TEST_PG_DIR")
    if not data:
        pytest.skip("CLAWLOG_TEST_PG_DIR is not set (scripts/test.sh sets it)")
    subprocess.run(
        ["bash", str(ROOT / "scripts" / "postgres.sh"), action, data],
        check=True,
        capture_output=True,
        timeout=120,
    )
