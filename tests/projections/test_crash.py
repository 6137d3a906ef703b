"""A runner in another process: SIGKILL during a batch loses nothing and duplicates
nothing on resume; a reader here waits on the checkpoint that process moves."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

import pytest

from clawlog.events import EventStore, open_store
from clawlog.projections import ProjectionRunner, ReadModels, SessionHistoryReader
from clawlog.projections.read_models.session_history import SessionHistory
from clawlog.projections.testing import dump_tables, write_mixed_log
from tests.projections.support import ROOT, PositionLog, rows, write_turns


async def start_child(log: Path, views: Path, *extra: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.projections.runner_child",
        str(log),
        str(views),
        *extra,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        cwd=ROOT,
    )


async def kill(child: asyncio.subprocess.Process) -> None:
    os.kill(child.pid, signal.SIGKILL)
    assert await child.wait() == -signal.SIGKILL
    assert child.stdin is not None
    child.stdin.close()


@pytest.mark.parametrize("stop_at", [1201, 1250], ids=["first-of-a-batch", "mid-batch"])
async def test_sigkill_in_a_batch_then_resume_applies_every_event_exactly_once(
    tmp_path: Path, stop_at: int
) -> None:
    log, views = tmp_path / "clawlog.db", tmp_path / "clawlog.views.db"
    store = await open_store(log)
    try:
        head = await write_mixed_log(store, 2500)
        child = await start_child(log, views, "--stop-at", str(stop_at))
        assert child.stdout is not None
        line = await asyncio.wait_for(child.stdout.readline(), 60)
        assert line.decode().strip() == f"blocked at {stop_at}"
        # Batches of 100: the ones before the blocked batch are committed, it is not.
        committed = rows(views, "SELECT name, position FROM projection_checkpoints")
        assert dict(committed) == {"position_log": 1200, "session_history": 1200}
        await kill(child)
        assert rows(views, "SELECT max(position), count(*) FROM position_log") == [(1200, 1200)]

        async with ProjectionRunner(store, views, [PositionLog(), SessionHistory()]) as runner:
            assert await runner.catch_up() == head
        logged = rows(views, "SELECT position FROM position_log ORDER BY position")
        assert logged == [(p,) for p in range(1, head + 1)]
        fresh = tmp_path / "fresh.db"
        async with ProjectionRunner(store, fresh, [PositionLog(), SessionHistory()]) as runner:
            await runner.catch_up()
        assert dump_tables(views) == dump_tables(fresh)
    finally:
        await store.close()


async def test_a_reader_waits_on_the_checkpoint_another_process_moves(tmp_path: Path) -> None:
    log, views = tmp_path / "clawlog.db", tmp_path / "clawlog.views.db"
    store: EventStore = await open_store(log)
    await write_turns(store, "session/a/u", ["before"])
    child = await start_child(log, views)
    try:
        assert child.stdout is not None
        assert await asyncio.wait_for(child.stdout.readline(), 60) == b"ready\n"
        async with ReadModels(views, poll_interval=0.005) as models:
            history = SessionHistoryReader(models)
            for n in range(3):
                written = await write_turns(store, "session/a/u", [f"after {n}"])
                await history.wait_until(written[-1].position, timeout=30)
                page = await history.page("session/a/u", after=written[0].position - 1)
                assert [e.text for e in page] == [f"after {n}", f"re: after {n}"]
    finally:
        await kill(child)
        await store.close()
