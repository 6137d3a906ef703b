"""An agent given the workspace tools through the System (actors.workspace): file tools,
context files, memory documents and exec run through its tool pipeline, per (agent, user),
with their events in the log."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

from clawlog.actors import System
from clawlog.actors.agents import AgentConfig
from clawlog.actors.providers import ModelReply, ModelRequest, ScriptedModel, call, reply
from clawlog.actors.workspace import AgentWorkspaces
from clawlog.events import RecordedEvent
from clawlog.events.domain.tool import ToolCallCompleted, ToolCallFailed, ToolCallRefused
from clawlog.events.domain.workspace import ProcessStarted
from clawlog.tools.workspace.access import user_directory
from tests.agents.support import types

USER = "telegram:42"


def script(*steps: ModelReply) -> Callable[[ModelRequest], ModelReply]:
    """The first turn: one step per tool result so far, then "done"; later turns: "done"."""

    def next_step(request: ModelRequest) -> ModelReply:
        turn_start = max(i for i, m in enumerate(request.messages) if m.role == "user")
        if turn_start > 0:  # a later turn of the session only answers
            return reply("done")
        done = sum(1 for m in request.messages[turn_start:] if m.role == "tool")
        return steps[done] if done < len(steps) else reply("done")

    return next_step


def completed(events: list[RecordedEvent]) -> list[str]:
    """What the model was told by each call that completed, in order."""
    return [e.event.for_llm for e in events if isinstance(e.event, ToolCallCompleted)]


def failed(events: list[RecordedEvent]) -> list[str]:
    return [e.event.message for e in events if isinstance(e.event, ToolCallFailed)]


@contextlib.asynccontextmanager
async def opened(tmp_path: Path, **options: Any) -> AsyncIterator[tuple[System, AgentWorkspaces]]:
    """A System on a SQLite file with the workspaces under ``tmp_path / "ws"``."""
    async with (
        System.open(tmp_path / "log.db") as system,
        await AgentWorkspaces.open(system, tmp_path / "ws", **options) as workspaces,
    ):
        yield system, workspaces


async def wait_for(system: System, stream: str, event_type: str, timeout: float = 20) -> Any:
    """The first ``event_type`` on ``stream``, following the log live."""
    subscription = system.store.subscribe(1)
    async with asyncio.timeout(timeout):
        async for recorded in subscription:
            if recorded.stream == stream and recorded.type == event_type:
                await subscription.aclose()
                return recorded.event
    raise AssertionError(f"{event_type} never appeared on {stream}")


async def test_an_agent_writes_and_reads_a_file_in_its_users_workspace(tmp_path: Path) -> None:
    model = ScriptedModel(
        script(
            call("write_file", path="notes/todo.md", content="- ship it\n"),
            call("read", path="notes/todo.md"),
        )
    )
    async with opened(tmp_path) as (system, workspaces):
        await workspaces.register_agent(AgentConfig(key="main"), model)
        assert await system.send("main", "s1", "note it", user=USER) == "done"
        events = await system.store.read_stream("session/main/s1")
    user_root = tmp_path / "ws" / "main" / "users" / user_directory(USER)
    assert (user_root / "notes" / "todo.md").read_text() == "- ship it\n"
    assert "1\t- ship it" in completed(events)[1]
    assert types(events).count("tool.call_completed") == 2
    offered = {tool.name for tool in model.requests[0].tools}
    assert {
        "read_file",
        "read",
        "write_file",
        "edit",
        "ls",
        "grep",
        "find",
        "apply_patch",
    } <= offered
    assert {"exec", "process", "memory_search", "memory_get"} <= offered


async def test_a_traversal_is_refused_in_the_session_with_the_seed_wording(tmp_path: Path) -> None:
    model = ScriptedModel(script(call("read_file", path="../../etc/passwd")))
    async with opened(tmp_path) as (system, workspaces):
        await workspaces.register_agent(AgentConfig(key="main"), model)
        await system.send("main", "s1", "read it", user=USER)
        events = await system.store.read_stream("session/main/s1")
    assert failed(events) == [
        "read_file failed: path traversal detected: ../../etc/passwd climbs above the workspace"
    ]


async def test_context_files_and_memory_are_events_that_survive_a_restart(tmp_path: Path) -> None:
    writes = ScriptedModel(
        script(
            call("write_file", path="USER.md", content="Prefers short answers."),
            call("write_file", path="MEMORY.md", content="The launch is on Friday."),
        )
    )
    config = AgentConfig(key="main", kind="open", context_files={"SOUL.md": "Be kind."})
    async with opened(tmp_path) as (system, workspaces):
        await workspaces.register_agent(config, writes)
        await system.send("main", "s1", "remember", user=USER)
        await system.send("main", "s1", "again", user=USER)
        stored = await system.store.read_stream("workspace/main")
    assert types(stored) == [
        "workspace.context_file_written",
        "workspace.memory_document_written",
    ]
    assert not (tmp_path / "ws" / "main" / "users" / user_directory(USER) / "USER.md").exists()
    assert "Prefers short answers." in writes.requests[-1].system  # the prompt reads USER.md
    reads = ScriptedModel(
        script(
            call("read_file", path="USER.md"),
            call("memory_search", query="launch"),
            call("read_file", path="SOUL.md"),
        )
    )
    async with opened(tmp_path) as (system, workspaces):
        await workspaces.register_agent(config, reads)
        await system.send("main", "s2", "recall", user=USER)
        events = await system.store.read_stream("session/main/s2")
    results = completed(events)
    assert "Prefers short answers." in results[0]
    assert "MEMORY.md" in results[1] and "Friday" in results[1]
    assert "Be kind." in results[2]  # an open agent's user falls back to the agent file


async def test_exec_runs_in_the_users_workspace_and_reports_the_exit_code(tmp_path: Path) -> None:
    model = ScriptedModel(script(call("exec", command="echo hi > made.txt && pwd && exit 3")))
    async with opened(tmp_path) as (system, workspaces):
        await workspaces.register_agent(AgentConfig(key="main"), model)
        await system.send("main", "s1", "run it", user=USER)
        events = await system.store.read_stream("session/main/s1")
    user_root = tmp_path / "ws" / "main" / "users" / user_directory(USER)
    message = failed(events)[0]
    assert message.endswith("[exit code 3]") and str(user_root.resolve()) in message
    assert (user_root / "made.txt").read_text() == "hi\n"


async def test_a_denied_command_is_refused_before_it_runs(tmp_path: Path) -> None:
    model = ScriptedModel(
        script(
            call("exec", command="sh -c 'touch gone; rm -rf /'"),
            call("exec", command="touch gone; r''m -rf /"),  # quoted past a plain regex
        )
    )
    async with opened(tmp_path) as (system, workspaces):
        await workspaces.register_agent(AgentConfig(key="main"), model)
        await system.send("main", "s1", "clean up", user=USER)
        events = await system.store.read_stream("session/main/s1")
    refused = [e.event for e in events if isinstance(e.event, ToolCallRefused)]
    assert [(r.step, r.rule) for r in refused] == [("approval", "deny pattern 'rm -rf'")] * 2
    # the wrapped and the quoted one alike: the deny table sees commands as exec does
    assert all("deny pattern 'rm -rf' (destructive file ops)" in r.for_llm for r in refused)
    assert failed(events) == [] and not any(e.type == "tool.call_started" for e in events)
    assert not (tmp_path / "ws" / "main" / "users" / user_directory(USER) / "gone").exists()


async def test_a_background_process_is_recorded_and_killed_when_its_session_ends(
    tmp_path: Path,
) -> None:
    model = ScriptedModel(script(call("exec", command="echo started; sleep 60", background=True)))
    config = AgentConfig(key="main", idle_timeout_s=0.2)
    async with opened(tmp_path) as (system, workspaces):
        await workspaces.register_agent(config, model)
        await system.send("main", "s1", "start it", user=USER)
        exited = await wait_for(system, "exec/main/s1", "process.exited")
        stream = await system.store.read_stream("exec/main/s1")
    assert exited.reason == "killed"
    started = stream[0].event
    assert isinstance(started, ProcessStarted) and started.command == "echo started; sleep 60"
