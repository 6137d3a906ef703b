"""Tool calls as OpenTelemetry: one ``execute_tool {tool}`` span per call on every path
through the pipeline (refused at each step, approved, denied, unanswered, completed,
failed, timed out, cancelled), the ``clawlog.tool.calls`` counter matching the recorded
events, and ``clawlog.tool.approvals.waiting`` back at zero whatever ended the wait."""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import StatusCode

from clawlog.actors import System
from clawlog.actors.agents import AgentConfig
from clawlog.actors.providers import ModelReply, ModelRequest, ScriptedModel, call, reply
from clawlog.events import Event, open_store
from clawlog.events.domain.tool import (
    ToolApprovalDecided,
    ToolCallCompleted,
    ToolCallFailed,
    ToolCallRefused,
)
from clawlog.events.streams import session_stream
from clawlog.events.telemetry import (
    APPROVAL_DECISION,
    APPROVAL_WAIT,
    CORRELATION,
    ERROR_TYPE,
    GEN_AI_OPERATION,
    GEN_AI_TOOL,
    GEN_AI_TOOL_CALL,
    POSITION,
    REFUSED_STEP,
    TOOL_OUTCOME,
)
from clawlog.tools import (
    ApprovalConfig,
    ExternalServiceError,
    FunctionTool,
    LoopDetectionConfig,
    PolicyConfig,
    RateLimitConfig,
    Scrubber,
    ToolContext,
    ToolPipeline,
    ToolPolicy,
    ToolRegistry,
)
from clawlog.tools.call_telemetry import APPROVAL_DECIDED, APPROVAL_REQUESTED
from clawlog.tools.decisions import ApprovalRequest, NeedsApproval, Ready
from clawlog.tools.driver import RecordingSink, StoreSink, run_tool_call
from clawlog.tools.loops import LoopDetector
from clawlog.tools.policy import PolicyEngine
from clawlog.tools.ratelimit import RateLimiter, Window
from tests.tools.support import BlockingTool, CountingTool, FakeClock, ShellTool, context

from .conftest import Telemetry

SECRET = "sk-" + "Zq8" * 10
CALLS = "clawlog.tool.calls"
WAITING = "clawlog.tool.approvals.waiting"


def build(*tools: Any, **options: Any) -> ToolPipeline:
    return ToolPipeline(ToolRegistry(tools), **options)


def answering(decision: str):
    async def approver(request: ApprovalRequest) -> str:
        return decision

    return approver


def tool_span(telemetry: Telemetry, tool: str) -> ReadableSpan:
    return telemetry.span(f"execute_tool {tool}")


def ending_events(events: list[Event]) -> list[Event]:
    return [
        e for e in events if isinstance(e, ToolCallRefused | ToolCallCompleted | ToolCallFailed)
    ]


# -- the span of a call that ran ---------------------------------------------------------
async def test_a_completed_call_is_a_child_of_the_current_span_with_its_log_position(
    telemetry: Telemetry, tmp_path: Path
) -> None:
    store = await open_store(tmp_path / "log.db")
    try:
        sink = StoreSink(store, session_stream("main", "s1"))
        with trace.get_tracer("test").start_as_current_span("turn") as turn:
            result = await run_tool_call(
                build(CountingTool()),
                context(correlation_id="turn-1"),
                "counter",
                {"text": "hi"},
                sink,
                call_id="c1",
            )
        assert result.for_llm == "ran 1"
        recorded = await store.read_stream(session_stream("main", "s1"))
    finally:
        await store.close()
    span = tool_span(telemetry, "counter")
    assert span.parent is not None and span.parent.span_id == turn.get_span_context().span_id
    assert span.kind == trace.SpanKind.INTERNAL
    assert span.status.status_code == StatusCode.UNSET
    completed = recorded[-1]
    assert completed.type == "tool.call_completed"
    assert dict(span.attributes or {}) == {
        GEN_AI_OPERATION: "execute_tool",
        GEN_AI_TOOL: "counter",
        GEN_AI_TOOL_CALL: "c1",
        CORRELATION: "turn-1",
        TOOL_OUTCOME: "completed",
        POSITION: completed.position,
    }
    assert telemetry.value(CALLS, tool="counter", outcome="completed", refused_step="") == 1


