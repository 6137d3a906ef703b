"""Turns that start after their cause's span has ended continue its trace.

The result of an async subagent run or an async delegation is announced in the caller's
session as a new turn, a trace of its own (as every turn the export rebuilds): span links
lead from it to the run's (the delegation's) span, one per run it announces. An agent
quality gate's reviewer turn is the child of the delegation it reviews. A turn resumed in the process that interrupted
it is the child of its interrupted span (same trace); one resumed after a restart starts a
new trace, marked resumed, and its correlation id leads to the log.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from opentelemetry.sdk.trace import ReadableSpan

from clawlog.actors import System
from clawlog.actors.agents import AgentConfig, CallerContext, QualityGate, SubagentLimits
from clawlog.actors.providers import ModelReply, ModelRequest, ScriptedModel, call, reply
from clawlog.events import RecordedEvent
from clawlog.events.domain.agent import SubagentAnnounced
from clawlog.events.telemetry import (
    CORRELATION,
    DELEGATION,
    OUTCOME_INTERRUPTED,
    SUBAGENT_TASK,
    TURN_OUTCOME,
    TURN_RESUMED,
)
from clawlog.tools import FunctionTool
from tests.agents.test_resume import kill_mid_turn

from .conftest import Telemetry


def caller(agent: str, key: str) -> CallerContext:
    return CallerContext(agent=agent, session_key=key, session_stream=f"session/{agent}/{key}")


def turn_span(telemetry: Telemetry, agent: str, turn_id: str) -> ReadableSpan:
    """The one span of the turn ``turn_id`` of ``agent`` (by its correlation id)."""
    found = [
        s
        for s in telemetry.spans_named(f"invoke_agent {agent}")
        if s.attributes is not None and s.attributes.get(CORRELATION) == turn_id
    ]
    assert len(found) == 1, f"{len(found)} spans of turn {turn_id} in {telemetry.span_names()}"
    return found[0]


def is_child(span: ReadableSpan, parent: ReadableSpan) -> bool:
    return (
        span.parent is not None
        and span.parent.span_id == parent.context.span_id
        and span.context.trace_id == parent.context.trace_id
    )


async def first_after(system: System, after: int, stream: str, event_type: str) -> RecordedEvent:
    async with system.store.subscribe(after + 1, stream_prefix=stream) as events:
        async for recorded in events:
            if recorded.stream == stream and recorded.type == event_type:
                return recorded
    raise AssertionError(f"the log ended without {event_type} on {stream}")


def answers(request: ModelRequest) -> ModelReply:
    """Subagents do their task; the parent acknowledges whatever it is told."""
    last = request.messages[-1].content
    if last.startswith("[parent] "):
        return reply(f"done {last.removeprefix('[parent] ')}")
    return reply("noted")


async def announced(
    system: System, after: int, agent: str, session: str, tasks: set[str]
) -> list[RecordedEvent]:
    """The ``subagent.announced`` events (after ``after``) that announce ``tasks`` to the
    session, once every announcement turn they name has ended (however the runs' ends fell
    into the debounce windows: one announcement or several)."""
    found: list[RecordedEvent] = []
    turns: set[str] = set()
    ended: set[str] = set()
    stream = f"session/{agent}/{session}"
    async with system.store.subscribe(after + 1) as events:
        async for recorded in events:
            event = recorded.event
            if recorded.type == "subagent.announced" and recorded.stream == f"agent/{agent}":
                found.append(recorded)
                turns.add(event.turn_id)  # type: ignore[union-attr]
            elif recorded.stream == stream and recorded.type == "session.turn_completed":
                ended.add(recorded.correlation_id or "")
            announced_tasks = {t for r in found for t in r.event.task_ids}  # type: ignore[union-attr]
            if announced_tasks >= tasks and turns <= ended:
                return found
    raise AssertionError("the log ended before the runs were announced")


async def test_announced_subagent_results_link_to_the_runs(
    tmp_path: Path, telemetry: Telemetry
) -> None:
    """Each announcement turn links to exactly the runs it announces (both, when both
    ended within one debounce window, as they nearly always do here)."""
    limits = SubagentLimits(announce_debounce_s=1.0)
    async with System.open(tmp_path / "log.db") as system:
        await system.register_agent(
            AgentConfig(key="main", subagents=limits), ScriptedModel(answers)
        )
        assert await system.send("main", "p", "hello") == "noted"
        head = await system.store.head_position()
        ports = system.runtime.services["agents"]
        first = await ports.spawn_subagent(caller("main", "p"), "task A", label="A")
        second = await ports.spawn_subagent(caller("main", "p"), "task B", label="B")
        tasks = {first.task_id, second.task_id}
        announcements = await announced(system, head, "main", "p", tasks)

    runs = {
        str((s.attributes or {})[SUBAGENT_TASK]): s
        for s in telemetry.spans_named("invoke_agent subagent")
    }
    assert set(runs) == tasks
    linked: list[str] = []
    for announcement in announcements:
        event = announcement.event
        assert isinstance(event, SubagentAnnounced)
        turn = turn_span(telemetry, "main", event.turn_id)
        assert turn.parent is None
        assert [link.context for link in turn.links] == [runs[t].context for t in event.task_ids]
        linked.extend(event.task_ids)
    assert sorted(linked) == sorted(tasks)  # each run announced (and linked) once
    # Each run's own turn is still the run's child.
    assert all(
        any(is_child(s, run) for s in telemetry.spans_named("invoke_agent main"))
        for run in runs.values()
    )


async def test_an_announced_delegation_result_links_to_the_delegation(
    tmp_path: Path, telemetry: Telemetry
) -> None:
    async with System.open(tmp_path / "log.db") as system:
        await system.register_agent(AgentConfig(key="boss"), ScriptedModel(answers))
        await system.register_agent(AgentConfig(key="worker"), ScriptedModel(answers))
        await system.link_agents("boss", "worker")
        head = await system.store.head_position()
        ports = system.runtime.services["delegation"]
        info = await ports.delegate(caller("boss", "s1"), "worker", "sweep", mode="async")
        started = await first_after(system, head, "session/boss/s1", "session.turn_started")
        await first_after(system, started.position, "session/boss/s1", "session.turn_completed")
    assert started.event.sender == f"delegate:{info.delegation_id}"  # type: ignore[union-attr]

    delegation = telemetry.span("delegate worker")
    assert (delegation.attributes or {})[DELEGATION] == info.delegation_id
    announcement = turn_span(telemetry, "boss", started.correlation_id)
    assert announcement.parent is None
    assert [link.context for link in announcement.links] == [delegation.context]


async def test_an_agent_gates_review_turn_is_the_delegations_child(
    tmp_path: Path, telemetry: Telemetry
) -> None:
    gate = QualityGate(type="agent", agent="qa", criteria="swept")
    async with System.open(tmp_path / "log.db") as system:
        await system.register_agent(
            AgentConfig(key="boss", quality_gates=[gate]), ScriptedModel(answers)
        )
        await system.register_agent(AgentConfig(key="worker"), ScriptedModel(answers))
        await system.register_agent(
            AgentConfig(key="qa"), ScriptedModel(lambda r: reply("APPROVED"))
        )
        await system.link_agents("boss", "worker")
        ports = system.runtime.services["delegation"]
        info = await ports.delegate(caller("boss", "s1"), "worker", "sweep")
    assert info.status == "completed"

    delegation = telemetry.span("delegate worker")
    [review] = telemetry.spans_named("invoke_agent qa")
    assert is_child(review, delegation)
    [work] = telemetry.spans_named("invoke_agent worker")
    assert is_child(work, delegation)


def asker(request: ModelRequest) -> ModelReply:
    last = request.messages[-1]
    if last.role == "tool":
        return reply(f"tool said: {last.content}")
    return call("deploy", call_id="needs-ok", target="prod")


async def deploy(ctx: object, args: dict[str, object]) -> str:
    return f"deployed to {args['target']}"


DEPLOY = FunctionTool(
    "deploy",
    deploy,
    description="Deploy a build",
    requires_approval=True,
    parameters={"type": "object", "properties": {"target": {"type": "string"}}},
)


async def test_a_turn_resumed_in_the_same_process_continues_its_trace(
    tmp_path: Path, telemetry: Telemetry
) -> None:
    path = tmp_path / "log.db"
    system = await System.open(path)
    await system.register_agent(AgentConfig(key="main"), ScriptedModel(asker), tools=[DEPLOY])
    turn = asyncio.ensure_future(system.send("main", "u", "deploy it"))
    waiting = await first_after(system, 0, "session/main/u", "tool.approval_requested")
    await system.close()  # the session stops during the turn: its span ends interrupted
    await asyncio.gather(turn, return_exceptions=True)
    async with System.open(path) as again:
        await again.register_agent(AgentConfig(key="main"), ScriptedModel(asker), tools=[DEPLOY])
        await again.approve("main", "u", "needs-ok", "allow-once")
        await first_after(again, waiting.position, "session/main/u", "session.turn_completed")

    interrupted, resumed = sorted(
        telemetry.spans_named("invoke_agent main"), key=lambda s: s.start_time or 0
    )
    assert (interrupted.attributes or {})[TURN_OUTCOME] == OUTCOME_INTERRUPTED
    assert (resumed.attributes or {})[TURN_OUTCOME] == "completed"
    assert (resumed.attributes or {})[TURN_RESUMED] is True
    assert (resumed.attributes or {})[CORRELATION] == waiting.correlation_id
    assert is_child(resumed, interrupted)  # one trace for the turn, from start to end


async def test_a_turn_resumed_after_a_restart_starts_a_trace_that_leads_to_the_log(
    tmp_path: Path, telemetry: Telemetry
) -> None:
    log = tmp_path / "log.db"
    await kill_mid_turn(log)  # another process: its spans are nowhere to continue

    async def again(ctx: object, args: dict[str, object]) -> str:
        return "ran again"

    tool = FunctionTool("wait_for_parent", again, description="waits")
    async with System.open(log) as system:
        head = await system.store.head_position()
        model = ScriptedModel(lambda r: reply("resumed"))
        await system.register_agent(AgentConfig(key="main"), model, tools=[tool])
        ended = await first_after(system, head, "session/main/s1", "session.turn_completed")

    resumed = turn_span(telemetry, "main", ended.correlation_id)
    assert resumed.parent is None and resumed.links == ()
    assert (resumed.attributes or {})[TURN_RESUMED] is True
    assert (resumed.attributes or {})[TURN_OUTCOME] == "completed"
    # The call the killed process left running is closed by the resumed run: its span
    # is the resumed turn's child, ended by the recorded interruption.
    [call] = telemetry.spans_named("execute_tool wait_for_parent")
    assert is_child(call, resumed)
    assert (call.attributes or {})["error.type"] == "interrupted"
    assert (call.attributes or {})[CORRELATION] == ended.correlation_id
