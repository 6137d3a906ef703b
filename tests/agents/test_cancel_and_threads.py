"""Cancelling a turn while a tool runs; threads follow active sessions, not all sessions."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from clawlog.actors import System, TurnCancelledError
from clawlog.actors.agents import AgentConfig
from clawlog.actors.providers import ModelReply, ModelRequest, ScriptedModel, call, reply
from clawlog.tools import FunctionTool

STARTED = threading.Event()


async def slow(ctx: object, args: dict[str, object]) -> str:
    STARTED.set()
    await asyncio.Event().wait()  # runs until the turn is cancelled
    return "never"


SLOW = FunctionTool(
    "slow_job", slow, description="takes long", parameters={"type": "object", "properties": {}}
)


def brain(request: ModelRequest) -> ModelReply:
    return call("slow_job") if request.messages[-1].role == "user" else reply("done")


async def test_cancel_during_a_tool_call_interrupts_it_and_records_why(tmp_path: Path) -> None:
    STARTED.clear()
    async with System.open(tmp_path / "log.db") as system:
        await system.register_agent(AgentConfig(key="main"), ScriptedModel(brain), tools=[SLOW])
        turn = asyncio.ensure_future(system.send("main", "u", "go"))
        await asyncio.get_running_loop().run_in_executor(None, STARTED.wait, 10)
        assert await system.cancel("main", "u", by="alice")
        with pytest.raises(TurnCancelledError, match="cancelled by alice"):
            await turn
        events = await system.store.read_stream("session/main/u")
        failed = [e.event for e in events if e.type == "tool.call_failed"]
        assert failed and failed[0].error_kind == "interrupted"  # type: ignore[union-attr]
        assert [e.type for e in events][-1] == "session.turn_cancelled"


async def test_threads_follow_active_sessions(tmp_path: Path) -> None:
    before = threading.active_count()
    async with System.open(tmp_path / "log.db") as system:
        config = AgentConfig(key="main", idle_timeout_s=0.05)
        await system.register_agent(config, ScriptedModel(lambda r: reply("hi")))
        await asyncio.gather(*(system.send("main", f"s{i}", "hello") for i in range(200)))
        async with system.store.subscribe(1, types=["actor.stopped"]) as stopped:
            seen = 0
            async for _ in stopped:
                seen += 1
                if seen == 200:
                    break
        # actor.stopped is recorded just before a session's thread ends: wait for the ends
        # (a thread that never ends fails the count below).
        sessions = [t for t in threading.enumerate() if t.name.startswith("Session-")]
        await asyncio.to_thread(lambda: [t.join(60) for t in sessions])
        assert threading.active_count() - before < 20
        assert (await system.session_status("main", "s7")).turns_completed == 1
