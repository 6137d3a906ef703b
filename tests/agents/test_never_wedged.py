"""A session is never wedged and a caller never waits in vain.

Whatever fails inside a turn or before it starts (an append, the session's start, a corrupt
event in its stream, the store unreachable), the caller gets a typed error at once, the
turn ends with a recorded outcome where the store allows it, the next message is served,
and the agent's other sessions go on. The store is damaged the way a user's would be: a
trigger or a bad row written into the real SQLite file, a real PostgreSQL server stopped.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sqlite3
import time
import uuid
from pathlib import Path

import pytest

from clawlog.actors import (
    ActorCrashed,
    ActorUnavailable,
    SupervisionPolicy,
    System,
    TurnFailedError,
)
from clawlog.actors.agents import AgentConfig
from clawlog.actors.internal import AwaitRecovery
from clawlog.actors.providers import ScriptedModel, reply
from tests.actors.sample import Add, Added, Counter, Crash, Get
from tests.agents.support import GatedModel, types, wait_threading_event
from tests.cli.damage import overwrite_page
from tests.support.postgres import database_url, pg_ctl


def echo_model() -> ScriptedModel:
    return ScriptedModel(lambda request: reply(f"echo: {request.messages[-1].content}"))


async def test_a_first_append_the_store_refuses_fails_the_send_and_the_next_is_served(
    tmp_path: Path,
) -> None:
    path = tmp_path / "log.db"
    async with System.open(path) as system:  # creates the file
        await system.register_agent(AgentConfig(key="main"), echo_model())
        assert await system.send("main", "s", "first") == "echo: first"
    with sqlite3.connect(path) as db:  # the file refuses one turn's start, as a full disk would
        db.execute(
            "CREATE TRIGGER refuse BEFORE INSERT ON events WHEN NEW.type = "
            "'session.turn_started' AND instr(CAST(NEW.payload AS TEXT), 'poison') > 0 "
            "BEGIN SELECT RAISE(ABORT, 'refused by the disk'); END"
        )
    async with System.open(path) as system:
        await system.register_agent(AgentConfig(key="main"), echo_model())
        with pytest.raises(TurnFailedError) as failed:
            await system.send("main", "s", "poison", timeout=60)
        assert failed.value.reason == "store_error"
        assert await system.send("main", "s", "after", timeout=60) == "echo: after"
        status = await system.session_status("main", "s")
        assert (status.busy, status.turns_failed, status.turns_completed) == (False, 1, 2)
        events = await system.store.read_stream("session/main/s")
        failed_turns = [e.event for e in events if e.type == "session.turn_failed"]
        assert [f.reason for f in failed_turns] == ["store_error"]  # type: ignore[attr-defined]


async def test_a_model_reply_over_the_size_limit_ends_the_turn_in_the_log(tmp_path: Path) -> None:
    def model(request: object) -> object:
        text = request.messages[-1].content  # type: ignore[attr-defined]
        return reply("x" * 100_000 if text == "big" else f"echo: {text}")

    async with System.open(tmp_path / "log.db", max_payload_bytes=64 * 1024) as system:
        await system.register_agent(AgentConfig(key="main"), ScriptedModel(model))  # type: ignore[arg-type]
        with pytest.raises(TurnFailedError) as failed:
            await system.send("main", "s", "big", timeout=60)
        assert failed.value.reason == "append_refused"
        assert "PayloadTooLarge" in failed.value.message
        assert await system.send("main", "s", "small", timeout=60) == "echo: small"
        events = await system.store.read_stream("session/main/s")
        turn_ends = [e.type for e in events if e.type.startswith("session.turn_")]
        assert turn_ends == [
            "session.turn_started",
            "session.turn_failed",
            "session.turn_started",
            "session.turn_completed",
        ]
        assert "actor.failed" not in types(events)  # a refused append is not a crash


async def test_a_corrupt_session_fails_its_sends_and_the_agents_other_sessions_answer(
    tmp_path: Path,
) -> None:
    path = tmp_path / "log.db"
    async with System.open(path) as system:
        await system.register_agent(AgentConfig(key="main"), echo_model())
        await system.send("main", "bad", "one")
        await system.send("main", "good", "one")
    with sqlite3.connect(path) as db:
        db.execute(
            "UPDATE events SET payload = x'c1ffee' WHERE stream = 'session/main/bad' "
            "AND type = 'session.turn_started'"
        )
    async with System.open(path) as system:
        await system.register_agent(AgentConfig(key="main"), echo_model())
        for _ in range(4):  # more than the failure budget: the agent must not count them
            with pytest.raises(TurnFailedError) as failed:
                await system.send("main", "bad", "again", timeout=60)
            assert failed.value.reason == "session_unavailable"
            assert "corrupt event" in failed.value.message
            assert await system.send("main", "good", "still there?", timeout=60) == (
                "echo: still there?"
            )
        agent_events = types(await system.store.read_stream("agent/main"))
        assert "actor.escalated" not in agent_events and "actor.failed" not in agent_events
        assert system.escalations == []


def store_down_for(path: Path, event_type: str) -> None:
    """Appends of ``event_type`` fail as on an unreachable store (a runtime error of the
    file, not a refusal) until ``store_back``."""
    with sqlite3.connect(path) as db:
        db.execute(
            f"CREATE TRIGGER store_down BEFORE INSERT ON events WHEN NEW.type = '{event_type}' "
            "BEGIN SELECT json('the store is unreachable'); END"
        )


def store_back(path: Path) -> None:
    with sqlite3.connect(path) as db:
        db.execute("DROP TRIGGER store_down")


async def test_a_told_message_is_kept_through_an_outage_and_served_after_it(
    tmp_path: Path,
) -> None:
    path = tmp_path / "log.db"
    async with System.open(path) as system:
        await system.register_agent(AgentConfig(key="main"), echo_model())
        assert await system.send("main", "s", "first", timeout=60) == "echo: first"
        head = await system.store.head_position()
        store_down_for(path, "session.turn_started")
        ports = system.runtime.services["agents"]
        ports.tell_agent("main", "s", "the conversation is yours now", "handoff:other")
        with pytest.raises(ActorUnavailable):  # an ask behind it hears it at once
            await system.send("main", "s", "anyone?", timeout=60)
        async with system.store.subscribe(head + 1, stream_prefix="session/main/s") as events:
            store_back(path)
            async with asyncio.timeout(60):
                async for recorded in events:
                    if recorded.type == "session.turn_completed":
                        break
        assert recorded.event.reply == "echo: [handoff:other] the conversation is yours now"  # type: ignore[attr-defined]
        events = await system.store.read_stream("session/main/s")
        turns = [e.type for e in events if e.type.startswith("session.turn_")]
        assert turns == ["session.turn_started", "session.turn_completed"] * 2
        status = await system.session_status("main", "s")
        assert (status.busy, status.queued, status.turns_failed) == (False, 0, 0)


async def test_a_snapshot_the_store_refuses_does_not_fail_a_completed_turn(
    tmp_path: Path,
) -> None:
    path = tmp_path / "log.db"
    async with System.open(path) as system:
        await system.register_agent(AgentConfig(key="main"), echo_model())
        assert await system.send("main", "s", "first") == "echo: first"
    with sqlite3.connect(path) as db:  # no snapshot can be written, as on a full disk
        db.execute(
            "CREATE TRIGGER refuse BEFORE INSERT ON snapshots "
            "BEGIN SELECT RAISE(ABORT, 'refused by the disk'); END"
        )
    async with System.open(path) as system:
        await system.register_agent(AgentConfig(key="main"), echo_model())
        for n in range(50):  # past the session's snapshot interval
            assert await system.send("main", "s", f"m{n}", timeout=60) == f"echo: m{n}"
        events = await system.store.read_stream("session/main/s")
        assert len(events) > 200
        assert "session.turn_failed" not in types(events)
        status = await system.session_status("main", "s")
        assert (status.turns_failed, status.turns_completed) == (0, 51)
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT count(*) FROM snapshots").fetchone() == (0,)


async def test_asks_stashed_before_the_store_went_away_are_answered_at_once(
    tmp_path: Path,
) -> None:
    path = tmp_path / "log.db"
    async with System.open(path, event_types=[Added]) as system:
        policy = SupervisionPolicy(backoff_base_s=1.0, backoff_max_s=1.0)
        counter = await system.spawn(Counter, "counter/c", policy=policy)
        store_down_for(path, "actor.restarted")  # its restart cannot be recorded
        with pytest.raises(ActorCrashed):
            await counter.ask(Crash())
        counter.tell(Add(amount=5))  # both stashed while it waits to restart
        with pytest.raises(ActorUnavailable):
            await counter.ask(Add(amount=1), timeout=30)
        async with system.store.subscribe(1, types=["actor.restarted"]) as restarts:
            store_back(path)
            async with asyncio.timeout(60):
                await anext(aiter(restarts))
        assert await counter.ask(Get()) == 5  # the told one was kept


# -- PostgreSQL: the store goes away mid-turn and comes back ---------------------------------


@pytest.fixture
def pg_url() -> str:
    return database_url()


async def send_when_back(system: System, session: str, text: str) -> str:
    """Send once the actors are back (the application's retry after an outage): an actor
    that waited for the store records ``actor.restarted`` when it has recovered, so each
    recovery is a moment to try again, and the last one lets the send through."""
    async with asyncio.timeout(120):
        async with system.store.subscribe(1, types=["actor.restarted"]) as restarts:
            with contextlib.suppress(ActorUnavailable):
                return await system.send("main", session, text, timeout=60)
            async for _ in restarts:
                with contextlib.suppress(ActorUnavailable):
                    return await system.send("main", session, text, timeout=60)
    raise AssertionError("the session never served again")


def outage_seconds() -> float:
    """How long the store stays down (scripts/long_outage.sh runs it for minutes)."""
    return float(os.environ.get("CLAWLOG_TEST_OUTAGE_S", "2"))


async def test_a_store_outage_fails_sends_promptly_and_the_session_serves_after_it(
    pg_url: str,
) -> None:
    model = GatedModel([reply("lost in the outage")])
    schema = f"t_{uuid.uuid4().hex[:10]}"
    async with System.open(pg_url, schema=schema, append_timeout=10.0) as system:
        await system.register_agent(AgentConfig(key="main"), model)
        in_flight = asyncio.ensure_future(system.send("main", "s", "hello", timeout=60))
        await wait_threading_event(model.started)
        pg_ctl("stop-fast")
        try:
            model.release.set()  # the reply cannot be recorded: the caller hears it now
            with pytest.raises(TurnFailedError) as failed:
                await in_flight
            assert failed.value.reason == "store_unavailable"
            # Every send during the outage fails at once; none waits for the server.
            refused = 0
            deadline = time.monotonic() + outage_seconds()
            while True:
                for session in ("s", f"new-{refused}"):
                    with pytest.raises(ActorUnavailable):
                        await system.send("main", session, "anyone?", timeout=60)
                    refused += 1
                if time.monotonic() >= deadline:
                    break
                # Paces the probes over an outage of a chosen length (scripts/long_outage.sh
                # makes it minutes); nothing is awaited here: every probe has its answer.
                await asyncio.sleep(0.2)
            # The agent itself cannot record a new config: it waits for the store too.
            with pytest.raises(ActorUnavailable):
                await system.register_agent(AgentConfig(key="main", instructions="Terse."), model)
            with pytest.raises(ActorUnavailable):
                await system.send("main", "s", "anyone?", timeout=60)
        finally:
            pg_ctl("start-again")
        assert await send_when_back(system, "s", "back?") == "done"
        assert await system.send("main", "other", "new session", timeout=60) == "done"
        assert "Terse." in model.requests[-1].system  # a new session has the new config
        events = await system.store.read_stream("session/main/s")
        turn_ends = [e.event for e in events if e.type.startswith("session.turn_")]
        assert [type(e).__name__ for e in turn_ends] == [
            "TurnStarted",
            "TurnFailed",
            "TurnStarted",
            "TurnCompleted",
        ]
        assert turn_ends[1].reason == "store_unavailable"  # type: ignore[attr-defined]
        everything = await system.store.read_all(1, 100_000)
        assert "actor.escalated" not in types(everything)
        assert system.escalations == []
        agent = system.actor("agent/main")
        assert agent is not None and agent.is_alive()


async def test_an_escalation_while_the_store_is_down_is_recorded_when_it_is_back(
    pg_url: str,
) -> None:
    async with System.open(pg_url, schema=f"t_{uuid.uuid4().hex[:10]}") as system:
        policy = SupervisionPolicy(max_failures=0, backoff_base_s=0.01, backoff_max_s=0.2)
        counter = await system.spawn(Counter, "counter/c", policy=policy)
        pg_ctl("stop-fast")
        try:
            with pytest.raises(ActorCrashed):
                await counter.ask(Crash())
            await system.guardian.ask(AwaitRecovery())  # it has handled the escalation told before
            assert [path for path, _ in system.escalations] == ["counter/c"]  # known at once
        finally:
            pg_ctl("start-again")
        # The guardian records it once the store takes it: wait on the live subscription.
        async with system.store.subscribe(1, types=["actor.escalated"]) as escalations:
            async with asyncio.timeout(120):
                escalated = await anext(aiter(escalations))
        assert escalated.event.path == "counter/c"  # type: ignore[attr-defined]
        assert escalated.stream.startswith("system/guardian")


async def test_a_message_told_during_an_outage_is_served_when_the_store_is_back(
    pg_url: str,
) -> None:
    async with System.open(pg_url, schema=f"t_{uuid.uuid4().hex[:10]}") as system:
        await system.register_agent(AgentConfig(key="main"), echo_model())
        assert await system.send("main", "s", "first", timeout=60) == "echo: first"
        head = await system.store.head_position()
        ports = system.runtime.services["agents"]
        pg_ctl("stop-fast")
        try:
            ports.tell_agent("main", "s", "a report from a teammate", "teammate:b")
            with pytest.raises(ActorUnavailable):
                await system.send("main", "s", "anyone?", timeout=60)
            status = await system.session_status("main", "s")
            assert status.queued == 1  # the told message waits; the ask was answered
        finally:
            pg_ctl("start-again")
        async with system.store.subscribe(head + 1, stream_prefix="session/main/s") as events:
            async with asyncio.timeout(120):
                async for recorded in events:
                    if recorded.type == "session.turn_completed":
                        break
        assert recorded.event.reply == "echo: [teammate:b] a report from a teammate"  # type: ignore[attr-defined]
        events = await system.store.read_stream("session/main/s")
        turns = [e.type for e in events if e.type.startswith("session.turn_")]
        assert turns == ["session.turn_started", "session.turn_completed"] * 2


async def test_a_session_on_a_damaged_page_fails_its_sends_and_the_others_answer(
    tmp_path: Path,
) -> None:
    # As a corrupt event: a damaged page is read again by every restart, so the session
    # gives up at once (typed error to the caller) instead of restarting until escalated.
    path = tmp_path / "log.db"
    async with System.open(path) as system:
        await system.register_agent(AgentConfig(key="main"), echo_model())
        await system.send("main", "good", "one")
        await system.send("main", "bad", "x" * 3000)  # its rows fill pages of their own
    with sqlite3.connect(path) as db:
        [(position,)] = db.execute(
            "SELECT position FROM events WHERE stream = 'session/main/bad' "
            "AND type = 'session.turn_started'"
        ).fetchall()
    first, last = overwrite_page(path, position)
    with sqlite3.connect(path) as db:
        on_page = {
            stream
            for (stream,) in db.execute(
                "SELECT stream FROM events INDEXED BY sqlite_autoindex_events_1 "
                "WHERE position BETWEEN ? AND ?",
                (first, last),
            )
        }
    assert on_page <= {"session/main/bad"}, on_page  # the damage hits that session alone
    async with System.open(path) as system:
        await system.register_agent(AgentConfig(key="main"), echo_model())
        for _ in range(4):  # more than the failure budget: the agent must not count them
            with pytest.raises(TurnFailedError) as failed:
                await system.send("main", "bad", "again", timeout=60)
            assert failed.value.reason == "session_unavailable"
            assert "damaged" in failed.value.message
            assert await system.send("main", "good", "still there?", timeout=60) == (
                "echo: still there?"
            )
        assert system.escalations == []
