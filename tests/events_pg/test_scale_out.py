"""Scale-out across processes: two writer Systems on disjoint sessions and a projection
runner in a third process, all on one PostgreSQL log; the live read models equal a rebuild."""

from __future__ import annotations

import asyncio
import contextlib
import sys
import uuid
from pathlib import Path

import pytest

from clawlog.events import EventStore, open_store
from clawlog.events.backends.postgres import PostgresBackend
from clawlog.projections import ALL_PROJECTIONS, ReadModels, rebuild
from clawlog.projections.testing import dump_tables

ROOT = Path(__file__).parents[2]
PIPE = asyncio.subprocess.PIPE
pytestmark = pytest.mark.postgres


async def child(module: str, *args: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", f"tests.events_pg.{module}", *args, stdin=PIPE, stdout=PIPE, cwd=ROOT
    )


async def test_two_writers_and_a_live_projection_process_equal_a_rebuild(
    pg_url: str, tmp_path: Path
) -> None:
    name = f"t_{uuid.uuid4().hex[:16]}"
    store: EventStore = await open_store(PostgresBackend(pg_url, schema=name))
    live, rebuilt = tmp_path / "live.views.db", tmp_path / "rebuilt.views.db"
    runner = await child("pg_projection_runner", pg_url, name, str(live))
    try:
        assert runner.stdout is not None and runner.stdin is not None
        assert await asyncio.wait_for(runner.stdout.readline(), 60) == b"ready\n"
        writers = [await child("pg_agent_writer", pg_url, name, agent, "4") for agent in ("a", "b")]
        outputs = [await asyncio.wait_for(w.communicate(), 180) for w in writers]
        assert [w.returncode for w in writers] == [0, 0], outputs
        head = await store.head_position()
        assert head >= max(int(out) for out, _ in outputs)

        async with ReadModels(live, poll_interval=0.01) as models:
            await models.wait_until(head, timeout=60)  # the runner follows live to the head
            sessions = await models.query(
                "SELECT DISTINCT stream FROM session_history ORDER BY stream"
            )
            refused = await models.query("SELECT count(*) FROM tool_audit WHERE status = 'refused'")
        runner.stdin.close()
        assert await asyncio.wait_for(runner.wait(), 60) == 0

        assert sessions == [(f"session/{a}/user{u}",) for a in "ab" for u in range(3)]
        assert refused == [(24,)]  # one refusal per turn: 2 writers x 3 users x 4
        projections = [p() for p in ALL_PROJECTIONS]
        assert await rebuild(store, rebuilt, projections, show_progress=False) == head
        assert dump_tables(live) == dump_tables(rebuilt)
    finally:
        if runner.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                runner.kill()
            await runner.wait()
        await store.close()
