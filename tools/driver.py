"""Running a call end to end without actors: for embedders, tests and benchmarks.

An actor drives the pipeline step by step (``begin`` in its thread, ``execute`` on the
hub); :func:`run_tool_call` does the same in one coroutine, recording every batch of
events through an :class:`EventSink` before going on.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol

from clawlog.events import Event, EventStore, RecordedEvent
from clawlog.events.domain.tool import (
    ApprovalOutcome,
    ToolCallCompleted,
    ToolCallFailed,
    ToolCallRefused,
)

from .context import ToolContext
from .decisions import ApprovalRequest, NeedsApproval, Refused
from .pipeline import ToolPipeline
from .result import ToolResult

__all__ = [
    "Approver",
    "EventSink",
    "RecordingSink",
    "StoreSink",
    "result_from_event",
    "run_tool_call",
]

#: Answers an approval request (``"timeout"`` counts as deny).
Approver = Callable[[ApprovalRequest], Awaitable[ApprovalOutcome]]


class EventSink(Protocol):
    async def record(self, events: Sequence[Event]) -> Sequence[RecordedEvent] | None:
        """Make ``events`` durable, in order, before returning; return them as recorded
        (their log positions go on the call's span), or None when they have none."""
        ...


class RecordingSink:
    """Keeps events in a list (tests, dry runs)."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    async def record(self, events: Sequence[Event]) -> None:
        self.events.extend(events)


class StoreSink:
    """Appends to one stream of an event store, tracking its version (sole writer)."""

    def __init__(self, store: EventStore, stream: str, *, version: int = 0) -> None:
        self.store, self.stream, self.version = store, stream, version

    async def record(self, events: Sequence[Event]) -> list[RecordedEvent]:
        recorded = await self.store.append(self.stream, list(events), self.version)
        self.version = recorded[-1].version
        return recorded


async def run_tool_call(
    pipeline: ToolPipeline,
    ctx: ToolContext,
    name: str,
    args: dict[str, Any] | str | None,
    sink: EventSink,
    approver: Approver | None = None,
    *,
    call_id: str | None = None,
) -> ToolResult:
    """Decide, (ask,) run and record one call; return what the model should read.

    Without an ``approver`` a call that needs approval is denied. An approver that does
    not answer within the request's timeout counts as ``timeout`` (= deny).

    The tool runs with the idempotency key of ``ctx`` and ``call_id``
    (:func:`tools.side_effects.idempotency_key`): to run a call again with the same key
    (after a crash), pass the same ``call_id`` and correlation id. Without a ``call_id``
    a random one is drawn, and so is the key.
    """
    call_id = call_id or uuid.uuid4().hex
    try:
        return await _run(pipeline, ctx, call_id, name, args, sink, approver)
    except BaseException as exc:  # nothing ends the call in the log: neither on its span
        pipeline.telemetry.discard(ctx.session_key, call_id, exc)
        raise


async def _run(
    pipeline: ToolPipeline,
    ctx: ToolContext,
    call_id: str,
    name: str,
    args: dict[str, Any] | str | None,
    sink: EventSink,
    approver: Approver | None,
) -> ToolResult:
    decision = pipeline.begin(ctx, call_id, name, args)
    await _record(pipeline, sink, decision.events)
    if isinstance(decision, NeedsApproval):
        answer, by = await _ask(decision.request, approver)
        decision = pipeline.decide_approval(decision.request, answer, by)
        await _record(pipeline, sink, decision.events)
    if isinstance(decision, Refused):
        return decision.result
    outcome = await pipeline.execute(decision.plan)
    await _record(pipeline, sink, outcome.events)
    return outcome.result


async def _ask(request: ApprovalRequest, approver: Approver | None) -> tuple[ApprovalOutcome, str]:
    if approver is None:
        return "deny", "nobody (no approver configured)"
    try:
        async with asyncio.timeout(request.timeout_s):
            return await approver(request), "approver"
    except TimeoutError:
        return "timeout", "clawlog"


async def _record(pipeline: ToolPipeline, sink: EventSink, events: Sequence[Event]) -> None:
    if not events:
        return
    recorded = await sink.record(events)
    if recorded is not None and len(recorded) == len(events):
        for item, event in zip(recorded, events, strict=True):
            pipeline.apply(event, item.position)
        return
    for event in events:
        pipeline.apply(event)


def result_from_event(event: Event) -> tuple[str, ToolResult] | None:
    """For an event that ends a call: ``(call_id, the result the model read)``.

    Lets a Session rebuild its conversation from the log without re-running tools.
    """
    match event:
        case ToolCallCompleted():
            result = ToolResult(
                for_llm=event.for_llm,
                for_user=event.for_user,
                details=event.details,
                truncated=event.truncated,
            )
        case ToolCallFailed():
            result = ToolResult(
                for_llm=event.for_llm or event.message,
                details=event.details,
                is_error=True,
                truncated=event.truncated,
                error_kind=event.error_kind,
            )
        case ToolCallRefused():
            result = ToolResult(
                for_llm=event.for_llm or event.reason,
                details={"step": event.step},
                is_error=True,
                error_kind=event.error_kind,
            )
        case _:
            return None
    return event.call_id, result
