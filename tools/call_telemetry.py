"""OpenTelemetry for tool calls: one ``execute_tool {tool}`` span per call through the
pipeline, and the ``clawlog.tool.calls`` / ``clawlog.tool.approvals.waiting`` metrics.

A call's span starts in :meth:`ToolPipeline.begin` as a child of the CURRENT context (the
session makes its turn span current there), is current while the tool runs (so an MCP call
or a delegation the tool makes nests under it) and ends when the event that ends the call
(``tool.call_refused``, ``tool.call_completed`` or ``tool.call_failed``) is folded back
with :meth:`ToolPipeline.apply`: only then is the event durable, and its log position known
(``clawlog.log.position``). The counter counts the same moment, so it matches the log.

Attributes are derived from the recorded events by :func:`call_outcome` and
:func:`ended_attributes`, so the export of a recorded session rebuilds the same span.

The approval wait is two span events (``approval requested`` / ``approval decided``) and
the ``clawlog.tool.approval_wait_ms`` attribute, not a child span: the wait is no work of
clawlog's, the tree stays one span per call (what the export rebuilds from the same two
events), and a trace UI still marks both instants on the call's bar.

Every span carries the call's correlation id (``clawlog.correlation_id``: the turn, from
``ToolContext.correlation_id``) and the position of its ending event. So does the span of
work the call does that ends before that event is recorded (an MCP request, whose client
span ends when the server answers): the work ends it with :func:`end_with_call`, which
keeps it, with its end time, until the call's ending event is folded back, and then sets
that event's position on it (:meth:`CallTelemetry.running` makes the call known to the
code it runs).

Without an SDK (``tracing_enabled()`` and ``metrics_enabled()`` both False) nothing is
tracked: :meth:`CallTelemetry.started` returns after two look-ups.
"""

from __future__ import annotations

import asyncio
import threading
import time
import traceback
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from contextvars import ContextVar
from typing import Literal

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Span, Status, StatusCode
from opentelemetry.util.types import AttributeValue

from clawlog.events import Event
from clawlog.events.domain.tool import (
    ApprovalOutcome,
    ToolCallCompleted,
    ToolCallFailed,
    ToolCallRefused,
)
from clawlog.events.telemetry import (
    APPROVAL_DECISION,
    APPROVAL_WAIT,
    CORRELATION,
    ERROR_TYPE,
    EXCEPTION_MESSAGE,
    EXCEPTION_STACKTRACE,
    GEN_AI_OPERATION,
    GEN_AI_TOOL,
    GEN_AI_TOOL_CALL,
    METRIC_OUTCOME,
    METRIC_REFUSED_STEP,
    METRIC_TOOL,
    OPERATION_EXECUTE_TOOL,
    POSITION,
    REFUSED_STEP,
    TOOL_OUTCOME,
    instruments,
    metrics_enabled,
    tracer,
    tracing_enabled,
)

from .result import ErrorKind

__all__ = [
    "APPROVAL_DECIDED",
    "APPROVAL_REQUESTED",
    "CallOutcome",
    "CallTelemetry",
    "call_outcome",
    "end_with_call",
    "ended_attributes",
    "ended_status",
    "record_exception",
    "running_call_correlation",
    "span_name",
]

#: The span events of an approval wait (the second one carries ``APPROVAL_DECISION``).
APPROVAL_REQUESTED = "approval requested"
APPROVAL_DECIDED = "approval decided"

#: The values of ``clawlog.tool.outcome``.
CallOutcome = Literal["completed", "failed", "refused", "denied", "timeout"]
EndingEvent = ToolCallRefused | ToolCallCompleted | ToolCallFailed

#: Calls kept open at most: a caller that never folds the ending events back (against
#: :meth:`ToolPipeline.apply`'s contract) must not grow this without bound.
_MAX_OPEN = 10_000


def span_name(tool: str) -> str:
    return f"{OPERATION_EXECUTE_TOOL} {tool}"


def call_outcome(event: EndingEvent, approval: ApprovalOutcome | None = None) -> CallOutcome:
    """The outcome of the call ``event`` ends; ``approval`` is the decision recorded for it
    (``tool.approval_decided``), if it waited for one.

    A person's deny is ``denied`` and an unanswered request ``timeout`` (both refused at
    the step ``approval``); a run that hit the tool's timeout is ``timeout`` too (without a
    refused step); an interrupted run (cancelled turn, crash) is ``failed``.
    """
    match event:
        case ToolCallCompleted():
            return "completed"
        case ToolCallFailed():
            return "timeout" if event.error_kind == ErrorKind.TIMEOUT else "failed"
        case ToolCallRefused() if event.step == "approval" and approval == "deny":
            return "denied"
        case ToolCallRefused() if event.step == "approval" and approval == "timeout":
            return "timeout"
    return "refused"