async def test_what_a_tool_traces_nests_under_its_call_span(telemetry: Telemetry) -> None:
    async def traced(ctx: ToolContext, args: dict[str, Any]) -> str:
        with trace.get_tracer("inside").start_as_current_span("inner work"):
            return "done"

    tool = FunctionTool("traced", traced, description="traces", parameters={"type": "object"})
    await run_tool_call(build(tool), context(), "traced", {}, RecordingSink())
    inner, outer = telemetry.span("inner work"), tool_span(telemetry, "traced")
    assert inner.parent is not None and inner.parent.span_id == outer.context.span_id


async def test_a_failing_tool_is_an_error_span_with_its_scrubbed_exception(
    telemetry: Telemetry,
) -> None:
    async def broken(ctx: ToolContext, args: dict[str, Any]) -> str:
        raise RuntimeError(f"upstream said no to {SECRET}")

    tool = FunctionTool("broken", broken, description="fails", parameters={"type": "object"})
    await run_tool_call(build(tool), context(), "broken", {}, RecordingSink())
    span = tool_span(telemetry, "broken")
    assert span.status.status_code == StatusCode.ERROR
    description = span.status.description or ""
    assert "upstream said no" in description and SECRET not in description
    assert span.attributes is not None
    assert span.attributes[TOOL_OUTCOME] == "failed"
    assert span.attributes[ERROR_TYPE] == "execution_failed"
    (exception,) = [e for e in span.events if e.name == "exception"]
    assert exception.attributes is not None
    assert exception.attributes["exception.type"] == "RuntimeError"
    assert "upstream said no" in str(exception.attributes["exception.message"])
    assert SECRET not in str(exception.attributes["exception.message"])
    assert SECRET not in str(exception.attributes["exception.stacktrace"])
    assert telemetry.value(CALLS, tool="broken", outcome="failed") == 1


async def test_a_tool_error_with_its_kind_is_an_error_span(telemetry: Telemetry) -> None:
    async def flaky(ctx: ToolContext, args: dict[str, Any]) -> str:
        raise ExternalServiceError("the API answered 503")

    tool = FunctionTool("flaky", flaky, description="fails", parameters={"type": "object"})
    await run_tool_call(build(tool), context(), "flaky", {}, RecordingSink())
    span = tool_span(telemetry, "flaky")
    assert span.status.status_code == StatusCode.ERROR
    assert span.attributes is not None and span.attributes[ERROR_TYPE] == "external_service"
    assert [e.name for e in span.events] == ["exception"]


async def test_a_tool_that_runs_out_of_time_is_a_timeout_error_span(
    telemetry: Telemetry,
) -> None:
    blocker = BlockingTool()  # never released: its 0.05 s timeout stops it
    await run_tool_call(build(blocker), context(), "blocker", {}, RecordingSink())
    span = tool_span(telemetry, "blocker")
    assert blocker.cancelled
    assert span.status.status_code == StatusCode.ERROR
    assert span.attributes is not None
    assert (span.attributes[TOOL_OUTCOME], span.attributes[ERROR_TYPE]) == ("timeout", "timeout")
    assert REFUSED_STEP not in span.attributes
    assert telemetry.value(CALLS, tool="blocker", outcome="timeout", refused_step="") == 1


# -- refusals: status UNSET, with the deciding step ---------------------------------------
def _refusing_setups() -> list[Any]:
    clock = FakeClock()
    limited = RateLimiter(RateLimitConfig(user_tool=(Window(0, 60.0),)), clock=clock)
    looping = LoopDetector(LoopDetectionConfig(warning_threshold=1, critical_threshold=1))
    denied = PolicyEngine(PolicyConfig(tools=ToolPolicy(deny=["counter"])))
    return [
        pytest.param({}, "missing_tool", {}, "resolve", id="resolve"),
        pytest.param({"policy": denied}, "counter", {}, "policy", id="policy"),
        pytest.param({}, "counter", {"count": "three"}, "validation", id="validation-schema"),
        pytest.param({}, "counter", "{not json", "validation", id="validation-json"),
        pytest.param({"rate_limiter": limited}, "counter", {}, "rate_limit", id="rate-limit"),
        pytest.param({"loop_detector": looping}, "counter", {}, "loop_detection", id="loop"),
        pytest.param(
            {"approval_config": ApprovalConfig(security="deny")},
            "counter",
            {},
            "approval",
            id="approval-security-deny",
        ),
    ]


