"""Approvals: allow, deny, timeout, and a pending approval that survives a restart."""

from __future__ import annotations

import asyncio
from pathlib import Path

import msgspec
import pytest

from clawlog.actors import System
from clawlog.actors.agents import AgentConfig
from clawlog.actors.providers import ModelReply, ModelRequest, ScriptedModel, call, reply
from clawlog.tools import ApprovalConfig, FunctionTool


def asker(request: ModelRequest) -> ModelReply:
    last = request.messages[-1]
    if last.role == "tool":
        return reply(f"tool said: {last.content}")
    return call("deploy", call_id="needs-ok", target="prod")


async def deploy(ctx: object, args: dict[str, object]) -> str:
    return f"deployed to {args['target']}"


DEPLOY = FunctionTool(
    "deploy",
    deploy,
    description="Deploy a build",
    requires_approval=True,
    parameters={
        "type": "object",
        "properties": {"target": {"type": "string"}},
        "required": ["target"],
    },
)


async def register(system: System, config: AgentConfig) -> None:
    await system.register_agent(config, ScriptedModel(asker), tools=[DEPLOY])


async def wait_for_type(system: System, stream: str, event_type: str) -> None:
    async with system.store.subscribe(1, stream_prefix=stream) as events:
        async for recorded in events:
            if recorded.stream == stream and recorded.type == event_type:
                return


async def test_allow_once_runs_the_call(tmp_path: Path) -> None:
    async with System.open(tmp_path / "log.db") as system:
        await register(system, AgentConfig(key="main"))
        turn = asyncio.ensure_future(system.send("main", "u", "deploy it"))
        await wait_for_type(system, "session/main/u", "tool.approval_requested")
        assert (await system.session_status("main", "u")).awaiting_approval == ["needs-ok"]
        assert await system.approve("main", "u", "needs-ok", "allow-once", by="ops")
        assert await turn == "tool said: deployed to prod"
        decided = [
            e.event
            for e in await system.store.read_stream("session/main/u")
            if e.type == "tool.approval_decided"
        ]
        assert [(d.decision, d.by) for d in decided] == [("allow-once", "ops")]  # type: ignore[union-attr]


async def test_deny_and_timeout_refuse_the_call(tmp_path: Path) -> None:
    async with System.open(tmp_path / "log.db", approvals=ApprovalConfig(timeout_s=0.2)) as system:
        assert system.approvals.timeout_s == 0.2
        await register(system, AgentConfig(key="main"))
        # The deny must find its request still pending however busy the machine is: that
        # agent waits a minute; the system-wide 0.2 s is for the timeout below.
        await register(system, AgentConfig(key="patient", approvals=ApprovalConfig(timeout_s=60)))
        turn = asyncio.ensure_future(system.send("patient", "u", "deploy it"))
        await wait_for_type(system, "session/patient/u", "tool.approval_requested")
        await system.approve("patient", "u", "needs-ok", "deny")
        assert "The user denied this deploy call" in await turn
        timed_out = await system.send("main", "u2", "deploy it")
        assert "No one approved this deploy call within 0.2 s" in timed_out
        events = await system.store.read_stream("session/main/u2")
        assert "tool.call_started" not in [e.type for e in events]


async def test_a_pending_approval_survives_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "log.db"
    system = await System.open(path)
    await register(system, AgentConfig(key="main"))
    turn = asyncio.ensure_future(system.send("main", "u", "deploy it"))
    await wait_for_type(system, "session/main/u", "tool.approval_requested")
    await system.close()
    await asyncio.gather(turn, return_exceptions=True)
    async with System.open(path) as again:
        await register(again, AgentConfig(key="main"))
        status = await again.session_status("main", "u")
        assert status.busy and status.awaiting_approval == ["needs-ok"]
        await again.approve("main", "u", "needs-ok", "allow-once")
        await wait_for_type(again, "session/main/u", "session.turn_completed")
        events = await again.store.read_stream("session/main/u")
        [completed] = [e.event for e in events if e.type == "session.turn_completed"]
        assert completed.reply == "tool said: deployed to prod"  # type: ignore[union-attr]
        assert len([e for e in events if e.type == "tool.approval_requested"]) == 1


async def test_an_agents_own_approvals_replace_the_system_wide_ones(tmp_path: Path) -> None:
    locked = AgentConfig(key="locked", approvals=ApprovalConfig(security="deny"))
    async with System.open(tmp_path / "log.db", approvals=ApprovalConfig(timeout_s=0.2)) as system:
        await register(system, AgentConfig(key="main"))
        await register(system, locked)
        assert "No one approved this deploy call within 0.2 s" in await system.send(
            "main", "u", "deploy it"
        )
        refused = await system.send("locked", "u", "deploy it")
        assert "deploy is disabled here (security mode deny)" in refused
        events = await system.store.read_stream("session/locked/u")
        assert "tool.approval_requested" not in [e.type for e in events]
        [registered] = [
            e.event
            for e in await system.store.read_stream("agent/locked")
            if e.type == "agent.registered"
        ]
        recorded = registered.config  # type: ignore[union-attr]
        assert recorded["approvals"]["security"] == "deny"
        assert msgspec.convert(recorded, AgentConfig) == locked


def test_a_config_recorded_before_approvals_existed_still_reads() -> None:
    assert msgspec.convert({"key": "main"}, AgentConfig).approvals is None


async def test_approval_settings_of_the_wrong_type_are_refused_at_the_entry(
    tmp_path: Path,
) -> None:
    with pytest.raises(TypeError, match=r"approvals: must be a clawlog\.ApprovalConfig"):
        System.open(tmp_path / "log.db", approvals={"timeout_s": 5})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"AgentConfig\.approvals"):
        AgentConfig(key="main", approvals={"ask": "always"})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"ApprovalConfig\.security must be one of"):
        ApprovalConfig(security="sometimes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"ApprovalConfig\.timeout_s must be positive"):
        ApprovalConfig(timeout_s=0)
    assert not (tmp_path / "log.db").exists()
