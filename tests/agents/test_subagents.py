"""Subagents through the port their tools use: limits, sync and async, announce, cancel."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from clawlog.actors import Rejected, System
from clawlog.actors.agents import AgentConfig, CallerContext, SubagentLimits
from clawlog.actors.agents.ports import AgentPorts
from clawlog.actors.providers import ModelReply, ModelRequest, reply
from tests.agents.support import Gate

RELEASE = Gate()


class Brain:
    """The agent's model: parents say ok, subagents do their task ("slow" ones wait)."""

    name = "brain"
    provider = "scripted"

    async def complete(self, request: ModelRequest) -> ModelReply:
        last = request.messages[-1].content
        if "slow" in last and last.startswith("[parent] "):
            await RELEASE.wait()
        return brain(request)


def brain(request: ModelRequest) -> ModelReply:
    last = request.messages[-1].content
    if "[subagent results" in last:
        return reply("parent saw: " + last.splitlines()[1])
    if last.startswith("[parent] "):
        return reply(f"done {last.removeprefix('[parent] ')}")
    return reply("ok")


def parent_ctx(depth: int = 0) -> CallerContext:
    return CallerContext(
        agent="main", session_key="p", session_stream="session/main/p", depth=depth
    )


async def open_main(tmp_path: Path, **limits: object) -> tuple[System, AgentPorts]:
    system = await System.open(tmp_path / "log.db")
    limits = {"announce_debounce_s": 0.3, **limits}
    config = AgentConfig(key="main", subagents=SubagentLimits(**limits))  # type: ignore[arg-type]
    await system.register_agent(config, Brain())
    await system.send("main", "p", "hello")
    return system, system.runtime.services["agents"]


async def next_parent_reply(system: System, after: int) -> str:
    async with system.store.subscribe(after + 1, stream_prefix="session/main/p") as events:
        async for recorded in events:
            if recorded.type == "session.turn_completed":
                return recorded.event.reply  # type: ignore[union-attr, no-any-return]
    raise AssertionError


async def test_sync_spawn_waits_for_the_result(tmp_path: Path) -> None:
    system, ports = await open_main(tmp_path)
    async with system:
        info = await ports.spawn_subagent(parent_ctx(), "count the files", label="count", wait=True)
        assert (info.status, info.result, info.depth) == ("completed", "done count the files", 1)
        sub = await system.store.read_stream(f"subagent/{info.task_id}")
        started = next(e.event for e in sub if e.type == "session.started")
        assert (started.parent, started.depth) == ("session/main/p", 1)  # type: ignore[union-attr]
        book = [e.type for e in await system.store.read_stream("agent/main")]
        assert book[-2:] == ["subagent.spawned", "subagent.finished"]


async def test_async_results_are_announced_to_the_parent_debounced(tmp_path: Path) -> None:
    # Both subagents must finish within the window of the first: a window only a hang
    # outlasts, so a busy machine cannot split them into two announcements.
    system, ports = await open_main(tmp_path, announce_debounce_s=3.0)
    async with system:
        head = await system.store.head_position()
        first = await ports.spawn_subagent(parent_ctx(), "task A", label="A")
        second = await ports.spawn_subagent(parent_ctx(), "task B", label="B")
        assert first.status == "running" and first.task_id != second.task_id
        answer = await asyncio.wait_for(next_parent_reply(system, head), 60)
        assert answer.startswith("parent saw: - A (") and answer.endswith("done task A")
        turns = [
            e.event.text
            for e in await system.store.read_stream("session/main/p")  # type: ignore[union-attr]
            if e.type == "session.turn_started"
        ]
        assert "2 task(s) finished" in turns[-1]
        assert "done task A" in turns[-1] and "done task B" in turns[-1]
        announced = [
            e.event
            for e in await system.store.read_stream("agent/main")
            if e.type == "subagent.announced"
        ]
        assert sum(len(a.task_ids) for a in announced) == 2  # type: ignore[union-attr]
        assert len(announced) == 1  # both finished within the debounce window


async def test_spawn_limits_refuse_with_words_the_model_can_act_on(tmp_path: Path) -> None:
    RELEASE.clear()
    system, ports = await open_main(tmp_path, max_children_per_agent=1, max_spawn_depth=1)
    async with system:
        with pytest.raises(Rejected, match="spawn depth limit reached"):
            await ports.spawn_subagent(parent_ctx(depth=1), "nested")
        slow = await ports.spawn_subagent(parent_ctx(), "slow job")
        with pytest.raises(Rejected, match=r"too many subagents for this session \(1/1 running\)"):
            await ports.spawn_subagent(parent_ctx(), "second")
        assert [t.task_id for t in await ports.list_subagents(parent_ctx())] == [slow.task_id]
        assert await ports.cancel_subagents(parent_ctx(), "last") == [slow.task_id]
        RELEASE.set()
        finished = [
            e.event
            for e in await system.store.read_stream("agent/main")
            if e.type == "subagent.finished"
        ]
        assert [(f.task_id, f.status) for f in finished] == [(slow.task_id, "cancelled")]  # type: ignore[union-attr]
        refused = [
            e.event.reason
            for e in await system.store.read_stream("agent/main")  # type: ignore[union-attr]
            if e.type == "subagent.refused"
        ]
        assert len(refused) == 2 and "depth" in refused[0] and "1/1" in refused[1]


async def test_steer_cancels_and_respawns_with_the_new_message(tmp_path: Path) -> None:
    RELEASE.clear()
    system, ports = await open_main(tmp_path)
    async with system:
        slow = await ports.spawn_subagent(parent_ctx(), "slow original")
        steered = await ports.steer_subagent(parent_ctx(), slow.task_id, "do this instead")
        RELEASE.set()
        tasks = {t.task_id: t for t in await ports.list_subagents(parent_ctx())}
        assert tasks[slow.task_id].status == "cancelled"
        assert steered.task_id in tasks and steered.task == "do this instead"
        book = [e.type for e in await system.store.read_stream("agent/main")]
        assert "subagent.steered" in book


async def test_global_concurrency_limit(tmp_path: Path) -> None:
    system, ports = await open_main(tmp_path, max_concurrent=1)
    async with system:
        taken = system.runtime.take_slot("subagents", 1)
        assert taken == 1  # another parent holds the only slot
        with pytest.raises(Rejected, match=r"too many subagents running in the system \(1/1\)"):
            await ports.spawn_subagent(parent_ctx(), "x")
        system.runtime.give_slot("subagents")
        info = await ports.spawn_subagent(parent_ctx(), "x", wait=True)
        assert info.status == "completed"
        assert system.runtime.slots_used("subagents") == 0
