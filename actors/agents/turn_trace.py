"""A turn's telemetry: its ``invoke_agent`` span, its ``chat`` spans and its metrics.

A Session keeps one :class:`TurnTrace` for the turn in flight, from the turn's start to
the recording of its end. Spans are built only while an OpenTelemetry SDK provider is set
(:func:`~clawlog.events.telemetry.tracing_enabled`); without one a TurnTrace is a start
time, and the metrics are skipped unless a meter provider is set. The span's parent is
the context the turn's message brought (``SendMessage.trace_context``: a delegation, a
subagent run, a handoff, the application's own span), never whatever happens to be
current when a queued message starts its turn.

While the Session runs the turn's steps it makes the turn span current (:meth:`current`):
the tool pipeline starts its ``execute_tool`` spans from the current context, in the
actor's thread and on the hub (a coroutine submitted to the hub runs in a copy of the
submitter's context), so tool calls are the turn's children.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from clawlog.events.domain.session import Usage
from clawlog.events.telemetry import (
    CHANNEL,
    CORRELATION,
    GEN_AI_AGENT,
    GEN_AI_CONVERSATION,
    GEN_AI_FINISH,
    GEN_AI_INPUT_TOKENS,
    GEN_AI_OPERATION,
    GEN_AI_OUTPUT_TOKENS,
    GEN_AI_PROVIDER,
    GEN_AI_REQUEST_MODEL,
    GEN_AI_TOKEN_TYPE,
    ITERATION,
    METRIC_AGENT,
    METRIC_OUTCOME,
    OPERATION_CHAT,
    OPERATION_INVOKE_AGENT,
    POSITION,
    SESSION_KEY,
    STREAM,
    TOKEN_TYPE_INPUT,
    TOKEN_TYPE_OUTPUT,
    TURN_OUTCOME,
    instruments,
    metrics_enabled,
    tracer,
    tracing_enabled,
)

__all__ = ["TurnTrace", "parent_context", "span_carrier"]

#: The semantic conventions' key for the class of error a failed operation ended with.
_ERROR_TYPE = "error.type"
#: Set on the span of a turn resumed from the log after a restart (nobody sent it now).
_RESUMED = "clawlog.turn.resumed"


def parent_context(carrier: dict[str, str] | None) -> otel_context.Context:
    """The context a message's ``trace_context`` carries; an empty one (a new trace) for None."""
    if not carrier:
        return otel_context.Context()
    from opentelemetry import propagate  # loads entry points: only when a carrier came

    return propagate.extract(carrier, context=otel_context.Context())


def span_carrier(span: Span | None) -> dict[str, str] | None:
    """``span``'s context as a message's ``trace_context`` (None without a span)."""
    if span is None or not span.get_span_context().is_valid:
        return None
    from opentelemetry import propagate

    carrier: dict[str, str] = {}
    propagate.inject(carrier, context=trace.set_span_in_context(span))
    return carrier


