"""Delegation links: limits, sync and async, failures never lost, DELEGATION.md, search."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from clawlog.actors import Rejected, System
from clawlog.actors.agents import AgentConfig, CallerContext
from clawlog.actors.delegation.link import DelegationError
from clawlog.actors.delegation.ports import DelegationPorts
from clawlog.actors.errors import ModelServerError
from clawlog.actors.providers import ModelReply, ModelRequest, ScriptedModel, reply
from tests.agents.support import Gate


class Worker:
    """A target agent's model: answers 'did: <task>'; tasks with 'slow' wait for release,
    tasks with 'explode' fail the model call."""

    name = "worker"
    provider = "scripted"

    def __init__(self) -> None:
        self.release = Gate()

    async def complete(self, request: ModelRequest) -> ModelReply:
        text = request.messages[-1].content
        if "explode" in text:
            raise ModelServerError("the worker's model is down")
        if "slow" in text:
            await self.release.wait()
        return reply("did: " + text.split("] ", 1)[-1])


async def wait_for(system: System, stream: str, event_type: str) -> None:
    async with system.store.subscribe(1, stream_prefix=stream) as events:
        async for recorded in events:
            if recorded.stream == stream and recorded.type == event_type:
                return


def ctx(agent: str = "boss", key: str = "s1", user: str = "ann") -> CallerContext:
    return CallerContext(
        agent=agent, session_key=key, session_stream=f"session/{agent}/{key}", user=user
    )


async def setup(tmp_path: Path, **target: Any) -> tuple[System, DelegationPorts, Worker]:
    system = await System.open(tmp_path / "log.db")
    worker = Worker()
    await system.register_agent(AgentConfig(key="boss"), ScriptedModel(lambda r: reply("boss ok")))
    await system.register_agent(AgentConfig(key="boss2"), ScriptedModel(lambda r: reply("ok2")))
    await system.register_agent(
        AgentConfig(key="worker", description="does chores", **target), worker
    )
    return system, system.runtime.services["delegation"], worker


async def test_sync_delegation_returns_the_targets_answer(tmp_path: Path) -> None:
    system, ports, _ = await setup(tmp_path)
    async with system:
        await system.link_agents("boss", "worker")
        info = await ports.delegate(ctx(), "worker", "sweep the floor")
        assert (info.status, info.result) == ("completed", "did: sweep the floor")
        target = await system.store.read_stream(f"session/worker/{info.target_session}")
        assert any(e.type == "session.turn_completed" for e in target)
        link = [e.type for e in await system.store.read_stream("link/boss->worker")]
        assert link[-4:] == [
            "delegation.requested",
            "timer.set",  # its deadline
            "timer.cancelled",  # the answer came first
            "delegation.completed",
        ]


async def test_per_link_limit_under_concurrent_delegations(tmp_path: Path) -> None:
    system, ports, worker = await setup(tmp_path)
    async with system:
        await system.link_agents("boss", "worker", max_concurrent=2)
        first = await ports.delegate(ctx(), "worker", "slow 1", mode="async")
        second = await ports.delegate(ctx(), "worker", "slow 2", mode="async")
        with pytest.raises(
            Rejected,
            match=r"Agent at capacity \(2/2\)\. Try a different agent or handle it yourself\.",
        ):
            await ports.delegate(ctx(), "worker", "third")
        worker.release.set()
        assert first.delegation_id != second.delegation_id


async def test_per_target_load_across_all_sources(tmp_path: Path) -> None:
    system, ports, worker = await setup(tmp_path, max_delegation_load=1)
    async with system:
        await system.link_agents("boss", "worker", max_concurrent=5)
        await system.link_agents("boss2", "worker", max_concurrent=5)
        await ports.delegate(ctx(), "worker", "slow a", mode="async")
        with pytest.raises(Rejected, match=r"Agent at capacity \(1/1\)"):
            await ports.delegate(ctx("boss2"), "worker", "b")
        worker.release.set()


async def test_async_result_is_announced_after_the_caller_moved_on(tmp_path: Path) -> None:
    system, ports, worker = await setup(tmp_path)
    async with system:
        await system.link_agents("boss", "worker")
        await system.send("boss", "s1", "hello")
        info = await ports.delegate(ctx(), "worker", "slow report", mode="async")
        assert info.status == "running"
        assert await system.send("boss", "s1", "something else") == "boss ok"
        head = await system.store.head_position()
        worker.release.set()
        async with system.store.subscribe(head + 1, stream_prefix="session/boss/s1") as events:
            async for recorded in events:
                if recorded.type == "session.turn_started":
                    assert recorded.event.sender == f"delegate:{info.delegation_id}"  # type: ignore[union-attr]
                    assert "did: slow report" in recorded.event.text  # type: ignore[union-attr]
                    break


async def test_target_failure_and_timeout_give_the_caller_an_error_result(tmp_path: Path) -> None:
    system, ports, _ = await setup(tmp_path)
    async with system:
        await system.link_agents("boss", "worker")
        with pytest.raises(DelegationError, match=r"failed \(target_failed\).*model_error"):
            await ports.delegate(ctx(), "worker", "explode now")
        with pytest.raises(DelegationError, match=r"failed \(timeout\)"):
            await ports.delegate(ctx(), "worker", "slow forever", deadline_s=0.2)
        failed = [
            e.event.reason
            for e in await system.store.read_stream("link/boss->worker")  # type: ignore[union-attr]
            if e.type == "delegation.failed"
        ]
        assert failed == ["target_failed", "timeout"]
        timed_out = (await ports.list_delegations(ctx(), include_finished=True))[-1]
        await wait_for(
            system, f"session/worker/{timed_out.target_session}", "session.turn_cancelled"
        )


async def test_bad_delegations_are_refused_clearly_and_recorded(tmp_path: Path) -> None:
    system, ports, _ = await setup(tmp_path)
    async with system:
        await system.link_agents("boss", "worker", user_deny=["mallory"])
        with pytest.raises(Rejected, match="cannot delegate to itself"):
            await ports.delegate(ctx(), "boss", "x")
        with pytest.raises(Rejected, match="unknown agent 'ghost'; you can delegate to: worker"):
            await ports.delegate(ctx(), "ghost", "x")
        with pytest.raises(Rejected, match="no delegation link from boss2 to worker"):
            await ports.delegate(ctx("boss2"), "worker", "x")
        with pytest.raises(Rejected, match="user 'mallory' may not delegate to worker"):
            await ports.delegate(ctx(user="mallory"), "worker", "x")
        refused = [
            e
            for e in await system.store.read_stream("link/boss->worker")
            if e.type == "delegation.refused"
        ]
        assert len(refused) == 1
        with pytest.raises(ValueError, match="linked to itself"):
            await system.link_agents("boss", "boss")


async def test_a_restart_records_running_delegations_as_interrupted(tmp_path: Path) -> None:
    system, ports, _ = await setup(tmp_path)
    await system.link_agents("boss", "worker")
    info = await ports.delegate(ctx(), "worker", "slow and doomed", mode="async")
    stream = f"session/worker/delegate-{info.delegation_id}"
    async with system.store.subscribe(1, stream_prefix=stream) as events:
        async for recorded in events:  # the target's turn is running: its model waits
            if recorded.type == "session.model_requested":
                break
    await system.close()
    system, ports, worker = await setup(tmp_path)
    async with system:
        worker.release.set()
        await system.link_agents("boss", "worker")
        [finished] = await ports.list_delegations(ctx(), include_finished=True)
        assert (finished.delegation_id, finished.status, finished.reason) == (
            info.delegation_id,
            "failed",
            "interrupted",
        )
        # The target's turn is not run again for nobody: it ends as interrupted too.
        async with system.store.subscribe(1, stream_prefix=stream) as events:
            async for recorded in events:
                if recorded.type.startswith("session.turn_") and recorded.type != (
                    "session.turn_started"
                ):
                    break
        assert recorded.type == "session.turn_failed"
        assert recorded.event.reason == "interrupted"  # type: ignore[attr-defined]
        requests = [
            e for e in await system.store.read_stream(stream) if e.type == "session.model_requested"
        ]
        assert len(requests) == 1  # the one before the restart


async def test_a_sync_caller_hears_at_close_that_its_delegation_did_not_finish(
    tmp_path: Path,
) -> None:
    import asyncio

    from clawlog.actors import ActorDead

    system, ports, _ = await setup(tmp_path)
    await system.link_agents("boss", "worker")
    waiting = asyncio.ensure_future(ports.delegate(ctx(), "worker", "slow and cut short"))
    async with system.store.subscribe(1, stream_prefix="session/worker/delegate-") as events:
        async for recorded in events:  # the worker's model is waiting on the slow task
            if recorded.type == "session.model_requested":
                break
    await system.close()
    with pytest.raises((ActorDead, DelegationError)):
        await asyncio.wait_for(waiting, 60)  # answered at close, not at its ask timeout
    system, ports, worker = await setup(tmp_path)
    async with system:
        worker.release.set()
        await system.link_agents("boss", "worker")
        [finished] = await ports.list_delegations(ctx(), include_finished=True)
        assert (finished.status, finished.reason) == ("failed", "interrupted")


async def test_a_delegation_left_without_outcome_past_its_deadline_shows_as_overdue(
    tmp_path: Path,
) -> None:
    import time

    from clawlog.projections import DelegationReader, ProjectionRunner, ReadModels
    from clawlog.projections.read_models.delegations import Delegations

    system, ports, worker = await setup(tmp_path)
    await system.link_agents("boss", "worker")
    info = await ports.delegate(ctx(), "worker", "slow and abandoned", mode="async", deadline_s=30)
    done = await ports.delegate(ctx(), "worker", "quick one")
    views = tmp_path / "views.db"

    async def catch_up() -> None:  # on the hub's loop, where the System's store lives
        async with ProjectionRunner(system.runtime.store, views, [Delegations()]) as runner:
            await runner.catch_up()

    await system.runtime.hub.run_async(catch_up())
    async with ReadModels(views) as models:
        reader = DelegationReader(models)
        rows = await reader.delegations()
        assert [(r.delegation_id, r.status, r.overdue) for r in rows] == [
            (info.delegation_id, "running", False),
            (done.delegation_id, "completed", False),
        ]
        later = time.time() + 60  # the process died before the deadline timer could fire
        overdue = await reader.delegations(now=later, overdue_only=True)
        assert [r.delegation_id for r in overdue] == [info.delegation_id]
    worker.release.set()
    await system.close()
