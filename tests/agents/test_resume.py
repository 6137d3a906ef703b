"""Resume on start: a turn interrupted by a killed process finishes when the agent is
registered again, with no message from the application, and its reply is in the outbox."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

from clawlog import AgentConfig, FunctionTool, ScriptedModel, System, ToolContext, reply
from clawlog.actors.providers import ModelReply, ModelRequest

ROOT = Path(__file__).parents[2]


async def kill_mid_turn(log: Path) -> None:
    """Run a turn in a child process until its tool blocks, then SIGKILL the child."""
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.agents.outbox_child",
        "interrupt",
        str(log),
        stdout=asyncio.subprocess.PIPE,
        cwd=ROOT,
    )
    assert child.stdout is not None
    try:
        line = await asyncio.wait_for(child.stdout.readline(), 60)
        assert line == b"tool started\n"
    finally:
        os.kill(child.pid, signal.SIGKILL)
        assert await child.wait() == -signal.SIGKILL


def after_restart(request: ModelRequest) -> ModelReply:
    last = request.messages[-1]
    return reply(f"resumed after: {last.content}")


async def test_an_interrupted_turn_resumes_on_start_and_its_reply_reaches_the_outbox(
    tmp_path: Path,
) -> None:
    log = tmp_path / "log.db"
    await kill_mid_turn(log)
    runs: list[str] = []

    async def count_runs(ctx: ToolContext, args: dict[str, object]) -> str:
        runs.append(ctx.session_key)
        return "ran again"

    tool = FunctionTool("wait_for_parent", count_runs, description="waits")
    async with System.open(log) as system:
        async with system.outbox() as outbox:
            model = ScriptedModel(after_restart)
            await system.register_agent(AgentConfig(key="main"), model, tools=[tool])
            first = await asyncio.wait_for(anext(outbox), 30)
            # The child's finished turn was answered in the child; the resumed one here.
            assert first.kind == "reply" and first.session_key == "done1"
            message = await asyncio.wait_for(anext(outbox), 30)
        assert (message.agent, message.session_key, message.kind) == ("main", "s1", "reply")
        assert message.resumed is True and message.sender == "user"
        assert (message.channel, message.chat_id, message.user) == ("web", "c9", "ann")
        assert message.text.startswith("resumed after: ")
        assert "interrupted by a restart" in message.text
        assert runs == []  # the interrupted call is not run twice
        events = await system.store.read_stream("session/main/s1")
        failed = [e.event for e in events if e.type == "tool.call_failed"]
        assert [(f.call_id, f.error_kind) for f in failed] == [("c1", "interrupted")]  # type: ignore[union-attr]
        assert sum(1 for e in events if e.type == "tool.call_started") == 1
        completed = [e for e in events if e.type == "session.turn_completed"]
        assert len(completed) == 1 and completed[0].correlation_id == message.turn_id
        assert message.correlation_id == message.turn_id
        # Only the session with an unfinished turn was started again.
        done = await system.store.read_stream("session/main/done1")
        assert sum(1 for e in done if e.type == "actor.started") == 1
        status = await system.session_status("main", "s1")
        assert (status.busy, status.turns_completed) == (False, 1)


async def test_an_agent_without_unfinished_turns_starts_no_session(tmp_path: Path) -> None:
    log = tmp_path / "log.db"
    echo = ScriptedModel(lambda request: reply("hi"))
    async with System.open(log) as system:
        await system.register_agent(AgentConfig(key="main"), echo)
        assert await system.send("main", "s1", "hello") == "hi"
    async with System.open(log) as system:
        await system.register_agent(AgentConfig(key="main"), echo)
        # A turn in another session runs after the resume pass (same supervisor mailbox).
        assert await system.send("main", "s2", "hello") == "hi"
        assert system.actor("session/main/s1") is None
        messages = [m async for m in system.outbox(follow=False)]
        assert [(m.session_key, m.resumed) for m in messages] == [("s1", False), ("s2", False)]
