"""An embedding application in a child process, for tests/agents/test_resume_followups.py.

python -m tests.agents.resume_followups_child SCENARIO LOG DIR
    registers agent ``main`` with one tool (``note``, or ``deploy`` that needs approval;
    both idempotent) and starts a turn in session ``s1`` whose model calls it as ``c1``:
    ``announce`` as a delegation's announcement turn (sender ``delegate:dg-1``, outbox
    kind "delegation"), ``delegated`` as a worker's delegated turn, ``approved`` as a
    user's turn whose call is approved (allow-once by ops); ``delegate``: agent ``boss``
    delegates (sync) to ``worker`` in session ``s1``, and the worker's turn calls ``note``.
    The tool writes its key to DIR/keys (fsynced), prints "started", and blocks until the
    process is killed.
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path
from typing import Any

from clawlog import AgentConfig, FunctionTool, ScriptedModel, System, ToolContext, reply
from clawlog.actors.agents.messages import SendMessage
from clawlog.actors.providers import ModelReply, ModelRequest, call, calls
from tests.agents.exactly_once_child import append_line

PARAMS = {"type": "object", "properties": {"n": {"type": "integer"}}}


def brain(request: ModelRequest) -> ModelReply:
    last = request.messages[-1]
    if last.role == "tool":
        return reply(f"result: {last.content}")
    name = "deploy" if "deploy" in last.content else "note"
    return calls([(name, {"n": 1})], ids=["c1"])


def boss_brain(request: ModelRequest) -> ModelReply:
    """Delegate (sync) to the worker; then say what the call answered."""
    last = request.messages[-1]
    if last.role == "tool":
        return reply(f"delegate said: {last.content}")
    return call("delegate", call_id="d1", agent="worker", task="note it")


async def register(system: System, folder: Path, *, block: bool) -> None:
    """Agents main, worker (both with the tools) and boss, linked boss -> worker."""
    for key in ("main", "worker"):
        model = ScriptedModel(brain)
        await system.register_agent(AgentConfig(key=key), model, tools=tools(folder, block=block))
    await system.register_agent(AgentConfig(key="boss"), ScriptedModel(boss_brain))
    await system.link_agents("boss", "worker")


def tools(folder: Path, *, block: bool) -> list[FunctionTool]:
    async def body(ctx: ToolContext, args: dict[str, Any]) -> str:
        append_line(folder / "keys", ctx.idempotency_key)
        if block:
            print("started", flush=True)
            await asyncio.Event().wait()
        return f"done {args.get('n')}"

    return [
        FunctionTool("note", body, parameters=PARAMS, side_effects="idempotent"),
        FunctionTool(
            "deploy", body, parameters=PARAMS, side_effects="idempotent", requires_approval=True
        ),
    ]


async def wait_for_type(system: System, stream: str, event_type: str) -> None:
    async with system.store.subscribe(1, stream_prefix=stream) as events:
        async for recorded in events:
            if recorded.stream == stream and recorded.type == event_type:
                return


async def run(scenario: str, log: Path, folder: Path) -> None:
    async with System.open(log) as system:
        await register(system, folder, block=True)
        if scenario == "delegate":
            await system.send("boss", "s1", "get it noted")
            return
        if scenario == "approved":
            turn = asyncio.ensure_future(system.send("main", "s1", "deploy it"))
            await wait_for_type(system, "session/main/s1", "tool.approval_requested")
            await system.approve("main", "s1", "c1", "allow-once", by="ops")
            await turn
            return
        sender, kind = "delegate:dg-1", "delegation" if scenario == "announce" else ""
        message = SendMessage(
            session_key="s1", text="note it", sender=sender, outbox_kind=kind, turn_id="t1"
        )
        await system._agent("main").ask(message, 600)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("scenario", choices=["announce", "delegated", "approved", "delegate"])
    parser.add_argument("log", type=Path)
    parser.add_argument("folder", type=Path)
    args = parser.parse_args()
    asyncio.run(run(args.scenario, args.log, args.folder))


if __name__ == "__main__":
    main()