def ended_attributes(
    event: EndingEvent, approval: ApprovalOutcome | None = None
) -> dict[str, AttributeValue]:
    """The attributes the ending event gives a call's span (outcome, refused step, error
    type); the status is :func:`ended_status`'s."""
    attributes: dict[str, AttributeValue] = {TOOL_OUTCOME: call_outcome(event, approval)}
    if isinstance(event, ToolCallRefused):
        attributes[REFUSED_STEP] = event.step
    elif isinstance(event, ToolCallFailed):
        attributes[ERROR_TYPE] = str(event.error_kind)
    return attributes


def ended_status(event: EndingEvent, approval: ApprovalOutcome | None = None) -> Status | None:
    """ERROR for the outcomes ``failed`` and ``timeout``: a call that ran and failed (the
    description: the first 500 characters of its scrubbed message), and a request nobody
    answered in time. Any other refusal is no error (None: the status stays UNSET)."""
    if isinstance(event, ToolCallFailed):
        return Status(StatusCode.ERROR, (event.message or str(event.error_kind))[:500])
    if call_outcome(event, approval) == "timeout":
        return Status(StatusCode.ERROR, "the approval timed out")
    return None


class _OpenCall:
    """One call between ``begin`` and its ending event."""

    __slots__ = ("approval", "closed", "correlation_id", "nested", "span", "tool", "waiting")

    def __init__(self, tool: str, span: Span | None, correlation_id: str) -> None:
        self.tool = tool
        self.span = span
        self.correlation_id = correlation_id
        self.waiting = False
        self.approval: ApprovalOutcome | None = None
        #: Spans of work the call did, ended (at the time given) before the call's end was
        #: recorded: they get its position when it is (:func:`end_with_call`).
        self.nested: list[tuple[Span, int]] = []
        self.closed = False

    def keep(self, span: Span, end_time: int) -> bool:
        """Keeps ``span`` to end with the call; False once the call has ended."""
        with _nested_lock:
            if self.closed:
                return False
            self.nested.append((span, end_time))
            return True

    def close(self, position: int | None) -> None:
        """The call ended (at ``position``, when recorded): the spans kept end now."""
        with _nested_lock:
            self.closed = True
            nested, self.nested = self.nested, []
        for span, end_time in nested:
            if position is not None:
                span.set_attribute(POSITION, position)
            span.end(end_time=end_time)


_nested_lock = threading.Lock()
#: The call whose tool runs in this context (:meth:`CallTelemetry.running`).
_running: ContextVar[_OpenCall | None] = ContextVar("clawlog_running_tool_call", default=None)


class _Running:
    """A traced call while its tool runs (:meth:`CallTelemetry.running`): a class, not a
    generator, as it is entered for every call."""

    __slots__ = ("_call", "_span", "_tokens")

    def __init__(self, call: _OpenCall, span: Span) -> None:
        self._call = call
        self._span = span

    def __enter__(self) -> Span:
        self._tokens = (
            _running.set(self._call),
            otel_context.attach(trace.set_span_in_context(self._span)),
        )
        return self._span

    def __exit__(self, *exc_info: object) -> None:
        running, attached = self._tokens
        otel_context.detach(attached)
        _running.reset(running)


_NOT_TRACED: AbstractContextManager[None] = nullcontext()


def running_call_correlation() -> str:
    """The correlation id of the tool call running in this context ("" outside one)."""
    call = _running.get()
    return call.correlation_id if call is not None else ""


def end_with_call(span: Span) -> None:
    """Ends ``span``, the span of work the running tool call did: it keeps the end time of
    now and is ended when the call's end is recorded, with that event's log position (at
    once, unpositioned, outside a call or after its end)."""
    call = _running.get()
    if call is None or not call.keep(span, time.time_ns()):
        span.end()


