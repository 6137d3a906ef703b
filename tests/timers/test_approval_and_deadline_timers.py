"""Approval timeouts and delegation deadlines are durable timers: set with what they wait
for, ended with what ended it, on the System's clock, and kept across a restart."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from clawlog.actors import System
from clawlog.actors.agents import AgentConfig
from clawlog.actors.providers import ModelReply, ModelRequest, ScriptedModel, call, reply
from clawlog.actors.timers import ManualClock
from clawlog.tools import ApprovalConfig
from tests.agents.test_approvals import register
from tests.support.waiting import count, wait_for_events

T0 = datetime(2026, 12, 7, 9, 0, tzinfo=UTC).timestamp()
SESSION = "session/main/u"


def of_type(seen: list[Any], kind: str) -> list[Any]:
    return [e.event for e in seen if e.type == kind]


async def test_an_approval_times_out_when_the_clock_passes_its_timeout(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    approvals = ApprovalConfig(timeout_s=120)
    async with System.open(tmp_path / "a.db", clock=clock, approvals=approvals) as system:
        await register(system, AgentConfig(key="main"))
        turn = asyncio.ensure_future(system.send("main", "u", "deploy it"))
        seen = await wait_for_events(system, SESSION, count("timer.set"))
        (timer,) = of_type(seen, "timer.set")
        assert (timer.kind, timer.subject, timer.due_at) == ("approval", "needs-ok", T0 + 120)
        # The request and its timeout are one append.
        requested = next(e for e in seen if e.type == "tool.approval_requested")
        assert next(e for e in seen if e.type == "timer.set").version == requested.version + 1
        clock.advance(119)
        clock.advance(1)
        assert "No one approved this deploy call within 120 s" in await turn
        events = await system.store.read_stream(SESSION)
        types = [e.type for e in events]
        fired = types.index("timer.fired")
        assert types[fired + 1] == "tool.approval_decided"
        assert events[fired].event.fired_at == T0 + 120


async def test_an_answer_cancels_the_timeout_in_the_same_append(tmp_path: Path) -> None:
    async with System.open(tmp_path / "a.db", clock=ManualClock(T0)) as system:
        await register(system, AgentConfig(key="main"))
        turn = asyncio.ensure_future(system.send("main", "u", "deploy it"))
        await wait_for_events(system, SESSION, count("timer.set"))
        await system.approve("main", "u", "needs-ok", "allow-once")
        assert await turn == "tool said: deployed to prod"
        events = await system.store.read_stream(SESSION)
        cancelled = next(e for e in events if e.type == "timer.cancelled")
        decided = next(e for e in events if e.type == "tool.approval_decided")
        assert cancelled.event.reason == "answered: allow-once"
        assert decided.version == cancelled.version + 1


async def test_an_approval_due_while_the_process_was_down_times_out_once_at_start(
    tmp_path: Path,
) -> None:
    path = tmp_path / "a.db"
    system = await System.open(path, clock=ManualClock(T0))
    await register(system, AgentConfig(key="main"))
    turn = asyncio.ensure_future(system.send("main", "u", "deploy it"))
    await wait_for_events(system, SESSION, count("timer.set"))
    await system.close()
    await asyncio.gather(turn, return_exceptions=True)
    # An hour later: past its 120 s. It times out at start, and the turn goes on.
    for _ in range(2):
        async with System.open(path, clock=ManualClock(T0 + 3600)) as again:
            await register(again, AgentConfig(key="main"))
            seen = await wait_for_events(again, SESSION, count("session.turn_completed"))
            (fired,) = of_type(seen, "timer.fired")
            assert (fired.late_s, fired.misfired) == (3480, True)
            (decided,) = of_type(seen, "tool.approval_decided")
            assert decided.decision == "timeout"


class SilentModel:
    """A delegation target's model that never answers (until its turn is cancelled)."""

    name = "silent"
    provider = "test"

    async def complete(self, request: ModelRequest) -> ModelReply:
        await asyncio.Event().wait()
        raise AssertionError("never answers")


def boss(request: ModelRequest) -> ModelReply:
    last = request.messages[-1]
    if last.role == "tool":
        return reply(f"boss heard: {last.content}")
    return call("delegate", agent="worker", task="sweep", mode="sync")


async def test_a_delegation_fails_when_the_clock_passes_its_deadline(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    async with System.open(tmp_path / "d.db", clock=clock) as system:
        await system.register_agent(AgentConfig(key="boss"), ScriptedModel(boss))
        await system.register_agent(
            AgentConfig(key="worker", delegation_deadline_s=600), SilentModel()
        )
        await system.link_agents("boss", "worker")
        turn = asyncio.ensure_future(system.send("boss", "u", "get it swept"))
        seen = await wait_for_events(system, "link/boss->worker", count("timer.set"))
        (timer,) = of_type(seen, "timer.set")
        assert (timer.kind, timer.due_at) == ("delegation_deadline", T0 + 600)
        clock.advance(600)
        assert "did not finish within the deadline" in await turn
        link = await system.store.read_stream("link/boss->worker")
        types = [e.type for e in link]
        assert types[-2:] == ["timer.fired", "delegation.failed"]
        assert link[-1].event.reason == "timeout"


async def test_an_answer_cancels_the_deadline_in_the_outcome_append(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    async with System.open(tmp_path / "d.db", clock=clock) as system:
        await system.register_agent(AgentConfig(key="boss"), ScriptedModel(boss))
        worker = ScriptedModel(lambda request: reply("swept"))
        await system.register_agent(AgentConfig(key="worker", delegation_deadline_s=600), worker)
        await system.link_agents("boss", "worker")
        assert (await system.send("boss", "u", "get it swept")).startswith("boss heard:")
        link = await system.store.read_stream("link/boss->worker")
        assert [e.type for e in link][-2:] == ["timer.cancelled", "delegation.completed"]


async def test_cancelling_a_turn_that_waits_for_an_approval_cancels_its_timeout(
    tmp_path: Path,
) -> None:
    async with System.open(tmp_path / "a.db", clock=ManualClock(T0)) as system:
        await register(system, AgentConfig(key="main"))
        turn = asyncio.ensure_future(system.send("main", "u", "deploy it"))
        await wait_for_events(system, SESSION, count("timer.set"))
        assert await system.cancel("main", "u")
        await asyncio.gather(turn, return_exceptions=True)
        seen = await wait_for_events(system, SESSION, count("timer.cancelled"))
        (cancelled,) = of_type(seen, "timer.cancelled")
        assert cancelled.reason == "the turn cancelled"
        types = [e.type for e in seen]
        assert types.index("session.turn_cancelled") < types.index("timer.cancelled")
