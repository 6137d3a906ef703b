"""The pipeline end to end: events per call, refusals that never run the tool, execution
failures, scrubbing, truncation, loop warnings, thread safety, durable recording."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import msgspec
import pytest

from clawlog.events import default_registry, open_store
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
    ToolResult,
)
from clawlog.tools.builtins import EchoTool
from clawlog.tools.decisions import Ready
from clawlog.tools.driver import RecordingSink, StoreSink, result_from_event, run_tool_call
from clawlog.tools.loops import LoopDetector
from clawlog.tools.policy import PolicyEngine
from clawlog.tools.ratelimit import RateLimiter, Window

from .support import BlockingTool, CountingTool, FakeClock, context

SECRET = "sk-" + "Zq8" * 10


def build(*tools: Any, **options: Any) -> ToolPipeline:
    return ToolPipeline(ToolRegistry(tools), **options)


def kinds(events: list[Any]) -> list[str]:
    return [type(e).__struct_config__.tag for e in events]


async def test_a_successful_call_records_requested_started_completed() -> None:
    tool = CountingTool()
    sink = RecordingSink()
    result = await run_tool_call(
        build(tool), context(), "counter", {"text": "hi"}, sink, call_id="call-1"
    )
    assert result == ToolResult(for_llm="ran 1")
    assert kinds(sink.events) == ["tool.call_requested", "tool.call_started", "tool.call_completed"]
    requested, started, completed = sink.events
    assert (requested.call_id, requested.tool, requested.agent) == ("call-1", "counter", "main")
    assert requested.session_key == "s1" and requested.arguments == {"text": "hi"}
    assert started.domain == "orchestrator" and started.timeout_s == 60.0
    assert completed.for_llm == "ran 1" and completed.duration_ms >= 0
    assert tool.calls == [{"text": "hi"}]


# -- refusals: exactly requested + refused, and the tool never runs --------------------
def _refusing_setups() -> list[Any]:
    clock = FakeClock()
    limited = RateLimiter(RateLimitConfig(user_tool=(Window(0, 60.0),)), clock=clock)
    looping = LoopDetector(LoopDetectionConfig(warning_threshold=1, critical_threshold=1))
    denied = PolicyEngine(PolicyConfig(tools=ToolPolicy(deny=["counter"])))
    return [
        pytest.param({}, "missing_tool", {"text": "x"}, "resolve", "not_authorized", id="resolve"),
        pytest.param({"policy": denied}, "counter", {}, "policy", "not_authorized", id="policy"),
        pytest.param(
            {},
            "counter",
            {"count": "three"},
            "validation",
            "invalid_parameters",
            id="validation-schema",
        ),
        pytest.param(
            {}, "counter", "{not json", "validation", "invalid_parameters", id="validation-json"
        ),
        pytest.param(
            {},
            "counter",
            "[1, 2]",
            "validation",
            "invalid_parameters",
            id="validation-not-an-object",
        ),
        pytest.param(
            {"rate_limiter": limited}, "counter", {}, "rate_limit", "rate_limited", id="rate-limit"
        ),
        pytest.param(
            {"loop_detector": looping}, "counter", {}, "loop_detection", "loop_detected", id="loop"
        ),
        pytest.param(
            {"approval_config": ApprovalConfig(security="deny")},
            "counter",
            {},
            "approval",
            "not_authorized",
            id="approval",
        ),
    ]


@pytest.mark.parametrize(("options", "name", "args", "step", "kind"), _refusing_setups())
async def test_a_refused_call_leaves_requested_and_refused_and_never_runs(
    options: dict[str, Any], name: str, args: Any, step: str, kind: str
) -> None:
    tool = CountingTool(requires_approval=True)
    sink = RecordingSink()
    result = await run_tool_call(build(tool, **options), context(), name, args, sink)
    assert kinds(sink.events) == ["tool.call_requested", "tool.call_refused"]
    refused = sink.events[1]
    assert (refused.step, refused.error_kind) == (step, kind)
    assert refused.reason and refused.for_llm == result.for_llm
    assert result.is_error and result.error_kind == kind
    assert tool.calls == []


async def test_refusal_messages_tell_the_model_what_to_do() -> None:
    pipeline = build(CountingTool(), EchoTool())
    sink = RecordingSink()
    unknown = await run_tool_call(pipeline, context(), "nope", {}, sink)
    assert "no tool named 'nope'" in unknown.for_llm and "counter, echo" in unknown.for_llm
    bad = await run_tool_call(pipeline, context(), "counter", {"count": -1}, sink)
    assert "parameter 'count'" in bad.for_llm and "call again" in bad.for_llm
    missing = await run_tool_call(pipeline, context(), "echo", {}, sink)
    assert "missing required parameter 'message'" in missing.for_llm


async def test_a_rate_limited_refusal_carries_retry_after() -> None:
    clock = FakeClock()
    limiter = RateLimiter(RateLimitConfig(user_tool=(Window(1, 60.0),)), clock=clock)
    pipeline = build(CountingTool(), rate_limiter=limiter)
    sink = RecordingSink()
    await run_tool_call(pipeline, context(), "counter", {}, sink)
    clock.advance(15)
    result = await run_tool_call(pipeline, context(), "counter", {}, sink)
    refused = sink.events[-1]
    assert refused.retry_after == pytest.approx(45.0)
    assert "Try again in 45 s" in result.for_llm


# -- execution --------------------------------------------------------------------------
async def test_a_slow_tool_times_out_is_cancelled_and_recorded_as_failed() -> None:
    tool = BlockingTool()
    sink = RecordingSink()
    result = await run_tool_call(build(tool), context(), "blocker", {}, sink)
    assert tool.cancelled
    assert result.is_error and result.error_kind == "timeout"
    failed = sink.events[-1]
    assert kinds(sink.events)[-1] == "tool.call_failed"
    assert failed.error_kind == "timeout" and "within 0.05 s" in failed.message


@pytest.mark.parametrize(
    ("raised", "kind"),
    [
        (ExternalServiceError("the API answered 503"), "external_service"),
        (RuntimeError("boom"), "execution_failed"),
    ],
)
async def test_a_tool_error_becomes_call_failed_with_its_kind(raised: Exception, kind: str) -> None:
    async def fail(ctx: ToolContext, args: dict[str, Any]) -> str:
        raise raised

    sink = RecordingSink()
    result = await run_tool_call(build(FunctionTool("flaky", fail)), context(), "flaky", {}, sink)
    assert result.error_kind == kind
    assert sink.events[-1].error_kind == kind
    assert str(raised) in sink.events[-1].message


async def test_an_error_result_from_the_tool_is_recorded_as_failed() -> None:
    async def nope(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
        return ToolResult.error("sandbox", "container is gone")

    sink = RecordingSink()
    await run_tool_call(build(FunctionTool("box", nope)), context(), "box", {}, sink)
    assert kinds(sink.events)[-1] == "tool.call_failed"
    assert sink.events[-1].error_kind == "sandbox"


async def test_cancelling_execution_propagates_and_interrupted_closes_the_call() -> None:
    tool = BlockingTool()
    tool.timeout = 60.0  # type: ignore[misc]
    pipeline = build(tool)
    decision = pipeline.begin(context(), "c1", "blocker", {})
    assert isinstance(decision, Ready)
    task = asyncio.ensure_future(pipeline.execute(decision.plan))
    await tool.started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert tool.cancelled
    closing = pipeline.interrupted(context(), "c1", "blocker", "the turn was cancelled")
    assert closing[0].error_kind == "interrupted"
    assert "may or may not have had effects" in closing[0].message


async def test_secrets_never_reach_the_events_or_the_model() -> None:
    async def leaky(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
        return ToolResult(
            for_llm=f"config: OPENAI={SECRET} host=10.9.8.7",
            for_user=f"your key {SECRET}",
            details={"env": {"API_KEY": "plain-value-123"}, "note": SECRET},
        )

    scrubber = Scrubber(["10.9.8.7"])
    pipeline = build(FunctionTool("leaky", leaky), scrubber=scrubber)
    sink = RecordingSink()
    result = await run_tool_call(
        pipeline, context(), "leaky", {"query": f"use {SECRET}", "password": "hunter2"}, sink
    )
    encoded = b"".join(default_registry().encode(e)[2] for e in sink.events)
    for secret in (SECRET, "10.9.8.7", "hunter2", "plain-value-123"):
        assert secret.encode() not in encoded
        assert secret not in result.for_llm + result.for_user + str(result.details)


async def test_no_authorization_credential_reaches_the_events_or_the_model() -> None:
    keys = ["apikey-7Qm2x", "digest-resp-9f1c", "aws-sig-5d67", "custom-tok-31"]

    async def fetch(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
        return ToolResult(
            for_llm=(
                f"> GET / HTTP/1.1\r\n> Authorization: ApiKey {keys[0]}\r\n"
                f'> Proxy-Authorization: Digest username="bob", response="{keys[1]}"\n'
            ),
            for_user=f"Authorization: AWS4-HMAC-SHA256 Credential=x/y, Signature={keys[2]}",
            details={"headers": f'{{"Authorization": "Splunk {keys[3]}"}}'},
        )

    pipeline = build(FunctionTool("fetch", fetch))
    sink = RecordingSink()
    command = f"curl -H 'Authorization: ApiKey {keys[0]}' https://api.example.com"
    result = await run_tool_call(pipeline, context(), "fetch", {"command": command}, sink)
    encoded = b"".join(default_registry().encode(e)[2] for e in sink.events)
    for key in keys:
        assert key.encode() not in encoded
        assert key not in result.for_llm + result.for_user + str(result.details)
    assert "Authorization: ApiKey [REDACTED]" in result.for_llm  # the scheme stays


async def test_a_long_result_is_truncated_with_a_notice() -> None:
    async def chatty(ctx: ToolContext, args: dict[str, Any]) -> str:
        return "x" * 5_000

    sink = RecordingSink()
    pipeline = build(FunctionTool("chatty", chatty), max_result_chars=1_000)
    result = await run_tool_call(pipeline, context(), "chatty", {}, sink)
    assert result.truncated and sink.events[-1].truncated
    assert result.for_llm.startswith("x" * 1_000)
    assert "showing the first 1000 of 5000 characters" in result.for_llm


async def test_outside_content_is_sanitized_but_echo_output_is_not() -> None:
    async def fetched(ctx: ToolContext, args: dict[str, Any]) -> str:
        return "safe\u202etxt.exe\x00\x07 end\n"

    sink = RecordingSink()
    web = await run_tool_call(build(FunctionTool("web", fetched)), context(), "web", {}, sink)
    assert web.for_llm == "safetxt.exe end\n"
    echo = await run_tool_call(build(EchoTool()), context(), "echo", {"message": "a\u202eb"}, sink)
    assert echo.for_llm == "a\u202eb"


async def test_a_loop_warning_is_recorded_and_put_before_the_result() -> None:
    detector = LoopDetector(LoopDetectionConfig(warning_threshold=2))
    pipeline = build(CountingTool(), loop_detector=detector)
    sink = RecordingSink()
    await run_tool_call(pipeline, context(), "counter", {}, sink)
    result = await run_tool_call(pipeline, context(), "counter", {}, sink)
    assert kinds(sink.events)[3:] == [
        "tool.call_requested",
        "tool.loop_warning",
        "tool.call_started",
        "tool.call_completed",
    ]
    assert sink.events[4].pattern == "generic_repeat" and sink.events[4].count == 2
    assert result.for_llm.startswith("[Loop warning:") and result.for_llm.endswith("ran 2")
    pipeline.reset_loops(context())
    fresh = await run_tool_call(pipeline, context(), "counter", {}, sink)
    assert fresh.for_llm == "ran 3"


async def test_result_from_event_rebuilds_what_the_model_read() -> None:
    sink = RecordingSink()
    pipeline = build(CountingTool())
    ok = await run_tool_call(pipeline, context(), "counter", {}, sink, call_id="a")
    refused = await run_tool_call(pipeline, context(), "nope", {}, sink, call_id="b")
    rebuilt = dict(filter(None, (result_from_event(e) for e in sink.events)))
    assert rebuilt["a"].for_llm == ok.for_llm and not rebuilt["a"].is_error
    assert rebuilt["b"].for_llm == refused.for_llm and rebuilt["b"].is_error


def test_begin_is_thread_safe_under_a_shared_rate_limit() -> None:
    limiter = RateLimiter(RateLimitConfig(session=(Window(500, 60.0),), user_tool=()))
    pipeline = build(
        CountingTool(),
        rate_limiter=limiter,
        loop_detector=LoopDetector(LoopDetectionConfig(enabled=False)),
    )
    ready = []
    start = threading.Barrier(8)

    def worker(n: int) -> None:
        start.wait()
        for i in range(100):
            decision = pipeline.begin(context(), f"{n}-{i}", "counter", {"count": i})
            if isinstance(decision, Ready):
                ready.append(decision)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(ready) == 500


def test_definitions_follow_the_policy_and_the_provider() -> None:
    nullable = FunctionTool(
        "opt",
        lambda ctx, args: None,  # type: ignore[arg-type, return-value]
        parameters={"type": "object", "properties": {"x": {"type": ["string", "null"]}}},
    )
    pipeline = build(
        EchoTool(),
        nullable,
        CountingTool(),
        policy=PolicyEngine(PolicyConfig(tools=ToolPolicy(deny=["counter"]))),
    )
    openai = {d.name: d.parameters for d in pipeline.definitions(context(provider="openai"))}
    assert set(openai) == {"echo", "opt"}
    assert openai["opt"]["properties"]["x"] == {"type": "string"}
    gemini = pipeline.definitions(context(), provider="gemini")
    assert {d.name: d.parameters for d in gemini}["opt"]["properties"]["x"] == {
        "type": "string",
        "nullable": True,
    }
    assert pipeline.explain("counter", context()).decided_by == "deny"


async def test_calls_are_recorded_durably_and_decode_back(tmp_path: Path) -> None:
    stream = "session/main/s1"
    async with await open_store(tmp_path / "log.db") as store:
        sink = StoreSink(store, stream)
        pipeline = build(EchoTool(), CountingTool())
        await run_tool_call(pipeline, context(), "echo", {"message": "hello"}, sink)
        await run_tool_call(pipeline, context(), "nope", {}, sink)
        assert sink.version == 5
    async with await open_store(tmp_path / "log.db") as store:
        recorded = await store.read_stream(stream)
    assert [r.type for r in recorded] == [
        "tool.call_requested",
        "tool.call_started",
        "tool.call_completed",
        "tool.call_requested",
        "tool.call_refused",
    ]
    assert recorded[2].event.for_llm == "hello"  # type: ignore[union-attr]
    assert msgspec.structs.asdict(recorded[4].event)["step"] == "resolve"  # type: ignore[arg-type]


async def test_arguments_an_embedder_passes_as_python_objects_are_recorded_safely() -> None:
    import datetime as dt

    when = dt.datetime(2024, 5, 1, tzinfo=dt.UTC)
    sink = RecordingSink()
    tool = FunctionTool("any", lambda ctx, args: _text(args))  # type: ignore[arg-type, return-value]
    await run_tool_call(build(tool), context(), "any", {"when": when, "obj": object()}, sink)
    requested = sink.events[0]
    assert requested.arguments["when"] == "2024-05-01T00:00:00Z"
    assert requested.arguments["obj"].startswith("<object object")
    assert all(default_registry().encode(e) for e in sink.events)


async def _text(args: dict[str, Any]) -> str:
    return str(sorted(args))
