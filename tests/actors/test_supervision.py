"""Failures, restarts from the stream, escalation, and second writers."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import pytest

from clawlog.actors import (
    ActorCrashed,
    ActorDead,
    EventSourcedActor,
    Message,
    Request,
    SupervisionPolicy,
    System,
)
from clawlog.events import ANY, VersionConflict
from tests.actors.conftest import FAST
from tests.actors.sample import Add, Added, Counter, Crash, CrashTold, Get, SnapshottingCounter


def clawlog_logs(caplog: pytest.LogCaptureFixture) -> list[dict[str, Any]]:
    """The fields of each clawlog record captured so far (its key-values are attributes)."""
    return [vars(r) for r in caplog.records if r.name.startswith("clawlog.")]


async def types_of(system: System, stream: str) -> list[str]:
    return [e.type for e in await system.store.read_stream(stream)]


async def test_crash_then_restart_preserves_state(system: System) -> None:
    counter = await system.spawn(Counter, "counter/a")
    await counter.ask(Add(amount=2))
    with pytest.raises(ActorCrashed, match="boom"):
        await counter.ask(Crash(amount=3))  # appended, then crashed before replying
    assert await counter.ask(Get()) == 5
    assert await counter.ask(Add(amount=1)) == 6
    assert await types_of(system, "counter/a") == [
        "actor.started",
        "test.counter_added",
        "test.counter_added",
        "actor.failed",
        "actor.restarted",
        "test.counter_added",
    ]


async def test_messages_told_during_backoff_are_kept_and_handled_in_order(db_path: Path) -> None:
    slow = SupervisionPolicy(max_failures=3, backoff_base_s=0.2, backoff_max_s=0.2)
    async with System.open(db_path, event_types=[Added], policy=slow) as system:
        counter = await system.spawn(Counter, "counter/b")
        counter.tell(CrashTold())
        answers = await asyncio.gather(*(counter.ask(Add(amount=1)) for _ in range(5)))
        assert answers == [1, 2, 3, 4, 5]
        failed = [
            e for e in await system.store.read_stream("counter/b") if e.type == "actor.failed"
        ]
        assert len(failed) == 1 and failed[0].event.error_type == "RuntimeError"  # type: ignore[union-attr]


async def test_failure_record_names_error_and_traceback_digest(system: System) -> None:
    counter = await system.spawn(Counter, "counter/c")
    for _ in range(2):
        with pytest.raises(ActorCrashed):
            await counter.ask(Crash())
    failures = [
        e.event for e in await system.store.read_stream("counter/c") if e.type == "actor.failed"
    ]
    assert [f.failures_in_window for f in failures] == [1, 2]  # type: ignore[union-attr]
    assert failures[0].traceback_digest == failures[1].traceback_digest  # type: ignore[union-attr]
    assert len(failures[0].traceback_digest) == 16  # type: ignore[union-attr]


async def test_escalation_after_too_many_failures_stops_the_actor(system: System) -> None:
    counter = await system.spawn(Counter, "counter/d")
    for _ in range(FAST.max_failures + 1):
        with pytest.raises(ActorCrashed):
            await counter.ask(Crash())
    with pytest.raises(ActorDead):
        await asyncio.wait_for(counter.ask(Get()), 30)  # ActorDead at once; 30 s: a hang
    types = await _wait_for_type(system, "counter/d", "actor.stopped")
    assert types.count("actor.failed") == FAST.max_failures + 1
    assert types.count("actor.restarted") == FAST.max_failures
    assert types[-2:] == ["actor.escalated", "actor.stopped"]
    assert system.escalations and system.escalations[0][0] == "counter/d"


class Parent(EventSourcedActor[None]):
    kind = "parent"

    def handle(self, message: Message) -> object:
        if isinstance(message, StartChild):
            self.spawn(
                Counter,
                "parent/p/child",
                policy=SupervisionPolicy(max_failures=0, backoff_base_s=0.001, backoff_max_s=0.001),
            )
            return None
        return super().handle(message)


class StartChild(Request[None], frozen=True, kw_only=True):
    pass


async def test_escalation_climbs_to_the_parent_which_fails_and_restarts(system: System) -> None:
    parent = await system.spawn(Parent, "parent/p")
    await parent.ask(StartChild())
    child = system.actor("parent/p/child")
    assert child is not None
    with pytest.raises(ActorCrashed):
        await child.ask(Crash())
    parent_types = await _wait_for_type(system, "parent/p", "actor.restarted")
    assert "actor.failed" in parent_types
    failed = [
        e.event for e in await system.store.read_stream("parent/p") if e.type == "actor.failed"
    ]
    assert failed[0].error_type == "Escalated"  # type: ignore[union-attr]
    assert "parent/p/child" in failed[0].message  # type: ignore[union-attr]
    assert parent.is_alive() and not child.is_alive()


async def test_ask_to_a_stopped_actor_fails_at_once_and_is_a_dead_letter(system: System) -> None:
    counter = await system.spawn(Counter, "counter/e")
    counter.stop()
    started = asyncio.get_running_loop().time()
    with pytest.raises(ActorDead, match="counter/e is not running"):
        await counter.ask(Get(), timeout=30)
    counter.tell(Add(amount=1))
    assert asyncio.get_running_loop().time() - started < 1
    letters = await _wait_for_type(system, "system/guardian", "actor.dead_letter", count=2)
    assert letters.count("actor.dead_letter") == 2
    dead = [
        e.event
        for e in await system.store.read_stream("system/guardian")
        if e.type == "actor.dead_letter"
    ]
    assert [(d.path, d.message_type) for d in dead] == [("counter/e", "Get"), ("counter/e", "Add")]  # type: ignore[union-attr]


async def test_second_writer_on_a_stream_stops_the_actor_loudly_and_overwrites_nothing(
    system: System, caplog: pytest.LogCaptureFixture
) -> None:
    counter = await system.spawn(Counter, "counter/f")
    await counter.ask(Add(amount=1))
    await system.store.append("counter/f", [Added(amount=100)], expected_version=ANY)
    caplog.set_level(logging.DEBUG, logger="clawlog")
    caplog.clear()
    with pytest.raises(VersionConflict):
        await counter.ask(Add(amount=2))
    logs = clawlog_logs(caplog)
    with pytest.raises(ActorDead):
        await counter.ask(Get())
    assert any(log["levelname"] == "CRITICAL" and log["actor"] == "counter/f" for log in logs)
    amounts = [
        e.event.amount
        for e in await system.store.read_stream("counter/f")
        if e.type == "test.counter_added"
    ]  # type: ignore[union-attr]
    assert amounts == [1, 100]


async def test_state_survives_a_process_restart_through_snapshots(db_path: Path) -> None:
    async with System.open(db_path, event_types=[Added], policy=FAST) as system:
        counter = await system.spawn(SnapshottingCounter, "counter/s")
        for _ in range(12):
            await counter.ask(Add(amount=2))
    async with System.open(db_path, event_types=[Added], policy=FAST) as system:
        counter = await system.spawn(SnapshottingCounter, "counter/s")
        assert await counter.ask(Get()) == 24
        started = [
            e.event
            for e in await system.store.read_stream("counter/s")
            if e.type == "actor.started"
        ]
        assert started[-1].from_snapshot is not None and started[-1].from_snapshot >= 10  # type: ignore[union-attr]


async def test_failure_logs_carry_actor_stream_and_correlation(
    system: System, caplog: pytest.LogCaptureFixture
) -> None:
    counter = await system.spawn(Counter, "counter/g")
    caplog.set_level(logging.DEBUG, logger="clawlog")
    caplog.clear()
    with pytest.raises(ActorCrashed):
        await counter.ask(Crash(correlation_id="turn-42"))
    [failure] = [log for log in clawlog_logs(caplog) if log["event"] == "actor failed"]
    assert (failure["actor"], failure["stream"]) == ("counter/g", "counter/g")
    assert failure["correlation_id"] == "turn-42"


async def _wait_for_type(system: System, stream: str, tag: str, count: int = 1) -> list[str]:
    async with system.store.subscribe(1, stream_prefix=stream) as events:
        seen = 0
        async for recorded in events:
            if recorded.stream == stream and recorded.type == tag:
                seen += 1
                if seen >= count:
                    break
    return await types_of(system, stream)
