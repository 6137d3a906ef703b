"""A writer process: a System on a shared PostgreSQL log running real agent turns.

    python -m tests.events_pg.pg_agent_writer URL SCHEMA AGENT TURNS

Three users talk to AGENT at once, TURNS turns each. Each turn calls a tool that runs, asks for one that does not exist (a refusal), then
answers; the agent key is this process's own, so its session streams are disjoint from
the other writer's. Prints the head position it saw after its last turn.
"""

from __future__ import annotations

import asyncio
import sys

from clawlog.actors import System
from clawlog.actors.agents import AgentConfig
from clawlog.actors.providers import ModelReply, ModelRequest, ScriptedModel, call, calls, reply


def script(request: ModelRequest) -> ModelReply:
    last = max(i for i, m in enumerate(request.messages) if m.role == "user")
    done = sum(1 for m in request.messages[last:] if m.role == "tool")
    if done == 0:
        return call("sessions_list")
    if done == 1:
        return calls([("no_such_tool", {}), ("sessions_list", {})])
    return reply(f"finished: {request.messages[last].content}")


async def main(url: str, schema: str, agent: str, turns: int) -> None:
    async with System.open(url, schema=schema) as system:
        await system.register_agent(AgentConfig(key=agent), ScriptedModel(script))

        async def converse(user: str) -> None:
            for turn in range(turns):
                answer = await system.send(agent, user, f"task {turn}")
                assert answer == f"finished: task {turn}", answer

        # Three sessions at once: their appends share this process's group commits.
        await asyncio.gather(*(converse(f"user{u}") for u in range(3)))
        sys.stdout.write(f"{await system.store.head_position()}\n")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])))
