"""A turn's telemetry: its ``invoke_agent`` span, its ``chat`` spans and its metrics.

A Session keeps one :class:`TurnTrace` for the turn in flight, from the turn's start to
the recording of its end. Spans are built only while an OpenTelemetry SDK provider is set
(:func:`~clawlog.events.telemetry.tracing_enabled`); without one a TurnTrace is a start
time, and the metrics are skipped unless a meter provider is set. The span's parent is
the context the turn's message brought (``SendMessage.trace_context``: a delegation, a
subagent run, a handoff, the application's own span), never whatever happens to be
current when a queued message starts its turn. A turn started after its cause's span
ended (an announcement of async results, a turn resumed in the process that interrupted
it) continues it through :mod:`.trace_causes`: the interrupted span of a resumed turn is
its parent, the runs whose results a turn announces are its span links.

While the Session runs the turn's steps it makes the turn span current (:meth:`current`):
the tool pipeline starts its ``execute_tool`` spans from the current context, in the
actor's thread and on the hub (a coroutine submitted to the hub runs in a copy of the
submitter's context), so tool calls are the turn's children.

A ``chat`` span carries the reply's usage, response model and cost
(:func:`~clawlog.events.telemetry.reply_attributes`, as the export has them); a streamed
request's also the time to its first text delta (:meth:`TurnTrace.streamed`,
:mod:`.first_chunk`); a summarizer's call is a ``chat`` span of its own under the turn
(:mod:`.summary_trace`, from :meth:`TurnTrace.summary_parent`).
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable, Mapping
from contextlib import nullcontext
from functools import lru_cache
from types import MappingProxyType
from typing import Any, NamedTuple

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import (
    Link,
    NonRecordingSpan,
    Span,
    SpanContext,
    SpanKind,
    Status,
    StatusCode,
)
from opentelemetry.util.types import AttributeValue

from clawlog.events.domain.session import Usage
from clawlog.events.telemetry import (
    CHANNEL,
    CORRELATION,
    ERROR_TYPE,
    EXCEPTION_MESSAGE,
    EXCEPTION_STACKTRACE,
    GEN_AI_AGENT,
    GEN_AI_CONVERSATION,
    GEN_AI_FINISH,
    GEN_AI_OPERATION,
    GEN_AI_PROVIDER,
    GEN_AI_REQUEST_MODEL,
    GEN_AI_TOKEN_TYPE,
    ITERATION,
    METRIC_AGENT,
    METRIC_OUTCOME,
    OPERATION_CHAT,
    OPERATION_INVOKE_AGENT,
    OUTCOME_INTERRUPTED,
    POSITION,
    SESSION_KEY,
    STREAM,
    TOKEN_TYPE_INPUT,
    TOKEN_TYPE_OUTPUT,
    TURN_OUTCOME,
    TURN_RESUMED,
    instruments,
    metrics_enabled,
    reply_attributes,
    tracer,
    tracing_enabled,
)

from ..providers.base import Model, StreamingModel
from .first_chunk import FirstChunkTimer
from .trace_causes import causes_of, continue_later

__all__ = [
    "STOPPED_MID_TURN",
    "Answered",
    "TurnTrace",
    "parent_context",
    "span_carrier",
    "span_current",
]

#: The status description of a turn span that ended ``interrupted`` because its session
#: stopped (the export of the log gives the same span the same words).
STOPPED_MID_TURN = "the session stopped during the turn; it resumes at its next start"


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


def span_current(span: Span | None) -> Any:
    """A context manager making ``span`` current (nothing for None); it does not end it."""
    if span is None:
        return nullcontext()
    return _Current(trace.set_span_in_context(span))


class Answered(NamedTuple):
    """A model request's span taken off its turn when the reply came, and when that was."""

    span: Span | None
    at_ns: int


