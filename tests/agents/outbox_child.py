"""An embedding application in a child process, for the outbox and resume tests.

python -m tests.agents.outbox_child interrupt LOG
    starts a turn whose tool blocks forever; prints "tool started" (then gets killed)
python -m tests.agents.outbox_child reader LOG HANDLED [--produce N] [--gated] [--until N]
    reads the outbox from the position saved in HANDLED (one "position<TAB>text" line
    per handled message, fsynced), optionally after sending N messages; --gated waits
    for a line on stdin after each message; --until stops once HANDLED has N lines
    (sending two more messages while it follows live)
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path

from clawlog import AgentConfig, FunctionTool, ScriptedModel, System, ToolContext, call, reply
from clawlog.actors.providers import ModelReply, ModelRequest


def interrupted_brain(request: ModelRequest) -> ModelReply:
    last = request.messages[-1]
    if last.role == "user" and last.content == "hi":
        return reply("hello")
    return call("wait_for_parent", call_id="c1")


async def block_forever(ctx: ToolContext, args: dict[str, object]) -> str:
    print("tool started", flush=True)
    await asyncio.Event().wait()
    return "unreachable"


async def interrupt(log: Path) -> None:
    async with System.open(log) as system:
        tool = FunctionTool("wait_for_parent", block_forever, description="waits")
        model = ScriptedModel(interrupted_brain)
        await system.register_agent(AgentConfig(key="main"), model, tools=[tool])
        assert await system.send("main", "done1", "hi") == "hello"
        await system.send(
            "main", "s1", "do the slow thing", channel="web", chat_id="c9", user="ann"
        )


def saved_position(handled: Path) -> tuple[int, int]:
    """The position of the last handled message, and how many were handled."""
    if not handled.exists():
        return 0, 0
    lines = [line for line in handled.read_text().splitlines() if line]
    return (int(lines[-1].split("\t", 1)[0]) if lines else 0), len(lines)


def record(handled: Path, position: int, text: str) -> None:
    with handled.open("a") as file:
        file.write(f"{position}\t{text}\n")
        file.flush()
        os.fsync(file.fileno())


async def read_outbox(log: Path, handled: Path, produce: int, gated: bool, until: int) -> None:
    echo = ScriptedModel(lambda request: reply(f"echo: {request.messages[-1].content}"))
    async with System.open(log) as system:
        await system.register_agent(AgentConfig(key="main"), echo)
        for i in range(produce):
            await system.send("main", f"m{i}", f"message {i}", channel="web", chat_id=f"c{i}")
        since, count = saved_position(handled)
        live: asyncio.Task[None] | None = None
        if until:
            live = asyncio.create_task(send_live(system))
        loop = asyncio.get_running_loop()
        async with system.outbox(since=since) as outbox:
            async for message in outbox:
                record(handled, message.position, message.text)
                count += 1
                print(f"handled {message.position}", flush=True)
                if until and count >= until:
                    break
                if gated:
                    await loop.run_in_executor(None, sys.stdin.readline)
        if live is not None:
            await live
    print("done", flush=True)


async def send_live(system: System) -> None:
    for i in range(2):
        await system.send("main", f"live{i}", f"live {i}", channel="web", chat_id="live")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["interrupt", "reader"])
    parser.add_argument("log", type=Path)
    parser.add_argument("handled", type=Path, nargs="?")
    parser.add_argument("--produce", type=int, default=0)
    parser.add_argument("--gated", action="store_true")
    parser.add_argument("--until", type=int, default=0)
    args = parser.parse_args()
    if args.mode == "interrupt":
        asyncio.run(interrupt(args.log))
    else:
        asyncio.run(read_outbox(args.log, args.handled, args.produce, args.gated, args.until))


if __name__ == "__main__":
    main()
