"""Timers across real processes: killed before due, restarted after; two PostgreSQL
processes on one log. The clock of each process starts where the test says."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import uuid
from datetime import UTC, datetime
from pathlib import Path

from clawlog.actors import System
from clawlog.actors.agents import AgentConfig
from clawlog.actors.automation import Trigger
from clawlog.actors.providers import ScriptedModel, reply
from clawlog.actors.timers import ManualClock
from tests.support.postgres import database_url

T0 = datetime(2026, 12, 7, 9, 0, tzinfo=UTC).timestamp()
HOUR = 3600.0
ROOT = Path(__file__).parents[2]


def child(log: str, start: float, *action: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.timers.timer_child", log, repr(start), *action],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finished(process: subprocess.Popen[str]) -> list[str]:
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    return out.splitlines()


def test_a_process_killed_before_a_timer_is_due_fires_it_once_after_a_restart(
    tmp_path: Path,
) -> None:
    log = str(tmp_path / "killed.db")
    first = child(log, T0, "define")
    assert first.stdout is not None
    assert first.stdout.readline().strip() == "ready"  # the routine and its timer are durable
    os.kill(first.pid, signal.SIGKILL)
    first.communicate(timeout=60)  # reaps it and closes its pipes
    # Restarted five hours later: the 10:00 run was missed while it was down.
    late = T0 + 5 * HOUR
    assert finished(child(log, late, "serve", "1")) == ["served", "runs 1"]
    # Restarted again, later still, then its next hour passes: one run per occurrence.
    assert finished(child(log, late + 60, "advance", str(HOUR), "2")) == ["served", "runs 2"]


async def define_on_postgres(url: str, schema: str) -> None:
    async with System.open(url, schema=schema, clock=ManualClock(T0)) as system:
        await system.register_agent(AgentConfig(key="ops"), ScriptedModel(lambda r: reply("ok")))
        await system.routines.define("ops", "tick", "Tick.", Trigger.every(HOUR))


def test_two_postgresql_processes_fire_each_timer_once() -> None:
    url = database_url()
    schema = f"t_{uuid.uuid4().hex[:16]}"
    asyncio.run(define_on_postgres(url, schema))
    log = f"{url}#{schema}"
    for occurrence in (1, 2):
        start = T0 + occurrence * HOUR + 1
        both = [child(log, start, "serve", str(occurrence)) for _ in range(2)]
        outputs = [finished(process) for process in both]
        served = [o for o in outputs if o[0] == "served"]
        assert served, outputs
        # Whoever owned the agent served it; the log has one run per occurrence.
        assert all(o[1] == f"runs {occurrence}" for o in served), outputs
        assert all(
            o == ["served", f"runs {occurrence}"] or o == ["owned elsewhere"] for o in outputs
        )
