"""An embedding application in a child process, killed while a held step waits.

python -m tests.agents.held_calls_child LOG [tool|model]
    starts a turn whose model asks for a ``lookup`` that only reads (``side_effects =
    "none"``), with ``AgentConfig.read_hold_s`` far longer than the test: the reply and
    the call's start are held, not appended, while it runs. ``tool`` (the default): the
    tool prints "started" and blocks until the process is killed. ``model``: the tool
    answers, and the model's next request (held with the step) prints "asked" and
    blocks until the process is killed.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

from clawlog import AgentConfig, FunctionTool, ScriptedModel, System
from clawlog.actors.providers import ModelReply, ModelRequest, call, reply

AGENT_KEY, KEY = "main", "s"


def three_steps(request: ModelRequest) -> ModelReply:
    """One ``lookup`` at a time, three times, then the answer."""
    done = sum(1 for m in request.messages if m.role == "tool")
    if done < 3:
        return call("lookup", key=f"k{done}")
    return reply(f"found {done}")


class BlocksOnSecondRequest:
    """:func:`three_steps`, but the second request prints "asked" and never returns."""

    name, provider = "blocks", "scripted"

    async def complete(self, request: ModelRequest) -> ModelReply:
        if any(m.role == "tool" for m in request.messages):
            print("asked", flush=True)
            await asyncio.Event().wait()
        return three_steps(request)


def lookup_tool(block: bool) -> FunctionTool:
    async def lookup(ctx: object, args: dict[str, Any]) -> str:
        if block:
            print("started", flush=True)
            await asyncio.Event().wait()
        return f"value of {args['key']}"

    return FunctionTool(
        "lookup",
        lookup,
        description="Look a key up",
        parameters={"type": "object", "properties": {"key": {"type": "string"}}},
        side_effects="none",
    )


HELD = AgentConfig(key=AGENT_KEY, read_hold_s=3600.0)


async def main(log: Path, blocking: str) -> None:
    if blocking == "model":
        model: Any = BlocksOnSecondRequest()
        tool = lookup_tool(block=False)
    else:
        model, tool = ScriptedModel(three_steps), lookup_tool(block=True)
    async with System.open(log) as system:
        await system.register_agent(HELD, model, tools=[tool])
        await system.send(AGENT_KEY, KEY, "look three keys up")


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]), sys.argv[2] if len(sys.argv) > 2 else "tool"))
