"""Draining a process moves its sessions to another without losing a turn (two Systems on
one PostgreSQL schema, as two processes would be)."""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections import Counter

from clawlog.actors import System
from clawlog.actors.agents import AgentConfig
from clawlog.actors.agents.router import Placement
from clawlog.actors.providers import ModelReply, ModelRequest, reply
from clawlog.events.domain.session import TurnStarted
from clawlog.events.streams import session_stream
from tests.agents.support import Gate, wait_threading_event
from tests.support.postgres import database_url


class EchoModel:
    """Answers ``<who>: <message>``; with ``hold``, a ``busy`` message's answer waits for
    the test to open :attr:`gate` (turns in flight while the drain begins), and
    :attr:`holding` is set once ``hold`` of them wait."""

    name = "echo"
    provider = "test"

    def __init__(self, who: str, hold: int = 0) -> None:
        self.who, self.hold = who, hold
        self.gate = Gate()
        self.holding = threading.Event()
        self._held = 0
        self._lock = threading.Lock()

    async def complete(self, request: ModelRequest) -> ModelReply:
        text = request.messages[-1].content
        if self.hold and text.startswith("busy"):
            with self._lock:
                self._held += 1
                if self._held == self.hold:
                    self.holding.set()
            await self.gate.wait()
        return reply(f"{self.who}: {text}")


async def started_turns(system: System, sessions: int) -> Counter[tuple[int, str]]:
    started: Counter[tuple[int, str]] = Counter()
    for n in range(sessions):
        for recorded in await system.store.read_stream(session_stream("main", f"s{n}")):
            if isinstance(recorded.event, TurnStarted):
                started[n, recorded.event.text] += 1
    return started


async def test_a_drained_process_hands_its_sessions_over_without_losing_a_turn() -> None:
    url, schema = database_url(), f"t_{uuid.uuid4().hex[:16]}"
    first = await System.open(url, schema=schema, lease_ttl_s=3)
    second = await System.open(url, schema=schema, lease_ttl_s=3)
    sessions = 10
    model = EchoModel("first", hold=sessions)
    try:
        await first.register_agent(AgentConfig(key="main"), model)
        await second.register_agent(AgentConfig(key="main"), EchoModel("second"))
        for n in range(sessions):  # the first process serves them all
            assert await first.send("main", f"s{n}", "hello") == "first: hello"
        sends = [
            asyncio.ensure_future(first.send("main", f"s{n}", f"busy {n} {k}"))
            for n in range(sessions)
            for k in range(3)
        ]
        await wait_threading_event(model.holding)  # a turn in flight in every session
        # Tasks start in the order they are made: the drain reaches the agent first, so
        # each session has it before its status is asked, and before its answer comes.
        draining = asyncio.ensure_future(first.drain())
        statuses = asyncio.gather(*(first.session_status("main", f"s{n}") for n in range(sessions)))
        assert all(status.busy for status in await statuses)
        model.gate.set()
        drained = await draining
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
        await refusing.register_agent(AgentConfig(key="main"), EchoModel("refusing"))
        await serving.register_agent(AgentConfig(key="main"), EchoModel("serving"))
        assert await refusing.send("main", "s1", "hi") == "serving: hi"
        assert await serving.send("main", "s1", "again") == "serving: again"
    finally:
        await refusing.close()
        await serving.close()
