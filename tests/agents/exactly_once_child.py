"""An embedding application in a child process, for the exactly-once resume tests.

python -m tests.agents.exactly_once_child start LOG DIR
    starts a turn whose model calls ``transfer`` (idempotent: it dedupes on its key) and
    ``notify`` (external) at once; each tool records its invocation and does its effect,
    prints "started NAME", then blocks until the process is killed
python -m tests.agents.exactly_once_child resume LOG DIR
    registers the agent again with the same blocking tools: the resumed turn runs what
    it runs again, which blocks (and prints) the same way

Every invocation is a line ``NAME KEY`` in DIR/invocations and every effect done a line
``NAME KEY`` in DIR/effects, each fsynced before the tool goes on: the parent reads what
happened in a process it killed.
"""

from __future__ import annotations

import argparse
import asyncio
import os
from pathlib import Path

from clawlog import AgentConfig, FunctionTool, ScriptedModel, System, ToolContext, reply
from clawlog.actors.providers import ModelReply, ModelRequest, calls


def brain(request: ModelRequest) -> ModelReply:
    """Both calls at once for the user's message; then a reply quoting what came back."""
    if request.messages[-1].role == "user":
        return calls([("transfer", {"amount": 5}), ("notify", {"to": "ann"})], ids=["c1", "c2"])
    results = [m for m in request.messages if m.role == "tool"]
    return reply(" | ".join(f"{m.name}: {m.content}" for m in results))


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def append_line(path: Path, line: str) -> None:
    with path.open("a") as file:
        file.write(line + "\n")
        file.flush()
        os.fsync(file.fileno())


class Ledger:
    """The outside world the tools act on: a file of effects, deduped by key."""

    def __init__(self, folder: Path) -> None:
        self.invocations = folder / "invocations"
        self.effects = folder / "effects"

    def invoked(self, name: str, key: str) -> None:
        append_line(self.invocations, f"{name} {key}")

    def apply(self, name: str, key: str, *, dedupe: bool) -> bool:
        """Do the effect; with ``dedupe``, only if no effect with this key was done."""
        if dedupe and f"{name} {key}" in lines(self.effects):
            return False
        append_line(self.effects, f"{name} {key}")
        return True


def tools(folder: Path, *, block: bool) -> list[FunctionTool]:
    ledger = Ledger(folder)

    async def transfer(ctx: ToolContext, args: dict[str, object]) -> str:
        ledger.invoked("transfer", ctx.idempotency_key)
        done = ledger.apply("transfer", ctx.idempotency_key, dedupe=True)
        await _hold("transfer", block)
        return f"moved {args['amount']}" if done else "already moved (same key)"

    async def notify(ctx: ToolContext, args: dict[str, object]) -> str:
        ledger.invoked("notify", ctx.idempotency_key)
        ledger.apply("notify", ctx.idempotency_key, dedupe=False)
        await _hold("notify", block)
        return f"notified {args['to']}"

    amount = {"type": "object", "properties": {"amount": {"type": "integer"}}}
    person = {"type": "object", "properties": {"to": {"type": "string"}}}
    return [
        FunctionTool("transfer", transfer, parameters=amount, side_effects="idempotent"),
        FunctionTool("notify", notify, parameters=person, side_effects="external"),
    ]


async def _hold(name: str, block: bool) -> None:
    if block:
        print(f"started {name}", flush=True)
        await asyncio.Event().wait()


async def run(mode: str, log: Path, folder: Path) -> None:
    async with System.open(log) as system:
        model = ScriptedModel(brain)
        await system.register_agent(AgentConfig(key="main"), model, tools=tools(folder, block=True))
        if mode == "start":
            await system.send("main", "s1", "pay ann", channel="web", chat_id="c9", user="ann")
        else:
            await asyncio.Event().wait()  # the resumed turn runs; the parent kills us


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["start", "resume"])
    parser.add_argument("log", type=Path)
    parser.add_argument("folder", type=Path)
    args = parser.parse_args()
    asyncio.run(run(args.mode, args.log, args.folder))


if __name__ == "__main__":
    main()
