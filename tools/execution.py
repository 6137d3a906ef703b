"""Executing a planned call, and the events that bracket it.

The tool runs with its call's idempotency key in its context (:func:`keyed_context`),
and ``tool.call_started`` records the same key."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from typing import Any

import msgspec
from opentelemetry.trace import Span

from clawlog.events import Event
from clawlog.events.domain.tool import (
    ToolCallCompleted,
    ToolCallFailed,
    ToolCallStarted,
)
from clawlog.events.logging import get_logger

from .call_telemetry import record_exception
from .context import ToolContext
from .decisions import Outcome, ToolPlan
from .errors import ToolCallError
from .finish import ResultFinisher
from .result import ErrorKind, ToolResult
from .side_effects import idempotency_key

__all__ = [
    "call_key",
    "interrupted_event",
    "keyed_context",
    "outcome_event",
    "parse_arguments",
    "plain",
    "run_plan",
    "started_event",
]

_log = get_logger(__name__)
_json = msgspec.json.Decoder()


async def run_plan(plan: ToolPlan, finisher: ResultFinisher, span: Span | None = None) -> Outcome:
    """Execute with the tool's timeout; failures become error results, never exceptions
    (cancellation propagates); the result is scrubbed, sanitized and truncated. What the
    tool raised is recorded on ``span``, the call's span, when it is traced."""
    tool, started = plan.tool, time.perf_counter()
    try:
        async with asyncio.timeout(tool.timeout):
            raw = await tool.execute(keyed_context(plan), dict(plan.args))
        if not isinstance(raw, ToolResult):
            raw = ToolResult.text(str(raw))
    except TimeoutError as exc:
        record_exception(span, exc, finisher.scrubber.scrub)
        raw = ToolResult.error(
            ErrorKind.TIMEOUT,
            f"{tool.name} did not finish within {tool.timeout:g} s and was stopped. Try a "
            "smaller task or another approach.",
        )
    except ToolCallError as exc:
        record_exception(span, exc, finisher.scrubber.scrub)
        raw = ToolResult.error(exc.kind, f"{tool.name} failed: {exc}")
    except Exception as exc:
        record_exception(span, exc, finisher.scrubber.scrub)
        _log.warning(
            "tool crashed",
            tool=tool.name,
            call_id=plan.call_id,
            error=finisher.scrubber.scrub(repr(exc))[:500],
        )
        raw = ToolResult.error(
            ErrorKind.EXECUTION_FAILED, f"{tool.name} failed: {type(exc).__name__}: {exc}"
        )
    duration_ms = (time.perf_counter() - started) * 1000
    result = finisher.finish(raw, sanitize=tool.requires_sanitization, warning=plan.warning)
    return Outcome(
        result=result,
        events=[outcome_event(plan, result, duration_ms)],
        duration_ms=duration_ms,
    )


def outcome_event(plan: ToolPlan, result: ToolResult, duration_ms: float) -> Event:
    ctx = plan.ctx
    if result.is_error:
        return ToolCallFailed(
            call_id=plan.call_id,
            tool=plan.name,
            error_kind=result.error_kind or ErrorKind.EXECUTION_FAILED,
            message=result.for_llm,
            agent=ctx.agent,
            session_key=ctx.session_key,
            duration_ms=duration_ms,
            truncated=result.truncated,
            details=result.details,
        )
    return ToolCallCompleted(
        call_id=plan.call_id,
        tool=plan.name,
        for_llm=result.for_llm,
        agent=ctx.agent,
        session_key=ctx.session_key,
        for_user=result.for_user,
        details=result.details,
        duration_ms=duration_ms,
        truncated=result.truncated,
    )


def call_key(ctx: ToolContext, call_id: str) -> str:
    """The idempotency key of call ``call_id`` made from ``ctx``: the one the caller set,
    else derived (:func:`tools.side_effects.idempotency_key`)."""
    return ctx.idempotency_key or idempotency_key(
        ctx.agent, ctx.session_key, ctx.correlation_id, call_id
    )


def keyed_context(plan: ToolPlan) -> ToolContext:
    """The context the tool runs with: the plan's, with the call's idempotency key."""
    ctx = plan.ctx
    if ctx.idempotency_key:
        return ctx
    return msgspec.structs.replace(ctx, idempotency_key=call_key(ctx, plan.call_id))


def started_event(plan: ToolPlan) -> ToolCallStarted:
    ctx = plan.ctx
    return ToolCallStarted(
        call_id=plan.call_id,
        tool=plan.name,
        agent=ctx.agent,
        session_key=ctx.session_key,
        domain=plan.tool.domain,
        timeout_s=plan.tool.timeout,
        idempotency_key=call_key(ctx, plan.call_id),
    )


def interrupted_event(ctx: ToolContext, call_id: str, name: str, reason: str) -> ToolCallFailed:
    return ToolCallFailed(
        call_id=call_id,
        tool=name,
        error_kind=ErrorKind.INTERRUPTED,
        message=f"The {name} call did not finish ({reason}). It may or may not have had "
        "effects: check before repeating it.",
        agent=ctx.agent,
        session_key=ctx.session_key,
    )


def plain(args: Mapping[str, Any]) -> dict[str, Any]:
    """``args`` as JSON-like values an event can hold (an embedder may pass any object)."""
    try:
        value = msgspec.to_builtins(args, str_keys=True, enc_hook=repr)
    except (TypeError, ValueError):
        return {str(k): repr(v) for k, v in args.items()}
    return value if isinstance(value, dict) else {}


def parse_arguments(args: Mapping[str, Any] | str | None) -> tuple[dict[str, Any] | None, str]:
    """The arguments as a dict, or None and why not."""
    if args is None:
        return {}, ""
    if isinstance(args, Mapping):
        return dict(args), ""
    text = args.strip() or "{}"
    try:
        value = _json.decode(text)
    except msgspec.DecodeError as exc:
        return None, f"the arguments are not valid JSON ({exc})"
    if not isinstance(value, dict):
        return None, f"the arguments must be a JSON object, not {type(value).__name__}"
    return value, ""