class CallTelemetry:
    """The calls in flight of one pipeline, their spans and the tool metrics. Thread-safe:
    ``begin`` runs in an actor's thread, ``execute`` on the hub."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open: dict[tuple[str, str], _OpenCall] = {}

    def started(self, session_key: str, call_id: str, tool: str, correlation_id: str = "") -> None:
        """A call of the turn (the job) ``correlation_id`` entered the pipeline: its span
        starts under the current context."""
        tracing = tracing_enabled()
        if not tracing and not metrics_enabled():
            return
        span = None
        if tracing:
            attributes: dict[str, AttributeValue] = {
                GEN_AI_OPERATION: OPERATION_EXECUTE_TOOL,
                GEN_AI_TOOL: tool,
                GEN_AI_TOOL_CALL: call_id,
            }
            if correlation_id:
                attributes[CORRELATION] = correlation_id
            span = tracer().start_span(span_name(tool), attributes=attributes)
        key = (session_key, call_id)
        with self._lock:
            # The same call begun again (a session resuming a wait after a restart) ends
            # the earlier one: its wait is counted again from now on.
            stale = [self._open.pop(key)] if key in self._open else []
            self._open[key] = _OpenCall(tool, span, correlation_id)
            if len(self._open) > _MAX_OPEN:
                stale.append(self._open.pop(next(iter(self._open))))
        for call in stale:
            _abandon(call)

    def closing(self, session_key: str, call_id: str, tool: str, correlation_id: str = "") -> None:
        """The owner closes the call as interrupted. A call this pipeline never began (one
        in flight when the session's previous run stopped, which a resumed turn closes)
        begins now, under the current context, so the event closing it ends a span, as
        the export of the log has it."""
        if (session_key, call_id) not in self._open:
            self.started(session_key, call_id, tool, correlation_id)

    def span(self, session_key: str, call_id: str) -> Span | None:
        """The call's span (None when not traced)."""
        call = self._get(session_key, call_id)
        return call.span if call is not None else None

    def running(self, session_key: str, call_id: str) -> AbstractContextManager[Span | None]:
        """While the call's tool runs: its span is current (what the tool traces nests
        under it) and the call is known to :func:`end_with_call`. Gives the span (None
        when not traced: then it costs a look-up)."""
        call = self._get(session_key, call_id)
        if call is None or call.span is None:
            return _NOT_TRACED
        return _Running(call, call.span)

    def waiting(self, session_key: str, call_id: str) -> None:
        """The call waits for a person from now on."""
        call = self._get(session_key, call_id)
        if call is None or call.waiting:
            return
        call.waiting = True
        if metrics_enabled():
            meters = instruments()
            meters.add(meters.approvals_waiting, 1, {METRIC_TOOL: call.tool})
        if call.span is not None:
            call.span.add_event(APPROVAL_REQUESTED)

    def decided(
        self, session_key: str, call_id: str, decision: ApprovalOutcome, wait_ms: float
    ) -> None:
        """The person answered (or the request timed out) after ``wait_ms``."""
        call = self._get(session_key, call_id)
        if call is None:
            return
        call.approval = decision
        _stop_waiting(call)
        if call.span is not None:
            call.span.add_event(APPROVAL_DECIDED, {APPROVAL_DECISION: decision})
            call.span.set_attribute(APPROVAL_WAIT, round(wait_ms, 3))

    def ended(self, event: Event, position: int | None) -> None:
        """``event`` was recorded at ``position``: end the call's span if it ends the call."""
        if not self._open or not isinstance(
            event, ToolCallRefused | ToolCallCompleted | ToolCallFailed
        ):
            return
        with self._lock:
            call = self._open.pop((event.session_key, event.call_id), None)
        if call is None:  # replayed from the log, or begun while telemetry was off
            return
        _stop_waiting(call)
        attributes = ended_attributes(event, call.approval)
        if metrics_enabled():
            meters = instruments()
            meters.add(meters.tool_calls, 1, _metric_attributes(call.tool, attributes))
        span = call.span
        if span is None:
            return
        call.close(position)
        if position is not None:
            attributes[POSITION] = position
        span.set_attributes(attributes)
        status = ended_status(event, call.approval)
        if status is not None:
            span.set_status(status)
        span.end()

    def discard(self, session_key: str, call_id: str, error: BaseException) -> None:
        """The caller gave up on the call before recording its end (cancelled, or the
        store refused an append): its span ends, its wait stops counting, and it is not
        counted as a tool call, since the log has no ending event for it."""
        if not self._open:
            return
        with self._lock:
            call = self._open.pop((session_key, call_id), None)
        if call is None:
            return
        _stop_waiting(call)
        if call.span is None:
            return
        call.close(None)
        if isinstance(error, asyncio.CancelledError):
            call.span.add_event("cancelled before the call's end was recorded")
        else:
            description = f"the call's end was not recorded: {type(error).__name__}"
            call.span.set_status(Status(StatusCode.ERROR, description))
        call.span.end()

    def _get(self, session_key: str, call_id: str) -> _OpenCall | None:
        if not self._open:
            return None
        with self._lock:
            return self._open.get((session_key, call_id))


def _metric_attributes(tool: str, ended: Mapping[str, AttributeValue]) -> dict[str, str]:
    return {
        METRIC_TOOL: tool,
        METRIC_OUTCOME: str(ended[TOOL_OUTCOME]),
        METRIC_REFUSED_STEP: str(ended.get(REFUSED_STEP, "")),
    }


def _stop_waiting(call: _OpenCall) -> None:
    if call.waiting:
        call.waiting = False
        # Counted down on the provider of now: a provider replaced meanwhile never saw the
        # +1, but the API offers no way to reach the old one.
        if metrics_enabled():
            meters = instruments()
            meters.add(meters.approvals_waiting, -1, {METRIC_TOOL: call.tool})


def _abandon(call: _OpenCall) -> None:
    """A call that will never see its ending event here: stop counting it, end its span."""
    _stop_waiting(call)
    call.close(None)
    if call.span is not None:
        call.span.add_event("abandoned: begun again or too many calls in flight")
        call.span.end()


def record_exception(span: Span | None, exc: BaseException, scrub: Callable[[str], str]) -> None:
    """The exception a tool raised, on its call's span (the ending event sets the status).

    Its message and stack trace are scrubbed like everything clawlog records: a tool's
    error text may quote a key it was given."""
    if span is None or not span.is_recording():
        return
    trace_text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    span.record_exception(
        exc,
        attributes={
            EXCEPTION_MESSAGE: scrub(str(exc))[:2000],
            EXCEPTION_STACKTRACE: scrub(trace_text)[-8000:],
        },
    )
