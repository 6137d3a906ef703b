"""Draining a process moves its sessions to another without losing a turn (two Systems on
one PostgreSQL schema, as two processes would be)."""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter

from clawlog.actors import System
from clawlog.actors.agents import AgentConfig
from clawlog.actors.agents.router import Placement
from clawlog.actors.providers import ModelReply, ModelRequest, reply
from clawlog.events.streams import session_stream
from tests.support.postgres import database_url


class SlowModel:
    """Answers after a short real wait, so turns are in flight when the drain begins."""

    name = "slow"
    provider = "test"

    def __init__(self, who: str) -> None:
        self.who = who

    async def complete(self, request: ModelRequest) -> ModelReply:
        await asyncio.sleep(0.05)  # a model takes time
        return reply(f"{self.who}: {request.messages[-1].content}")


async def started_turns(system: System, sessions: int) -> Counter[tuple[int, str]]:
    started: Counter[tuple[int, str]] = Counter()
    for n in range(sessions):
        for recorded in await system.store.read_stream(session_stream("main", f"s{n}")):
            if recorded.type == "session.turn_started":
                started[n, recorded.event.text] += 1
    return started


async def test_a_drained_process_hands_its_sessions_over_without_losing_a_turn() -> None:
    url, schema = database_url(), f"t_{uuid.uuid4().hex[:16]}"
    first = await System.open(url, schema=schema, lease_ttl_s=3)
    second = await System.open(url, schema=schema, lease_ttl_s=3)
    try:
        await first.register_agent(AgentConfig(key="main"), SlowModel("first"))
        await second.register_agent(AgentConfig(key="main"), SlowModel("second"))
        sessions = 10
        for n in range(sessions):  # the first process serves them all
            assert await first.send("main", f"s{n}", "hello") == "first: hello"
        sends = [
            asyncio.ensure_future(first.send("main", f"s{n}", f"busy {n} {k}"))
            for n in range(sessions)
            for k in range(3)
        ]
        drained = await first.drain()
        assert drained == sessions
        answers = await asyncio.gather(*sends)
        assert sorted(a.split(": ", 1)[1] for a in answers) == sorted(
            f"busy {n} {k}" for n in range(sessions) for k in range(3)
        )
        assert any(a.startswith("second:") for a in answers)  # moved while busy
        # Drained, it serves nothing more: its sends go to the other process.
        assert await first.send("main", "s0", "after") == "second: after"
        assert await first.send("main", "fresh", "new") == "second: new"
        started = await started_turns(second, sessions)
        assert max(started.values()) == 1  # no turn ran twice
        assert len(started) == sessions * 4 + 1  # hello, three busy ones each, and "after"
    finally:
        await first.close()
        await second.close()


async def test_a_placement_that_refuses_an_agent_sends_its_sessions_elsewhere() -> None:
    url, schema = database_url(), f"t_{uuid.uuid4().hex[:16]}"
    refusing = await System.open(
        url, schema=schema, placement=Placement.of(refuse_agents=["main"]), lease_ttl_s=3
    )
    serving = await System.open(url, schema=schema, lease_ttl_s=3)
    try:
        await refusing.register_agent(AgentConfig(key="main"), SlowModel("refusing"))
        await serving.register_agent(AgentConfig(key="main"), SlowModel("serving"))
        assert await refusing.send("main", "s1", "hi") == "serving: hi"
        assert await serving.send("main", "s1", "again") == "serving: again"
    finally:
        await refusing.close()
        await serving.close()