class TurnTrace:
    """The span (if tracing) and timings of one turn, and of its model request in flight."""

    __slots__ = (
        "_answered",
        "_context",
        "_model",
        "agent",
        "model_started",
        "span",
        "started",
        "turn_id",
    )

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
        #: The spans of replies that came and are not recorded yet (held with their step).
        self._answered: list[Answered] = []
        #: The context with the turn span current (built once: every message needs it).
        self._context: otel_context.Context | None = None
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
            attributes[TURN_RESUMED] = True
        parent, links = _parent_and_links(carrier, causes_of(turn_id), resumed)
        self.span = tracer().start_span(
            f"{OPERATION_INVOKE_AGENT} {agent}",
            context=parent,
            attributes=attributes,
            links=links,
        )
        self._context = trace.set_span_in_context(self.span)

    def current(self) -> Any:
        """A context manager making the turn span current (nothing without a span)."""
        if self._context is None:
            return nullcontext()
        return _Current(self._context)

    def model_current(self) -> Any:
        """A context manager making the model request's span current (for its I/O)."""
        if self._model is None:
            return nullcontext()
        return _Current(trace.set_span_in_context(self._model))

    # -- the model request --------------------------------------------------------------
    def model_requested(self, model: str, provider: str, iteration: int) -> None:
        self.model_started = time.monotonic()
        if self.span is None:
            return
        self._end_model()  # one request at a time: an older one never answered
        self._model = tracer().start_span(
            f"{OPERATION_CHAT} {model}",
            context=self._context,
            kind=SpanKind.CLIENT,
            attributes={
                GEN_AI_OPERATION: OPERATION_CHAT,
                GEN_AI_PROVIDER: provider,
                GEN_AI_REQUEST_MODEL: model,
                ITERATION: iteration,
                CORRELATION: self.turn_id,
            },
        )

    def model_answered(self) -> Answered:
        """The reply of the request in flight came: its span (None if not tracing) is
        taken off the turn, with the time it came, for :meth:`model_replied` once the
        reply is recorded. That may be after the next request is out (a held step:
        actors.agents.staged_append), whose span must not get this reply's attributes."""
        span, self._model = self._model, None
        answered = Answered(span, time.time_ns() if span is not None else 0)
        if span is not None:
            self._answered.append(answered)
        return answered

    def model_replied(
        self,
        answered: Answered,
        *,
        model: str,
        provider: str,
        stop_reason: str,
        usage: Usage,
        duration_ms: float,
        position: int,
        response_model: str = "",
        cost_usd: float | None = None,
    ) -> None:
        """The reply was recorded at ``position``: end its span (``answered``, ending when
        the reply came) with the usage, the model the provider named, ``response_model``,
        and the estimated cost, as the export has them
        (:func:`~clawlog.events.telemetry.reply_attributes`); record duration and tokens.

        ``gen_ai.client.token.usage`` keeps the semconv's two token types (input, output):
        it defines none for cached tokens, which the span carries as parts of the input."""
        span = answered.span
        if span is not None and answered in self._answered:
            self._answered.remove(answered)
            attributes = reply_attributes(usage, response_model, cost_usd)
            attributes[POSITION] = position
            if stop_reason:
                attributes[GEN_AI_FINISH] = (stop_reason,)
            span.set_attributes(attributes)  # one lock, one pass: not one call per attribute
            span.end(end_time=answered.at_ns)
        if metrics_enabled():
            meters = instruments()
            operation, tokens_in, tokens_out = _chat_metric_attributes(model, provider)
            meters.record(meters.operation_duration, duration_ms / 1000, operation)
            meters.record(meters.token_usage, usage.input_tokens, tokens_in)
            meters.record(meters.token_usage, usage.output_tokens, tokens_out)

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
                    EXCEPTION_MESSAGE: message,
                    EXCEPTION_STACKTRACE: scrub(stack)[-8000:],
                },
            )
            span.set_status(Status(StatusCode.ERROR, f"{kind}: {message}"))
            span.set_attributes({ERROR_TYPE: kind, POSITION: position})
            span.end()
        if metrics_enabled():
            attributes = {**_chat_metric_attributes(model, provider)[0], ERROR_TYPE: kind}
            meters = instruments()
            seconds = time.monotonic() - self.model_started
            meters.record(meters.operation_duration, seconds, attributes)

    def streamed(self, model: Model) -> Model:
        """``model`` for a streamed request: one that marks the time to its first text
        delta on the request's span (``gen_ai.response.time_to_first_chunk``); ``model``
        itself when nothing is traced or it cannot stream."""
        span = self._model
        if span is None or not isinstance(model, StreamingModel):
            return model
        return FirstChunkTimer(model, span, self.model_started)

    def summary_parent(self) -> otel_context.Context | None:
        """The context a summarizer's span starts in: the turn's (None without a span)."""
        return self._context

    def _end_model(self) -> None:
        span, self._model = self._model, None
        if span is not None:  # its answer will never be recorded (cancelled, turn ended)
            span.end()

    def _end_answered(self) -> None:
        """End the spans of replies that will never be recorded now (the turn ended, or
        the session stopped, without their append): as they were when they came."""
        answered, self._answered = self._answered, []
        for span, at_ns in answered:
            if span is not None:
                span.end(end_time=at_ns)

    # -- the end of the turn ------------------------------------------------------------
    def ended(self, outcome: str, position: int, reason: str = "") -> None:
        """The turn's end was recorded at ``position`` (completed | failed | cancelled)."""
        self._end_model()
        self._end_answered()
        span, self.span, self._context = self.span, None, None
        if span is not None:
            span.set_attributes({TURN_OUTCOME: outcome, POSITION: position})
            if outcome == "failed":
                span.set_status(Status(StatusCode.ERROR, reason))
            span.end()
        if metrics_enabled():
            attributes = {METRIC_AGENT: self.agent, METRIC_OUTCOME: outcome}
            meters = instruments()
            meters.add(meters.turns, 1, attributes)
            meters.record(meters.turn_duration, time.monotonic() - self.started, attributes)

    @staticmethod
    def ended_untraced(agent: str, outcome: str) -> None:
        """A turn ended that has no TurnTrace here (its start was never seen by this
        process, e.g. a turn a store failure ended): counted, with no duration to record."""
        if metrics_enabled():
            meters = instruments()
            meters.add(meters.turns, 1, {METRIC_AGENT: agent, METRIC_OUTCOME: outcome})

    def abandoned(self, reason: str = STOPPED_MID_TURN) -> None:
        """The session stopped during the turn: it is not ended in the log (it resumes when
        the session starts again, under a new span), so no metric; the span ends here as
        ``interrupted``, remembered as the cause of the resumed turn's span (its parent when
        the turn resumes in this process)."""
        self._end_model()
        self._end_answered()
        span, self.span, self._context = self.span, None, None
        if span is not None:
            span.set_attribute(TURN_OUTCOME, OUTCOME_INTERRUPTED)
            span.set_status(Status(StatusCode.ERROR, reason))
            span.end()
            continue_later(self.turn_id, span)


