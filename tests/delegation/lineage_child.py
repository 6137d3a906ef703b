"""An embedding application in a child process, for the lineage tests: killed between
an outcome and its announcement.

python -m tests.delegation.lineage_child outcome LOG
    boss delegates (async) to worker and spawns a subagent, then its turn blocks in a
    tool forever, so neither result can start a turn in its session; prints "outcomes"
    once both outcomes are in the log (then gets killed)
python -m tests.delegation.lineage_child announcing LOG
    reopens that log: the results are announced again, and the boss's model blocks on
    the delegation's announcement; prints "announcing" once that turn is in the log
    (then gets killed: the turn is delivered, its ``delegation.announced`` is not)
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Collection
from pathlib import Path

from clawlog import AgentConfig, FunctionTool, ScriptedModel, System, ToolContext, call, reply
from clawlog.actors.agents import SubagentLimits
from clawlog.actors.providers import ModelReply, ModelRequest

#: The boss's user turn, and the tool calls it makes.
DELEGATE_CALL, SPAWN_CALL, BLOCK_CALL = "c-delegate", "c-spawn", "c-block"
CONFIG = AgentConfig(key="boss", subagents=SubagentLimits(announce_debounce_s=0.01))


def boss_brain(request: ModelRequest) -> ModelReply:
    """Delegate, spawn, then block in a tool; answer the results; a subagent's task
    answers "42 files"."""
    last = request.messages[-1]
    if last.role == "user":
        if last.content.startswith("[parent] "):
            return reply("42 files")
        if "[delegate:" in last.content:
            return reply("the boss read the report")
        if "[subagent results" in last.content:
            return reply("the boss read the count")
        return call(
            "delegate", call_id=DELEGATE_CALL, agent="worker", task="write the report", mode="async"
        )
    if last.name == "delegate":
        return call("spawn", call_id=SPAWN_CALL, task="count the files", label="count")
    if last.name == "spawn":
        return call("block", call_id=BLOCK_CALL)
    return reply("resumed after the restart")


def unblocked_brain(request: ModelRequest) -> ModelReply:
    """The boss, answering instead of blocking once it has asked both."""
    if request.messages[-1].name == "spawn":
        return reply("asked the worker and a subagent")
    return boss_brain(request)


def worker_model() -> ScriptedModel:
    return ScriptedModel(lambda request: reply("the report is written"))


async def block_forever(ctx: ToolContext, args: dict[str, object]) -> str:
    await asyncio.Event().wait()
    return "unreachable"


def block_tool() -> FunctionTool:
    return FunctionTool("block", block_forever, description="waits")


async def start(system: System, boss_model: object) -> None:
    await system.register_agent(CONFIG, boss_model, tools=[block_tool()])  # type: ignore[arg-type]
    await system.register_agent(AgentConfig(key="worker"), worker_model())
    await system.link_agents("boss", "worker")


class AnnouncementBlocks:
    """The boss's model, except that the delegation's announcement turn never gets an
    answer (its turn stays open when the process is killed)."""

    name = "boss"
    provider = "scripted"

    async def complete(self, request: ModelRequest) -> ModelReply:
        if "[delegate:" in request.messages[-1].content:
            await asyncio.Event().wait()
        return boss_brain(request)


async def wait_for_types(system: System, types: Collection[str], **match: str) -> None:
    """Until every type of ``types`` is in the log (with the given event fields); a
    minute at most (a generous bound for a busy machine: a failure, not a wait)."""
    missing = set(types)
    async with (
        asyncio.timeout(60),
        system.store.subscribe(1, types=list(types)) as events,
    ):
        async for recorded in events:
            if all(getattr(recorded.event, k, None) == v for k, v in match.items()):
                missing.discard(recorded.type)
            if not missing:
                return


async def outcome(log: Path) -> None:
    async with System.open(log) as system:
        await start(system, ScriptedModel(boss_brain))
        sending = asyncio.create_task(system.send("boss", "s1", "go"))
        await wait_for_types(system, ["delegation.completed", "subagent.finished"])
        print("outcomes", flush=True)
        await sending  # never returns: the turn blocks


async def _sender(system: System) -> str:
    requested = await system.store.read_all(1, 10, types=["delegation.requested"])
    return f"delegate:{requested[0].event.delegation_id}"  # type: ignore[union-attr]


async def announcing(log: Path) -> None:
    async with System.open(log) as system:
        sender = await _sender(system)
        await start(system, AnnouncementBlocks())
        await wait_for_types(system, ["session.turn_started"], sender=sender)
        print("announcing", flush=True)
        await asyncio.Event().wait()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["outcome", "announcing"])
    parser.add_argument("log", type=Path)
    args = parser.parse_args()
    asyncio.run(outcome(args.log) if args.mode == "outcome" else announcing(args.log))


if __name__ == "__main__":
    main()