@pytest.mark.parametrize(("options", "name", "args", "step"), _refusing_setups())
async def test_a_refused_call_is_an_unset_span_carrying_its_step(
    telemetry: Telemetry, options: dict[str, Any], name: str, args: Any, step: str
) -> None:
    tool = CountingTool(requires_approval=True)
    sink = RecordingSink()
    await run_tool_call(build(tool, **options), context(), name, args, sink, call_id="r1")
    span = tool_span(telemetry, name)
    assert span.status.status_code == StatusCode.UNSET
    assert span.attributes is not None
    assert (span.attributes[TOOL_OUTCOME], span.attributes[REFUSED_STEP]) == ("refused", step)
    assert span.attributes[GEN_AI_TOOL_CALL] == "r1"
    assert POSITION not in span.attributes  # a RecordingSink knows no positions
    assert tool.calls == []
    assert telemetry.value(CALLS, tool=name, outcome="refused", refused_step=step) == 1


async def test_a_deny_pattern_refuses_at_the_approval_step_without_waiting(
    telemetry: Telemetry,
) -> None:
    shell = ShellTool()
    await run_tool_call(build(shell), context(), "exec", {"command": "rm -rf /"}, RecordingSink())
    span = tool_span(telemetry, "exec")
    assert span.attributes is not None
    assert (span.attributes[TOOL_OUTCOME], span.attributes[REFUSED_STEP]) == (
        "refused",
        "approval",
    )
    assert APPROVAL_WAIT not in span.attributes and not span.events
    assert telemetry.points(WAITING) == []


# -- approvals: the wait as span events + attribute, the gauge back at zero ----------------
async def test_an_approved_call_carries_its_wait_and_the_waiting_count_returns_to_zero(
    telemetry: Telemetry,
) -> None:
    clock = FakeClock()
    pipeline = build(CountingTool(requires_approval=True), clock=clock)
    seen_waiting: list[float] = []

    async def approver(request: ApprovalRequest) -> str:
        seen_waiting.append(telemetry.value(WAITING, tool="counter"))
        clock.advance(2.5)  # the person took 2.5 s
        return "allow-once"

    sink = RecordingSink()
    result = await run_tool_call(pipeline, context(), "counter", {}, sink, approver)
    assert result.for_llm == "ran 1"
    assert seen_waiting == [1]
    assert telemetry.value(WAITING, tool="counter") == 0
    span = tool_span(telemetry, "counter")
    assert span.attributes is not None
    assert span.attributes[TOOL_OUTCOME] == "completed"
    assert span.attributes[APPROVAL_WAIT] == 2500.0
    assert REFUSED_STEP not in span.attributes
    assert [e.name for e in span.events] == [APPROVAL_REQUESTED, APPROVAL_DECIDED]
    assert dict(span.events[1].attributes or {}) == {APPROVAL_DECISION: "allow-once"}


@pytest.mark.parametrize(
    ("decision", "outcome"), [("deny", "denied"), ("timeout", "timeout")], ids=["deny", "timeout"]
)
async def test_a_denied_or_unanswered_approval_is_a_refusal_at_the_approval_step(
    telemetry: Telemetry, decision: str, outcome: str
) -> None:
    tool = CountingTool(requires_approval=True)
    sink = RecordingSink()
    await run_tool_call(build(tool), context(), "counter", {}, sink, answering(decision))
    span = tool_span(telemetry, "counter")
    # A person's deny is a refusal (UNSET); nobody answering is a timeout (ERROR).
    expected = StatusCode.ERROR if outcome == "timeout" else StatusCode.UNSET
    assert span.status.status_code == expected
    assert span.attributes is not None
    assert (span.attributes[TOOL_OUTCOME], span.attributes[REFUSED_STEP]) == (outcome, "approval")
    assert APPROVAL_WAIT in span.attributes
    assert telemetry.value(CALLS, tool="counter", outcome=outcome, refused_step="approval") == 1
    assert telemetry.value(WAITING, tool="counter") == 0
    assert tool.calls == []


async def test_an_approver_that_never_answers_times_out_and_stops_waiting(
    telemetry: Telemetry,
) -> None:
    never = asyncio.Event()

    async def silent(request: ApprovalRequest) -> str:
        await never.wait()
        return "allow-once"

    pipeline = build(
        CountingTool(requires_approval=True), approval_config=ApprovalConfig(timeout_s=0.05)
    )
    await run_tool_call(pipeline, context(), "counter", {}, RecordingSink(), silent)
    span = tool_span(telemetry, "counter")
    assert span.attributes is not None and span.attributes[TOOL_OUTCOME] == "timeout"
    assert dict(span.events[1].attributes or {}) == {APPROVAL_DECISION: "timeout"}
    assert telemetry.value(WAITING, tool="counter") == 0