class TurnTrace:
    """The span (if tracing) and timings of one turn, and of its model request in flight."""

    __slots__ = ("_model", "agent", "model_started", "span", "started", "turn_id")

    def __init__(
        self,
        *,
        agent: str,
        session_key: str,
        stream: str,
        turn_id: str,
        channel: str = "",
        carrier: dict[str, str] | None = None,
        resumed: bool = False,
    ) -> None:
        self.agent = agent
        self.turn_id = turn_id
        self.started = time.monotonic()
        self.model_started = 0.0
        self.span: Span | None = None
        self._model: Span | None = None
        if not tracing_enabled():
            return
        attributes: dict[str, Any] = {
            GEN_AI_OPERATION: OPERATION_INVOKE_AGENT,
            GEN_AI_AGENT: agent,
            GEN_AI_CONVERSATION: stream,
            SESSION_KEY: session_key,
            CORRELATION: turn_id,
            STREAM: stream,
        }
        if channel:
            attributes[CHANNEL] = channel
        if resumed:
            attributes[_RESUMED] = True
        self.span = tracer().start_span(
            f"{OPERATION_INVOKE_AGENT} {agent}",
            context=parent_context(carrier),
            attributes=attributes,
        )

    def current(self) -> Any:
        """A context manager making the turn span current (nothing without a span)."""
        if self.span is None:
            return nullcontext()
        return _current(self.span)

    def model_current(self) -> Any:
        """A context manager making the model request's span current (for its I/O)."""
        if self._model is None:
            return nullcontext()
        return _current(self._model)

    # -- the model request --------------------------------------------------------------
    def model_requested(self, model: str, provider: str, iteration: int) -> None:
        self.model_started = time.monotonic()
        if self.span is None:
            return
        self._end_model()  # one request at a time: an older one never answered
        self._model = tracer().start_span(
            f"{OPERATION_CHAT} {model}",
            context=trace.set_span_in_context(self.span),
            kind=SpanKind.CLIENT,
            attributes={
                GEN_AI_OPERATION: OPERATION_CHAT,
                GEN_AI_PROVIDER: provider,
                GEN_AI_REQUEST_MODEL: model,
                ITERATION: iteration,
                CORRELATION: self.turn_id,
            },
        )

    def model_replied(
        self,
        *,
        model: str,
        provider: str,
        stop_reason: str,
        usage: Usage,
        duration_ms: float,
        position: int,
    ) -> None:
        """The reply was recorded at ``position``: end the span, record duration and tokens."""
        span, self._model = self._model, None
        if span is not None:
            if stop_reason:
                span.set_attribute(GEN_AI_FINISH, [stop_reason])
            span.set_attribute(GEN_AI_INPUT_TOKENS, usage.input_tokens)
            span.set_attribute(GEN_AI_OUTPUT_TOKENS, usage.output_tokens)
            span.set_attribute(POSITION, position)
            span.end()
        if metrics_enabled():
            meters = instruments()
            meters.operation_duration.record(
                duration_ms / 1000, _operation_attributes(model, provider)
            )
            for kind, count in (
                (TOKEN_TYPE_INPUT, usage.input_tokens),
                (TOKEN_TYPE_OUTPUT, usage.output_tokens),
            ):
                meters.token_usage.record(
                    count, {GEN_AI_TOKEN_TYPE: kind, GEN_AI_REQUEST_MODEL: model}
                )

    def model_failed(
        self,
        *,
        model: str,
        provider: str,
        error: BaseException,
        kind: str,
        position: int,
        scrub: Callable[[str], str],
    ) -> None:
        """The failure was recorded at ``position``: an ERROR span with the exception, its
        message and stack trace passed through ``scrub`` like everything recorded."""
        span, self._model = self._model, None
        if span is not None:
            message = scrub(str(error))[:2000]
            stack = "".join(traceback.format_exception(type(error), error, error.__traceback__))
            span.record_exception(
                error,
                attributes={
                    "exception.message": message,
                    "exception.stacktrace": scrub(stack)[-8000:],
                },
            )
            span.set_status(Status(StatusCode.ERROR, f"{kind}: {message}"))
            span.set_attribute(_ERROR_TYPE, kind)
            span.set_attribute(POSITION, position)
            span.end()
        if metrics_enabled():
            attributes = _operation_attributes(model, provider)
            attributes[_ERROR_TYPE] = kind
            seconds = time.monotonic() - self.model_started
            instruments().operation_duration.record(seconds, attributes)

    def _end_model(self) -> None:
        span, self._model = self._model, None
        if span is not None:  # its answer will never be recorded (cancelled, turn ended)
            span.end()

    # -- the end of the turn ------------------------------------------------------------
    def ended(self, outcome: str, position: int, reason: str = "") -> None:
        """The turn's end was recorded at ``position`` (completed | failed | cancelled)."""
        self._end_model()
        span, self.span = self.span, None
        if span is not None:
            span.set_attribute(TURN_OUTCOME, outcome)
            span.set_attribute(POSITION, position)
            if outcome == "failed":
                span.set_status(Status(StatusCode.ERROR, reason))
            span.end()
        if metrics_enabled():
            attributes = {METRIC_AGENT: self.agent, METRIC_OUTCOME: outcome}
            meters = instruments()
            meters.turns.add(1, attributes)
            meters.turn_duration.record(time.monotonic() - self.started, attributes)

    @staticmethod
    def ended_untraced(agent: str, outcome: str) -> None:
        """A turn ended that has no TurnTrace here (its start was never seen by this
        process, e.g. a turn a store failure ended): counted, with no duration to record."""
        if metrics_enabled():
            instruments().turns.add(1, {METRIC_AGENT: agent, METRIC_OUTCOME: outcome})

    def abandoned(self, reason: str) -> None:
        """The session stopped during the turn: it is not ended in the log (it resumes when
        the session starts again, under a new span), so no metric; the span ends here."""
        self._end_model()
        span, self.span = self.span, None
        if span is not None:
            span.set_attribute(TURN_OUTCOME, "interrupted")
            span.set_status(Status(StatusCode.ERROR, reason))
            span.end()


@contextmanager
def _current(span: Span) -> Iterator[None]:
    token = otel_context.attach(trace.set_span_in_context(span))
    try:
        yield
    finally:
        otel_context.detach(token)


def _operation_attributes(model: str, provider: str) -> dict[str, Any]:
    return {
        GEN_AI_OPERATION: OPERATION_CHAT,
        GEN_AI_REQUEST_MODEL: model,
        GEN_AI_PROVIDER: provider,
    }
