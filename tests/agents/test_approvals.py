"""Approvals: allow, deny, timeout, and a pending approval that survives a restart."""

from __future__ import annotations

import asyncio
from pathlib import Path

from actors import System
from actors.agents import AgentConfig
from actors.agents.actor_tools import ACTOR_TOOLS
from actors.agents.tool_gateway import SimpleGateway
from actors.models import ModelReply, ModelRequest, ScriptedModel, call, reply


def asker(request: ModelRequest) -> ModelReply:
    last = request.messages[-1]
    if last.role == "tool":
        return reply(f"tool said: {last.content}")
    return call("sessions_list", call_id="needs-ok")


def gated(system: System, config: AgentConfig, timeout: float = 60) -> SimpleGateway:
    tools = [cls(system.runtime.services, system.runtime.store) for cls in ACTOR_TOOLS]
    return SimpleGateway(
        config, tools, approval_required=["sessions_list"], approval_timeout_s=timeout
    )


async def wait_for_type(system: System, stream: str, event_type: str) -> None:
    async with system.store.subscribe(1, stream_prefix=stream) as events:
        async for recorded in events:
            if recorded.stream == stream and recorded.type == event_type:
                return


async def test_allow_once_runs_the_call(tmp_path: Path) -> None:
    async with System.open(tmp_path / "log.db") as system:
        config = AgentConfig(key="main")
        await system.register_agent(config, ScriptedModel(asker), gateway=gated(system, config))
        turn = asyncio.ensure_future(system.send("main", "u", "list"))
        await wait_for_type(system, "session/main/u", "tool.approval_requested")
        assert (await system.session_status("main", "u")).awaiting_approval == ["needs-ok"]
        assert await system.approve("main", "u", "needs-ok", "allow-once", by="ops")
        assert (await turn).startswith("tool said: [")
        decided = [
            e.event
            for e in await system.store.read_stream("session/main/u")
            if e.type == "tool.approval_decided"
        ]
        assert [(d.decision, d.by) for d in decided] == [("allow-once", "ops")]  # type: ignore[union-attr]


async def test_deny_and_timeout_refuse_the_call(tmp_path: Path) -> None:
    async with System.open(tmp_path / "log.db") as system:
        config = AgentConfig(key="main")
        await system.register_agent(
            config, ScriptedModel(asker), gateway=gated(system, config, timeout=0.2)
        )
        turn = asyncio.ensure_future(system.send("main", "u", "list"))
        await wait_for_type(system, "session/main/u", "tool.approval_requested")
        await system.approve("main", "u", "needs-ok", "deny")
        assert "denied by user" in await turn
        timed_out = await system.send("main", "u2", "list")
        assert "the approval timed out" in timed_out
        events = await system.store.read_stream("session/main/u2")
        assert "tool.call_started" not in [e.type for e in events]


async def test_a_pending_approval_survives_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "log.db"
    system = await System.open(path)
    config = AgentConfig(key="main")
    await system.register_agent(config, ScriptedModel(asker), gateway=gated(system, config))
    turn = asyncio.ensure_future(system.send("main", "u", "list"))
    await wait_for_type(system, "session/main/u", "tool.approval_requested")
    await system.close()
    await asyncio.gather(turn, return_exceptions=True)
    async with System.open(path) as again:
        await again.register_agent(config, ScriptedModel(asker), gateway=gated(again, config))
        status = await again.session_status("main", "u")
        assert status.busy and status.awaiting_approval == ["needs-ok"]
        await again.approve("main", "u", "needs-ok", "allow-once")
        await wait_for_type(again, "session/main/u", "session.turn_completed")
        requested = [
            e
            for e in await again.store.read_stream("session/main/u")
            if e.type == "tool.approval_requested"
        ]
        assert len(requested) == 1  # waiting again is not a second request
