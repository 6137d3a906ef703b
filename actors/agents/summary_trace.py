"""The span of a summarizer's model call: ``chat {model}``, under the turn it shrinks.

A compaction that writes a summary (:mod:`.compaction`) calls a model outside the
turn's own requests. Its span is a child of the turn's span (a compaction in a turn),
or of the span current where ``System.compact`` was called (an on-demand compaction:
the ``CompactSession`` message brings that context). It starts when the call goes to
the hub (the summarizer's own I/O spans nest in it) and ends when its outcome is
recorded: it is then named and filled from the recorded event
(:func:`~clawlog.events.telemetry.summary_span`), exactly as ``clawlog export-otel``
rebuilds it, so the live span and the exported one agree. A failed summary is an
ERROR span with the failure's kind (``error.type``) and an ``exception`` event.
"""

from __future__ import annotations

from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from clawlog.events import RecordedEvent
from clawlog.events.domain.session import CompactionFailed, SessionCompacted
from clawlog.events.telemetry import (
    EXCEPTION_MESSAGE,
    EXCEPTION_TYPE,
    GEN_AI_OPERATION,
    OPERATION_CHAT,
    POSITION,
    summary_span,
    tracer,
    tracing_enabled,
)

from .turn_trace import parent_context, span_current

__all__ = ["SummaryTrace"]


class SummaryTrace:
    """The span (if tracing) of one summarizer call, from its start to its recorded end."""

    __slots__ = ("_span",)

    def __init__(self, parent: otel_context.Context | None) -> None:
        """Starts the span under ``parent`` (no span without one, or without tracing)."""
        self._span: Span | None = None
        if parent is None or not tracing_enabled():
            return
        if not trace.get_current_span(parent).get_span_context().is_valid:
            return  # nothing traced called for it: no root span of its own
        self._span = tracer().start_span(
            OPERATION_CHAT,  # named for its model when the outcome is recorded
            context=parent,
            kind=SpanKind.CLIENT,
            attributes={GEN_AI_OPERATION: OPERATION_CHAT},
        )

    @classmethod
    def called(cls, carrier: dict[str, str] | None) -> SummaryTrace:
        """The span of an on-demand summary, under the caller's span (``carrier``: the
        ``CompactSession`` message's ``trace_context``); no span without one."""
        return cls(parent_context(carrier) if carrier else None)

    def current(self) -> Any:
        """A context manager making the span current (for the summarizer's own I/O)."""
        return span_current(self._span)

    def recorded(self, recorded: list[RecordedEvent]) -> None:
        """The outcome was recorded (``recorded``: the events ``Compaction.outcome`` gave):
        name, fill and end the span from the event that ends the call."""
        span, self._span = self._span, None
        if span is None:
            return
        ending = next(
            (
                item
                for item in reversed(recorded)
                if isinstance(item.event, (SessionCompacted, CompactionFailed))
            ),
            None,
        )
        if ending is None:
            span.end()
            return
        event = ending.event
        assert isinstance(event, (SessionCompacted, CompactionFailed))
        name, attributes = summary_span(event)
        attributes[POSITION] = ending.position
        span.update_name(name)
        span.set_attributes(attributes)
        if isinstance(event, CompactionFailed):
            span.add_event(
                "exception", {EXCEPTION_TYPE: event.kind, EXCEPTION_MESSAGE: event.message}
            )
            span.set_status(Status(StatusCode.ERROR, f"{event.kind}: {event.message}"))
        span.end()

    def abandoned(self) -> None:
        """No outcome will be recorded (the turn ended, the session stopped): end it as is."""
        span, self._span = self._span, None
        if span is not None:
            span.end()
