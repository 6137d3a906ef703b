"""A recorded session on a real SQLite file: tool calls, an approval, two turns."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from clawlog.actors import System, TurnFailedError
from clawlog.actors.agents import AgentConfig
from clawlog.actors.providers import ModelReply, ScriptedModel, call, calls, reply
from clawlog.events import EventStore
from clawlog.tools import FunctionTool

SESSION = "session/main/u1"


class Deploys:
    """A tool needing approval that counts its runs (a re-run must never run it)."""

    def __init__(self) -> None:
        self.runs: list[str] = []
        self.tool = FunctionTool(
            "deploy",
            self._deploy,
            description="Deploy a build",
            requires_approval=True,
            parameters={
                "type": "object",
                "properties": {"target": {"type": "string"}},
                "required": ["target"],
            },
        )

    async def _deploy(self, ctx: object, args: dict[str, Any]) -> str:
        self.runs.append(str(args["target"]))
        return f"deployed to {args['target']}"


def first_reply(message: str = "hi", target: str = "prod") -> ModelReply:
    return calls(
        [("echo", {"message": message}), ("deploy", {"target": target})],
        ids=["c-echo", "c-deploy"],
    )


def script() -> list[ModelReply]:
    """The model of the recording: turn 1 echoes and deploys, turn 2 echoes again."""
    return [
        first_reply(),
        reply("echoed and deployed"),
        call("echo", call_id="c-echo2", message="again"),
        reply("bye"),
    ]


async def record_session(path: Path, deploys: Deploys) -> None:
    async with System.open(path) as system:
        await system.register_agent(
            AgentConfig(key="main"), ScriptedModel(script()), tools=[deploys.tool]
        )
        turn = asyncio.ensure_future(system.send("main", "u1", "deploy it", user="ann"))
        await wait_for_type(system, SESSION, "tool.approval_requested")
        await system.approve("main", "u1", "c-deploy", "allow-once", by="ops")
        assert await turn == "echoed and deployed"
        assert await system.send("main", "u1", "once more", user="ann") == "bye"


async def record_looping_session(path: Path) -> None:
    """A turn stopped by the iteration limit (1): the model only ever calls echo."""
    looping = ScriptedModel(lambda request: call("echo", message="more"))
    async with System.open(path) as system:
        await system.register_agent(AgentConfig(key="loop", max_iterations=1), looping)
        with pytest.raises(TurnFailedError, match="iteration"):
            await system.send("loop", "u1", "go on")


async def wait_for_type(system: System, stream: str, event_type: str) -> None:
    async with system.store.subscribe(1, stream_prefix=stream) as events:
        async for recorded in events:
            if recorded.stream == stream and recorded.type == event_type:
                return


async def log_rows(store: EventStore) -> list[tuple[int, str, str]]:
    rows = []
    position = 1
    while page := await store.read_all(position, 1000):
        rows += [(e.position, e.stream, e.type) for e in page]
        position = page[-1].position + 1
    return rows


async def position_of(store: EventStore, event_type: str, call_id: str = "") -> int:
    for recorded in await store.read_stream(SESSION):
        if recorded.type == event_type and getattr(recorded.event, "call_id", "") == call_id:
            return recorded.position
    raise AssertionError(f"no {event_type} for {call_id!r}")