async def test_a_call_cancelled_while_waiting_for_approval_stops_waiting(
    telemetry: Telemetry,
) -> None:
    asked = asyncio.Event()

    async def slow(request: ApprovalRequest) -> str:
        asked.set()
        await asyncio.Event().wait()
        return "allow-once"

    pipeline = build(CountingTool(requires_approval=True))
    task = asyncio.create_task(
        run_tool_call(pipeline, context(), "counter", {}, RecordingSink(), slow)
    )
    await asked.wait()
    assert telemetry.value(WAITING, tool="counter") == 1
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert telemetry.value(WAITING, tool="counter") == 0
    span = tool_span(telemetry, "counter")
    assert span.attributes is not None and TOOL_OUTCOME not in span.attributes  # never ended
    assert telemetry.points(CALLS) == []  # the log has no ending event: nothing counted


async def test_an_owner_closing_a_waiting_call_as_interrupted_stops_waiting(
    telemetry: Telemetry,
) -> None:
    """A session cancelled during the wait records the call as interrupted (the actor way:
    begin, append, ..., ``interrupted``, append, apply)."""
    pipeline, ctx = build(CountingTool(requires_approval=True)), context()
    decision = pipeline.begin(ctx, "w1", "counter", {})
    assert isinstance(decision, NeedsApproval)
    for event in decision.events:
        pipeline.apply(event)
    assert telemetry.value(WAITING, tool="counter") == 1
    for event in pipeline.interrupted(ctx, "w1", "counter", "cancelled by user"):
        pipeline.apply(event, 41)
    assert telemetry.value(WAITING, tool="counter") == 0
    span = tool_span(telemetry, "counter")
    assert span.status.status_code == StatusCode.ERROR
    assert span.attributes is not None
    assert span.attributes[ERROR_TYPE] == "interrupted" and span.attributes[POSITION] == 41


async def test_a_wait_begun_again_after_a_restart_is_counted_once(telemetry: Telemetry) -> None:
    """A session resuming a turn begins its waiting calls again (without recording the
    request twice): the earlier wait is replaced, not added to."""
    pipeline, ctx = build(CountingTool(requires_approval=True)), context()
    first = pipeline.begin(ctx, "w1", "counter", {})
    again = pipeline.begin(ctx, "w1", "counter", {})
    assert isinstance(first, NeedsApproval) and isinstance(again, NeedsApproval)
    assert telemetry.value(WAITING, tool="counter") == 1
    decided = pipeline.decide_approval(again.request, "allow-once", "ops")
    assert isinstance(decided, Ready)
    assert telemetry.value(WAITING, tool="counter") == 0
    outcome = await pipeline.execute(decided.plan)
    for event in [*decided.events, *outcome.events]:
        pipeline.apply(event)
    spans = telemetry.spans_named("execute_tool counter")
    assert [dict(s.attributes or {}).get(TOOL_OUTCOME) for s in spans] == [None, "completed"]


async def test_a_wait_restored_from_the_log_counts_until_decided(telemetry: Telemetry) -> None:
    """An embedder restarting rebuilds pending requests from the log (``restore_approval``):
    they wait again, and count again, until answered."""
    sink = RecordingSink()
    first = build(CountingTool(requires_approval=True))
    decision = first.begin(context(), "p1", "counter", {})
    assert isinstance(decision, NeedsApproval)
    await sink.record(decision.events)
    restarted = build(CountingTool(requires_approval=True))
    for event in sink.events:
        restarted.apply(event)
    [pending] = restarted.approvals.pending()
    request = restarted.restore_approval(context(), pending)
    assert isinstance(request, ApprovalRequest)
    assert telemetry.value(WAITING, tool="counter") == 2  # the first pipeline never answered
    refused = restarted.decide_approval(request, "deny", "ops")
    for event in refused.events:
        restarted.apply(event)
    assert telemetry.value(WAITING, tool="counter") == 1
    span = telemetry.span("execute_tool counter")
    assert dict(span.attributes or {})[TOOL_OUTCOME] == "denied"