def _parent_and_links(
    carrier: dict[str, str] | None, causes: list[SpanContext], resumed: bool
) -> tuple[otel_context.Context, list[Link] | None]:
    """The turn span's parent and links. The parent is the message's carrier; for a resumed
    turn, the span interrupted in this process (the same turn's work, so the same trace);
    none otherwise (a new trace). Every other cause (the async runs whose results the turn
    announces) is a span link: another trace's work that led to this turn."""
    if resumed and causes and not carrier:
        interrupted, *causes = causes
        parent = trace.set_span_in_context(NonRecordingSpan(interrupted), otel_context.Context())
    else:
        parent = parent_context(carrier)
    return parent, [Link(c) for c in causes] or None


class _Current:
    """Makes ``context`` current for a ``with`` block: a class, not a generator, since the
    session enters it for every message of a traced turn."""

    __slots__ = ("_context", "_token")

    def __init__(self, context: otel_context.Context) -> None:
        self._context = context

    def __enter__(self) -> None:
        self._token = otel_context.attach(self._context)

    def __exit__(self, *exc_info: object) -> None:
        otel_context.detach(self._token)


@lru_cache(maxsize=256)
def _chat_metric_attributes(
    model: str, provider: str
) -> tuple[
    Mapping[str, AttributeValue], Mapping[str, AttributeValue], Mapping[str, AttributeValue]
]:
    """The attributes of a model request's ``gen_ai.client.operation.duration`` and of its
    two ``gen_ai.client.token.usage`` measurements (input, output): the GenAI conventions'
    required operation and provider, the model, the token type. Built once per model (read
    only: the SDK keys its points by them, and they are shared)."""
    operation: dict[str, AttributeValue] = {
        GEN_AI_OPERATION: OPERATION_CHAT,
        GEN_AI_PROVIDER: provider,
        GEN_AI_REQUEST_MODEL: model,
    }
    return (
        MappingProxyType(operation),
        MappingProxyType({**operation, GEN_AI_TOKEN_TYPE: TOKEN_TYPE_INPUT}),
        MappingProxyType({**operation, GEN_AI_TOKEN_TYPE: TOKEN_TYPE_OUTPUT}),
    )
