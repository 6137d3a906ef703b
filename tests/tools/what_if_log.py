"""A log recorded by a real System (SQLite file, ScriptedModel): the calls the what-if
tests decide again, with the outcome each one had.

Agent ``main`` denies ``time`` (its own ``tools_deny``); the System's approvals are the
defaults (security=full, ask=on-miss). One turn per call, each in its own session:

=======  ====================================  ======================================
session  call                                  recorded outcome
=======  ====================================  ======================================
s-echo   echo {"message": "hi"}                allowed (policy: nothing removed it)
s-time   time {"operation": "now"}             refused at policy (agents.main.deny)
s-ls     shell {"command": "ls -la"}           allowed (no approval needed)
s-rm     shell {"command": "rm -rf /"}         refused at approval (deny pattern)
s-ok     deploy {"target": "prod"}             allowed: approved by ops (allow-once)
s-no     deploy {"target": "prod"}             refused at approval: denied by ops
s-bad    deploy {"target": 7}                  refused at validation
s-none   nosuch {}                             refused at resolve (unknown tool)
=======  ====================================  ======================================

``record_log(path, other_agent=True)`` then runs :data:`OTHER_CALLS` as agent ``other``
(both allowed): calls that ``agent="main"`` must leave out.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from clawlog.actors import System
from clawlog.actors.agents import AgentConfig
from clawlog.actors.providers import ModelReply, ModelRequest, ScriptedModel, call, reply
from clawlog.events import EventStore
from clawlog.tools import FunctionTool, ToolContext

#: session key -> (tool, arguments, approval answer or None)
CALLS: dict[str, tuple[str, dict[str, Any], str | None]] = {
    "s-echo": ("echo", {"message": "hi"}, None),
    "s-time": ("time", {"operation": "now"}, None),
    "s-ls": ("shell", {"command": "ls -la"}, None),
    "s-rm": ("shell", {"command": "rm -rf /"}, None),
    "s-ok": ("deploy", {"target": "prod"}, "allow-once"),
    "s-no": ("deploy", {"target": "prod"}, "deny"),
    "s-bad": ("deploy", {"target": 7}, None),
    "s-none": ("nosuch", {}, None),
}
#: Agent ``other``'s calls, after main's (``record_log(path, other_agent=True)``).
OTHER_CALLS: dict[str, tuple[str, dict[str, Any], str | None]] = {
    "o-echo": ("echo", {"message": "from other"}, None),
    "o-ls": ("shell", {"command": "ls"}, None),
}
#: The call id each session's call gets (the session key with "call-" in front).
CALL_IDS = {session: f"call-{session}" for session in {**CALLS, **OTHER_CALLS}}
#: The agent's own policy, as a policy file spells it: the recorded configuration.
RECORDED_POLICY = """\
[agents.main]
profile = "full"
deny = ["time"]
"""


async def _noop(ctx: ToolContext, args: dict[str, Any]) -> str:
    return f"did {json.dumps(args, sort_keys=True)}"


SHELL = FunctionTool(
    "shell",
    _noop,
    parameters={
        "type": "object",
        "properties": {"command": {"type": "string"}},
        "required": ["command"],
    },
)
DEPLOY = FunctionTool(
    "deploy",
    _noop,
    requires_approval=True,
    parameters={
        "type": "object",
        "properties": {"target": {"type": "string"}},
        "required": ["target"],
    },
)


def _script(request: ModelRequest) -> ModelReply:
    last = request.messages[-1]
    if last.role == "tool":
        return reply(f"tool said: {last.content}")
    session = str(last.content)
    name, arguments, _ = {**CALLS, **OTHER_CALLS}[session]
    return call(name, call_id=CALL_IDS[session], **arguments)


async def _wait_for(system: System, stream: str, event_type: str) -> None:
    async with system.store.subscribe(1, stream_prefix=stream) as events:
        async for recorded in events:
            if recorded.stream == stream and recorded.type == event_type:
                return


async def record_log(path: Path, *, other_agent: bool = False) -> None:
    """Run every call of :data:`CALLS` through a System on ``path`` (then, with
    ``other_agent``, those of :data:`OTHER_CALLS` as agent ``other``)."""
    async with System.open(path) as system:
        config = AgentConfig(key="main", tools_deny=["time"])
        await system.register_agent(config, ScriptedModel(_script), tools=[SHELL, DEPLOY])
        for session, (_, _, answer) in CALLS.items():
            turn = asyncio.ensure_future(system.send("main", session, session))
            if answer is not None:
                await _wait_for(system, f"session/main/{session}", "tool.approval_requested")
                assert await system.approve("main", session, CALL_IDS[session], answer, by="ops")
            await turn
        if other_agent:
            other = AgentConfig(key="other")
            await system.register_agent(other, ScriptedModel(_script), tools=[SHELL])
            for session in OTHER_CALLS:
                await system.send("other", session, session)


async def requested_at(store: EventStore) -> dict[str, tuple[int, float]]:
    """session key -> (position, recorded_at) of its call's ``tool.call_requested``."""
    requests = await store.read_all(1, 10_000, types=["tool.call_requested"])
    return {r.stream.rsplit("/", 1)[1]: (r.position, r.recorded_at) for r in requests}