def test_calls_never_folded_back_are_bounded_and_stop_counting(telemetry: Telemetry) -> None:
    """A caller that never applies the ending events (against ``apply``'s contract) cannot
    grow the calls in flight without bound: past 10,000 the oldest is abandoned."""
    pipeline = build(
        CountingTool(requires_approval=True),
        rate_limiter=RateLimiter(RateLimitConfig(session=(), user_tool=())),
        loop_detector=LoopDetector(LoopDetectionConfig(enabled=False)),
    )
    for n in range(10_001):
        assert isinstance(pipeline.begin(context(), f"c{n}", "counter", {}), NeedsApproval)
    assert telemetry.value(WAITING, tool="counter") == 10_000
    [abandoned] = telemetry.spans()
    assert dict(abandoned.attributes or {})[GEN_AI_TOOL_CALL] == "c0"
    assert pipeline.telemetry.span(context().session_key, "c0") is None
    assert pipeline.telemetry.span(context().session_key, "c10000") is not None


async def test_a_cancelled_running_call_ends_its_span_without_counting_it(
    telemetry: Telemetry,
) -> None:
    blocker = BlockingTool()
    blocker.timeout = 60.0
    task = asyncio.create_task(
        run_tool_call(build(blocker), context(), "blocker", {}, RecordingSink())
    )
    await blocker.started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    span = tool_span(telemetry, "blocker")
    assert [e.name for e in span.events] == ["cancelled before the call's end was recorded"]
    assert telemetry.points(CALLS) == []


# -- the counter is the log's ending events ------------------------------------------------
async def test_the_tool_calls_counter_matches_the_recorded_ending_events(
    telemetry: Telemetry, tmp_path: Path
) -> None:
    async def broken(ctx: ToolContext, args: dict[str, Any]) -> str:
        raise RuntimeError("no")

    gated = CountingTool("gated", requires_approval=True)
    pipeline = build(
        CountingTool(),
        gated,
        FunctionTool("broken", broken, description="fails", parameters={"type": "object"}),
        rate_limiter=RateLimiter(RateLimitConfig(session=(), user_tool=())),
        loop_detector=LoopDetector(LoopDetectionConfig(enabled=False)),
        scrubber=Scrubber(),
    )
    store = await open_store(tmp_path / "log.db")
    try:
        sink = StoreSink(store, session_stream("main", "s1"))
        # Each call, and the outcome the counter must give it (the kind of its ending
        # event and the refusing step, both checked against the log below).
        plan: list[tuple[str, dict[str, Any], Any, type[Event], str, str]] = [
            ("counter", {}, None, ToolCallCompleted, "completed", ""),
            ("counter", {"count": -1}, None, ToolCallRefused, "refused", "validation"),
            ("nope", {}, None, ToolCallRefused, "refused", "resolve"),
            ("broken", {}, None, ToolCallFailed, "failed", ""),
            ("gated", {}, answering("deny"), ToolCallRefused, "denied", "approval"),
            ("gated", {}, answering("allow-always"), ToolCallCompleted, "completed", ""),
            ("gated", {}, None, ToolCallCompleted, "completed", ""),  # allow-always: no wait
        ]
        for name, args, approver, *_ in plan:
            await run_tool_call(pipeline, context(), name, args, sink, approver)
        recorded = await store.read_stream(session_stream("main", "s1"))
    finally:
        await store.close()
    events = [r.event for r in recorded]
    endings = ending_events(events)
    assert [(type(e), e.tool, getattr(e, "step", "")) for e in endings] == [
        (kind, name, step) for name, _, _, kind, _, step in plan
    ]
    decisions = [e for e in events if isinstance(e, ToolApprovalDecided)]
    assert [d.decision for d in decisions] == ["deny", "allow-always"]
    expected = Counter((name, outcome, step) for name, _, _, _, outcome, step in plan)
    counted = Counter(
        {
            (p.attributes["tool"], p.attributes["outcome"], p.attributes["refused_step"]): p.value
            for p in telemetry.points(CALLS)
        }
    )
    assert counted == expected
    positions = {r.event.call_id: r.position for r in recorded if r.event in endings}
    spans = telemetry.spans_named("execute_tool counter") + telemetry.spans_named(
        "execute_tool gated"
    )
    for span in spans:
        attributes = dict(span.attributes or {})
        assert attributes[POSITION] == positions[attributes[GEN_AI_TOOL_CALL]]
    assert telemetry.value(WAITING) == 0


async def test_replaying_the_log_into_a_new_pipeline_counts_nothing_again(
    telemetry: Telemetry,
) -> None:
    sink = RecordingSink()
    await run_tool_call(build(CountingTool()), context(), "counter", {}, sink)
    assert telemetry.value(CALLS) == 1
    restarted = build(CountingTool())
    for event in sink.events:
        restarted.apply(event)
    assert telemetry.value(CALLS) == 1
    assert len(telemetry.spans()) == 1


async def test_without_an_sdk_no_call_is_tracked() -> None:
    """No provider set (this test has no ``telemetry`` fixture): the pipeline keeps
    nothing per call, so nothing can leak or be emitted."""
    pipeline = build(CountingTool(requires_approval=True))
    decision = pipeline.begin(context(), "q1", "counter", {})
    assert isinstance(decision, NeedsApproval)
    assert pipeline.telemetry.span(context().session_key, "q1") is None
    result = await run_tool_call(pipeline, context(), "counter", {}, RecordingSink())
    assert result.is_error and result.error_kind == "not_authorized"  # no approver: denied


# -- through a Session: the turn's child, the position of the event that ended it ---------
def _asker(request: ModelRequest) -> ModelReply:
    last = request.messages[-1]
    if last.role == "tool":
        return reply(f"tool said: {last.content}")
    return call("deploy", call_id="needs-ok", target="prod")


async def _deploy(ctx: object, args: dict[str, object]) -> str:
    return f"deployed to {args['target']}"


DEPLOY = FunctionTool(
    "deploy",
    _deploy,
    description="Deploy a build",
    requires_approval=True,
    parameters={
        "type": "object",
        "properties": {"target": {"type": "string"}},
        "required": ["target"],
    },
)


async def _wait_for_type(system: System, stream: str, event_type: str) -> None:
    async with system.store.subscribe(1, stream_prefix=stream) as events:
        async for recorded in events:
            if recorded.stream == stream and recorded.type == event_type:
                return


async def test_a_sessions_approved_call_is_a_child_of_its_turn_with_its_position(
    telemetry: Telemetry, tmp_path: Path
) -> None:
    async with System.open(tmp_path / "log.db") as system:
        await system.register_agent(AgentConfig(key="main"), ScriptedModel(_asker), tools=[DEPLOY])
        turn = asyncio.ensure_future(system.send("main", "u", "deploy it"))
        await _wait_for_type(system, "session/main/u", "tool.approval_requested")
        assert telemetry.value(WAITING, tool="deploy") == 1
        assert await system.approve("main", "u", "needs-ok", "allow-once", by="ops")
        assert await turn == "tool said: deployed to prod"
        recorded = await system.store.read_stream("session/main/u")
    [completed] = [r for r in recorded if r.type == "tool.call_completed"]
    span = tool_span(telemetry, "deploy")
    attributes = dict(span.attributes or {})
    assert attributes[TOOL_OUTCOME] == "completed"
    assert attributes[POSITION] == completed.position
    assert attributes[APPROVAL_WAIT] >= 0
    turns = [s for s in telemetry.spans() if s.name.startswith("invoke_agent")]
    assert span.parent is not None
    assert span.parent.span_id in [t.context.span_id for t in turns]
    assert telemetry.value(WAITING, tool="deploy") == 0
    assert telemetry.value(CALLS, tool="deploy", outcome="completed") == 1


async def test_a_turn_cancelled_during_an_approval_wait_stops_waiting(
    telemetry: Telemetry, tmp_path: Path
) -> None:
    async with System.open(tmp_path / "log.db") as system:
        await system.register_agent(AgentConfig(key="main"), ScriptedModel(_asker), tools=[DEPLOY])
        turn = asyncio.ensure_future(system.send("main", "u", "deploy it"))
        await _wait_for_type(system, "session/main/u", "tool.approval_requested")
        assert telemetry.value(WAITING, tool="deploy") == 1
        assert await system.cancel("main", "u", by="ops")
        await asyncio.gather(turn, return_exceptions=True)
        recorded = await system.store.read_stream("session/main/u")
    [failed] = [r for r in recorded if r.type == "tool.call_failed"]
    assert telemetry.value(WAITING, tool="deploy") == 0
    span = tool_span(telemetry, "deploy")
    attributes = dict(span.attributes or {})
    assert (attributes[TOOL_OUTCOME], attributes[ERROR_TYPE]) == ("failed", "interrupted")
    assert attributes[POSITION] == failed.position
