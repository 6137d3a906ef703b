"""OpenTelemetry for clawlog: one tracer, one meter, the attribute names and the instruments.

clawlog speaks the OpenTelemetry *API* only, as a library should: the application brings the SDK,
its exporters and its providers (``trace.set_tracer_provider(...)``,
``metrics.set_meter_provider(...)``), and nothing here configures, imports or requires the SDK.
With no SDK configured, every call ends in the API's no-op objects and the hot paths check
``tracing_enabled()`` / ``metrics_enabled()`` first, so they do not even build attributes.

The instrumentation scope is ``"clawlog"`` at ``clawlog.__version__``. ``tracer()``, ``meter()`` and
``instruments()`` are cached per provider: while no provider is set they come from the API's proxy
provider (whose proxies follow a provider set later by the application), and once one is set they
are rebuilt for it, so a provider installed after clawlog was imported is picked up, and so is a
provider replaced between tests.

Attribute keys are constants here and nowhere else (span attributes follow the GenAI semantic
conventions where one exists, ``clawlog.*`` otherwise); metric attributes are the short keys
``METRIC_*`` (``agent``, ``outcome``, ``tool``, ...) plus the GenAI keys the GenAI metrics specify.

Context crosses actors inside messages: the teller puts ``context_carrier()`` into the message
(a W3C ``traceparent`` carrier, or None when no span is active), the receiver handles the message
``with attached(message.trace_context):``.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field

from opentelemetry import context as otel_context
from opentelemetry import metrics, trace
from opentelemetry.environment_variables import (
    OTEL_PYTHON_METER_PROVIDER,
    OTEL_PYTHON_TRACER_PROVIDER,
)
from opentelemetry.metrics import CallbackOptions, Observation
from opentelemetry.metrics import _internal as metrics_internal
from opentelemetry.util.types import AttributeValue

from .domain.session import CompactionFailed, SessionCompacted, Usage
from .metric_queue import MeasurementQueue

__all__ = [
    "APPROVAL_DECISION",
    "APPROVAL_WAIT",
    "CHANNEL",
    "COMPACTION_TRIGGER",
    "CORRELATION",
    "COST_USD",
    "DELEGATION",
    "DELEGATION_MODE",
    "DELEGATION_OUTCOME",
    "DELEGATION_SOURCE",
    "DELEGATION_TARGET",
    "ERROR_TYPE",
    "EXCEPTION_MESSAGE",
    "EXCEPTION_STACKTRACE",
    "EXCEPTION_TYPE",
    "GEN_AI_AGENT",
    "GEN_AI_CACHE_CREATION_TOKENS",
    "GEN_AI_CACHE_READ_TOKENS",
    "GEN_AI_CONVERSATION",
    "GEN_AI_FINISH",
    "GEN_AI_INPUT_TOKENS",
    "GEN_AI_OPERATION",
    "GEN_AI_OUTPUT_TOKENS",
    "GEN_AI_PROVIDER",
    "GEN_AI_REQUEST_MODEL",
    "GEN_AI_RESPONSE_MODEL",
    "GEN_AI_TIME_TO_FIRST_CHUNK",
    "GEN_AI_TOKEN_TYPE",
    "GEN_AI_TOOL",
    "GEN_AI_TOOL_CALL",
    "HANDOFF_FROM",
    "HANDOFF_TO",
    "ITERATION",
    "MCP_SERVER",
    "METRIC_AGENT",
    "METRIC_BACKEND",
    "METRIC_OUTCOME",
    "METRIC_PROJECTION",
    "METRIC_REFUSED_STEP",
    "METRIC_STATE",
    "METRIC_TOOL",
    "OPERATION_CHAT",
    "OPERATION_EXECUTE_TOOL",
    "OPERATION_INVOKE_AGENT",
    "OUTCOME_INTERRUPTED",
    "POSITION",
    "REASONING_TOKENS",
    "REFUSED_STEP",
    "SCOPE_NAME",
    "SESSION_KEY",
    "STREAM",
    "SUBAGENT_MODE",
    "SUBAGENT_OUTCOME",
    "SUBAGENT_TASK",
    "TOKEN_TYPE_INPUT",
    "TOKEN_TYPE_OUTPUT",
    "TOOL_OUTCOME",
    "TURN_OUTCOME",
    "TURN_RESUMED",
    "USAGE_ESTIMATED",
    "Instruments",
    "LagSource",
    "attached",
    "context_carrier",
    "instruments",
    "meter",
    "metrics_enabled",
    "register_projection_lag",
    "reply_attributes",
    "summary_span",
    "tracer",
    "tracing_enabled",
]

SCOPE_NAME = "clawlog"

# Span attributes: the GenAI semantic conventions.
GEN_AI_OPERATION = "gen_ai.operation.name"
GEN_AI_PROVIDER = "gen_ai.provider.name"
GEN_AI_AGENT = "gen_ai.agent.name"
GEN_AI_CONVERSATION = "gen_ai.conversation.id"
GEN_AI_REQUEST_MODEL = "gen_ai.request.model"
#: The model as the provider named it in its reply (``ModelReplied.model``), when it did.
GEN_AI_RESPONSE_MODEL = "gen_ai.response.model"
GEN_AI_FINISH = "gen_ai.response.finish_reasons"
#: The whole prompt, its cached part included (the semconv's and ``Usage.input_tokens``'s
#: reading: the two cache counts below are parts of it).
GEN_AI_INPUT_TOKENS = "gen_ai.usage.input_tokens"
GEN_AI_OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
#: The part of the prompt read from the provider's cache (``Usage.cached_input_tokens``).
GEN_AI_CACHE_READ_TOKENS = "gen_ai.usage.cache_read.input_tokens"
#: The part of the prompt written to the provider's cache (``Usage.cache_write_tokens``).
GEN_AI_CACHE_CREATION_TOKENS = "gen_ai.usage.cache_creation.input_tokens"
#: On a streamed request's ``chat`` span: seconds from the request to its first text delta.
GEN_AI_TIME_TO_FIRST_CHUNK = "gen_ai.response.time_to_first_chunk"
GEN_AI_TOOL = "gen_ai.tool.name"
GEN_AI_TOOL_CALL = "gen_ai.tool.call.id"
#: On ``gen_ai.client.token.usage``: TOKEN_TYPE_INPUT or TOKEN_TYPE_OUTPUT.
GEN_AI_TOKEN_TYPE = "gen_ai.token.type"
TOKEN_TYPE_INPUT = "input"
TOKEN_TYPE_OUTPUT = "output"

#: Values of GEN_AI_OPERATION (and the first word of the span names).
OPERATION_INVOKE_AGENT = "invoke_agent"
OPERATION_CHAT = "chat"
OPERATION_EXECUTE_TOOL = "execute_tool"

# Span attributes: clawlog's own, leading from a span to the log and back.
CORRELATION = "clawlog.correlation_id"
#: The log position of the event that ended or recorded the span's work.
POSITION = "clawlog.log.position"
STREAM = "clawlog.stream"
SESSION_KEY = "clawlog.session_key"
CHANNEL = "clawlog.channel"
#: On every turn span: completed | failed | cancelled, the three ways the log ends a turn,
#: or ``interrupted`` (OUTCOME_INTERRUPTED): the session stopped during the turn (the
#: System closed, the process is going down), so the log has no end for it yet. The turn
#: resumes when the session starts again, under a new span marked ``TURN_RESUMED`` with the
#: same correlation id, whose parent is the interrupted span when it resumes in the same
#: process. ``interrupted`` is no outcome of the turn, only of that span: no metric counts
#: it (``clawlog.turns`` counts the end the log records).
TURN_OUTCOME = "clawlog.turn.outcome"
#: The outcome of a span whose work the log has not ended when the actor running it
#: stopped (a turn, a subagent run, a delegation): the work goes on, or is recorded as
#: failed, when that actor starts again.
OUTCOME_INTERRUPTED = "interrupted"
#: True on the span of a turn resumed from the log (after a restart or a passivation).
TURN_RESUMED = "clawlog.turn.resumed"
#: completed | failed | refused | denied | timeout, on every tool call span.
TOOL_OUTCOME = "clawlog.tool.outcome"
REFUSED_STEP = "clawlog.tool.refused_step"
APPROVAL_WAIT = "clawlog.tool.approval_wait_ms"
#: On the ``approval decided`` span event: allow-once | allow-always | deny | timeout.
APPROVAL_DECISION = "clawlog.tool.approval_decision"
ITERATION = "clawlog.iteration"
DELEGATION = "clawlog.delegation.id"
DELEGATION_SOURCE = "clawlog.delegation.source"
DELEGATION_TARGET = "clawlog.delegation.target"
#: sync | async
DELEGATION_MODE = "clawlog.delegation.mode"
#: How a delegation ended: completed | failed | cancelled (its status in the log), or
#: ``interrupted`` (OUTCOME_INTERRUPTED): the link stopped during it.
DELEGATION_OUTCOME = "clawlog.delegation.outcome"
SUBAGENT_TASK = "clawlog.subagent.task_id"
#: sync | async
SUBAGENT_MODE = "clawlog.subagent.mode"
#: On a subagent run's span: completed | failed | cancelled (its ``subagent.finished``
#: status), or ``interrupted`` (OUTCOME_INTERRUPTED): the agent stopped during the run (the
#: log records it failed when the agent starts again).
SUBAGENT_OUTCOME = "clawlog.subagent.outcome"
#: On a ``handoff {to_agent}`` span: who handed the conversation to whom.
HANDOFF_FROM = "clawlog.handoff.from"
HANDOFF_TO = "clawlog.handoff.to"
MCP_SERVER = "clawlog.mcp.server"
#: The part of ``gen_ai.usage.output_tokens`` spent reasoning (``Usage.reasoning_tokens``).
REASONING_TOKENS = "clawlog.usage.reasoning_tokens"
#: True when the provider reported no usage and clawlog estimated the counts (absent else).
USAGE_ESTIMATED = "clawlog.usage.estimated"
#: Estimated cost of the model call in US dollars (absent when the model has no price).
COST_USD = "clawlog.cost_usd"
#: On a summarizer's ``chat`` span: threshold | manual (``SessionCompacted.trigger``).
COMPACTION_TRIGGER = "clawlog.compaction.trigger"

# Span attributes and span event attributes of the general semantic conventions.
#: The class of error a failed operation ended with (an ``ErrorKind``, a model failure kind).
ERROR_TYPE = "error.type"
EXCEPTION_TYPE = "exception.type"
EXCEPTION_MESSAGE = "exception.message"
EXCEPTION_STACKTRACE = "exception.stacktrace"

# Metric attributes (besides the GenAI keys above, which the GenAI metrics use).
METRIC_AGENT = "agent"
METRIC_OUTCOME = "outcome"
METRIC_TOOL = "tool"
METRIC_REFUSED_STEP = "refused_step"
METRIC_STATE = "state"
#: sqlite | postgres | memory
METRIC_BACKEND = "backend"
METRIC_PROJECTION = "projection"

#: Yields ``(projection name, events behind the head)`` when the lag gauge is observed.
LagSource = Callable[[], Iterable[tuple[str, int]]]

_NO_OP_TRACER_PROVIDERS = (trace.ProxyTracerProvider, trace.NoOpTracerProvider)
# What ``metrics.get_meter_provider()`` returns until the application sets a provider: the API
# gives it no public name (the tracing API does: ``trace.ProxyTracerProvider``).
_NO_OP_METER_PROVIDERS: tuple[type, ...] = tuple(
    kind
    for kind in (metrics.NoOpMeterProvider, getattr(metrics_internal, "_ProxyMeterProvider", None))
    if kind is not None
)


def _version() -> str:
    import clawlog

    return clawlog.__version__


# The API keeps the global providers in module globals and offers only getters that, while no
# provider is set, first look for a provider named in the environment (``os.environ`` costs
# ~0.5 us per call). ``tracing_enabled()`` runs on every hot path, so it reads the globals
# directly when they exist and no provider is named in the environment, and goes through the
# public getters otherwise. The verdict is cached per provider object.
_READ_GLOBALS = (
    all(hasattr(trace, name) for name in ("_TRACER_PROVIDER", "_PROXY_TRACER_PROVIDER"))
    and all(
        hasattr(metrics_internal, name) for name in ("_METER_PROVIDER", "_PROXY_METER_PROVIDER")
    )
    and OTEL_PYTHON_TRACER_PROVIDER not in os.environ
    and OTEL_PYTHON_METER_PROVIDER not in os.environ
)
_tracing_verdict: tuple[object, bool] = (None, False)
_metrics_verdict: tuple[object, bool] = (None, False)


def _tracer_provider() -> trace.TracerProvider:
    """``trace.get_tracer_provider()`` without its environment look-up when that is safe."""
    if not _READ_GLOBALS:
        return trace.get_tracer_provider()
    return trace._TRACER_PROVIDER or trace._PROXY_TRACER_PROVIDER


def _meter_provider() -> metrics.MeterProvider:
    """``metrics.get_meter_provider()`` without its environment look-up when that is safe."""
    if not _READ_GLOBALS:
        return metrics.get_meter_provider()
    return metrics_internal._METER_PROVIDER or metrics_internal._PROXY_METER_PROVIDER


def tracing_enabled() -> bool:
    """Whether a real tracer provider is set: False on the API's proxy/no-op default.

    Hot paths call this before building span attributes; it costs about one function call.
    """
    global _tracing_verdict
    if _READ_GLOBALS:
        provider: object = trace._TRACER_PROVIDER
        if provider is None:
            return False
    else:
        provider = trace.get_tracer_provider()
    verdict = _tracing_verdict
    if verdict[0] is provider:
        return verdict[1]
    enabled = not isinstance(provider, _NO_OP_TRACER_PROVIDERS)
    _tracing_verdict = (provider, enabled)
    return enabled


def metrics_enabled() -> bool:
    """Whether a real meter provider is set: False on the API's proxy/no-op default."""
    global _metrics_verdict
    if _READ_GLOBALS:
        provider: object = metrics_internal._METER_PROVIDER
        if provider is None:
            return False
    else:
        provider = metrics.get_meter_provider()
    verdict = _metrics_verdict
    if verdict[0] is provider:
        return verdict[1]
    enabled = not isinstance(provider, _NO_OP_METER_PROVIDERS)
    _metrics_verdict = (provider, enabled)
    return enabled


_tracer_cache: tuple[trace.TracerProvider, trace.Tracer] | None = None


def tracer() -> trace.Tracer:
    """clawlog's tracer from the current global tracer provider (cached per provider)."""
    global _tracer_cache
    provider = _tracer_provider()
    cached = _tracer_cache
    if cached is not None and cached[0] is provider:
        return cached[1]
    built = provider.get_tracer(SCOPE_NAME, _version())
    _tracer_cache = (provider, built)
    return built


_meter_cache: tuple[metrics.MeterProvider, metrics.Meter] | None = None


def meter() -> metrics.Meter:
    """clawlog's meter from the current global meter provider (cached per provider)."""
    global _meter_cache
    provider = _meter_provider()
    cached = _meter_cache
    if cached is not None and cached[0] is provider:
        return cached[1]
    built = provider.get_meter(SCOPE_NAME, _version())
    _meter_cache = (provider, built)
    return built


def context_carrier() -> dict[str, str] | None:
    """The current trace context as a W3C ``traceparent`` carrier, None when no span is active."""
    if not trace.get_current_span().get_span_context().is_valid:
        return None
    # Imported here: the propagators load entry points, which ``import clawlog`` should not pay.
    from opentelemetry import propagate

    carrier: dict[str, str] = {}
    propagate.inject(carrier)
    return carrier


@contextmanager
def attached(carrier: Mapping[str, str] | None) -> Iterator[None]:
    """Makes the context in ``carrier`` current for the block; no-op for None (or empty)."""
    if not carrier:
        yield
        return
    from opentelemetry import propagate

    token = otel_context.attach(propagate.extract(carrier))
    try:
        yield
    finally:
        otel_context.detach(token)


def reply_attributes(
    usage: Usage, response_model: str = "", cost_usd: float | None = None
) -> dict[str, AttributeValue]:
    """A model call's usage, model and cost as ``chat`` span attributes: the live span and
    the export both take them from here, so they cannot drift apart. The three counts
    are always there (0: none reported); the estimate mark, the response model and the
    cost only when there is one."""
    attributes: dict[str, AttributeValue] = {
        GEN_AI_INPUT_TOKENS: usage.input_tokens,
        GEN_AI_OUTPUT_TOKENS: usage.output_tokens,
        GEN_AI_CACHE_READ_TOKENS: usage.cached_input_tokens,
        GEN_AI_CACHE_CREATION_TOKENS: usage.cache_write_tokens,
        REASONING_TOKENS: usage.reasoning_tokens,
    }
    if usage.estimated:
        attributes[USAGE_ESTIMATED] = True
    if response_model:
        attributes[GEN_AI_RESPONSE_MODEL] = response_model
    if cost_usd is not None:
        attributes[COST_USD] = cost_usd
    return attributes


def summary_span(
    event: SessionCompacted | CompactionFailed,
) -> tuple[str, dict[str, AttributeValue]]:
    """The name and attributes of a summarizer call's ``chat {model}`` span, from the event
    that recorded its outcome (a ``session.compacted`` with a summary, or a
    ``session.compaction_failed``). The live span is named and filled from the recorded
    event, as the export is, so the two agree. A failure's span also gets ``error.type``
    (its status and exception event are the caller's: they need the span)."""
    attributes: dict[str, AttributeValue] = {
        GEN_AI_OPERATION: OPERATION_CHAT,
        GEN_AI_REQUEST_MODEL: event.model,
        COMPACTION_TRIGGER: event.trigger,
    }
    if event.turn_id:
        attributes[CORRELATION] = event.turn_id
        attributes[ITERATION] = event.iteration
    if isinstance(event, CompactionFailed):
        attributes[ERROR_TYPE] = event.kind
    else:
        attributes.update(reply_attributes(event.usage, event.model, event.cost_usd))
    return f"{OPERATION_CHAT} {event.model}", attributes


@dataclass(frozen=True, slots=True)
class Instruments:
    """Every clawlog metric instrument, built once per meter provider (see ``instruments()``).

    Hot paths (turns, model requests, tool calls, store appends, sessions) measure through
    :meth:`record` and :meth:`add`, which queue the measurement rather than hand it to the
    SDK on the spot (:mod:`.metric_queue`: a background worker and every collection hand
    the queue over, so a reader sees every measurement taken before it collects).
    """

    #: Turns ended, {agent, outcome}.
    turns: metrics.Counter
    #: Tool calls ended, {tool, outcome, refused_step}.
    tool_calls: metrics.Counter
    #: Sessions passivated, {agent}.
    sessions_passivated: metrics.Counter
    #: Sessions alive, {agent}.
    sessions_active: metrics.UpDownCounter
    #: Tool calls waiting for an approval, {tool}.
    approvals_waiting: metrics.UpDownCounter
    #: MCP servers per state, {state}.
    mcp_servers: metrics.UpDownCounter
    #: Turn duration in seconds, {agent, outcome}.
    turn_duration: metrics.Histogram
    #: Model request duration in seconds, {gen_ai.operation.name, gen_ai.request.model,
    #: gen_ai.provider.name}.
    operation_duration: metrics.Histogram
    #: Tokens per model request, {gen_ai.token.type, gen_ai.request.model}.
    token_usage: metrics.Histogram
    #: Store append (one committed batch) duration in seconds, {backend}.
    append_duration: metrics.Histogram
    #: Events per committed append batch, {backend}.
    append_batch_size: metrics.Histogram
    #: Events behind the head per projection, {projection}: fed by ``register_projection_lag``.
    projection_lag: metrics.ObservableGauge
    #: Measurements taken, not yet handed to the SDK (see the class's docstring).
    queued: MeasurementQueue = field(default_factory=MeasurementQueue, repr=False)

    def record(
        self, histogram: metrics.Histogram, value: float, attributes: Mapping[str, AttributeValue]
    ) -> None:
        """Queues ``histogram.record(value, attributes)`` (see the class's docstring)."""
        self.queued.put(histogram.record, value, attributes)

    def add(
        self,
        counter: metrics.Counter | metrics.UpDownCounter,
        value: float,
        attributes: Mapping[str, AttributeValue],
    ) -> None:
        """Queues ``counter.add(value, attributes)`` (see the class's docstring)."""
        self.queued.put(counter.add, value, attributes)


_instruments_cache: tuple[metrics.MeterProvider, Instruments] | None = None
_instruments_lock = threading.Lock()


def instruments() -> Instruments:
    """clawlog's instruments on the current global meter provider (cached per provider)."""
    global _instruments_cache
    provider = _meter_provider()
    cached = _instruments_cache
    if cached is not None and cached[0] is provider:
        return cached[1]
    with _instruments_lock:
        cached = _instruments_cache
        if cached is not None and cached[0] is provider:
            return cached[1]
        built = _build_instruments(meter())
        _instruments_cache = (provider, built)
        return built


def _build_instruments(m: metrics.Meter) -> Instruments:
    def hand_over(options: CallbackOptions) -> Iterable[Observation]:
        built.queued.hand_over()
        return ()

    built = Instruments(
        turns=m.create_counter("clawlog.turns", unit="{turn}", description="Turns ended"),
        tool_calls=m.create_counter(
            "clawlog.tool.calls", unit="{call}", description="Tool calls ended"
        ),
        sessions_passivated=m.create_counter(
            "clawlog.sessions.passivated", unit="{session}", description="Sessions passivated"
        ),
        sessions_active=m.create_up_down_counter(
            "clawlog.sessions.active", unit="{session}", description="Sessions alive"
        ),
        approvals_waiting=m.create_up_down_counter(
            "clawlog.tool.approvals.waiting",
            unit="{call}",
            description="Tool calls waiting for an approval",
        ),
        mcp_servers=m.create_up_down_counter(
            "clawlog.mcp.servers", unit="{server}", description="MCP servers per state"
        ),
        turn_duration=m.create_histogram(
            "clawlog.turn.duration", unit="s", description="Turn duration"
        ),
        operation_duration=m.create_histogram(
            "gen_ai.client.operation.duration", unit="s", description="GenAI operation duration"
        ),
        token_usage=m.create_histogram(
            "gen_ai.client.token.usage", unit="{token}", description="Tokens used per request"
        ),
        append_duration=m.create_histogram(
            "clawlog.store.append.duration", unit="s", description="Store append duration"
        ),
        append_batch_size=m.create_histogram(
            "clawlog.store.append.batch_size",
            unit="{event}",
            description="Events per committed append batch",
        ),
        projection_lag=m.create_observable_gauge(
            "clawlog.projection.lag",
            # Hands the queue over first: every collection runs the callbacks before it
            # aggregates, so it sees every measurement taken before it.
            callbacks=[hand_over, _observe_projection_lag],
            unit="{event}",
            description="Events behind the head of the log, per projection",
        ),
    )
    return built


_lag_sources: dict[object, LagSource] = {}
_lag_sources_lock = threading.Lock()


def register_projection_lag(source: LagSource) -> Callable[[], None]:
    """Feeds ``clawlog.projection.lag`` from ``source``; returns the function that unregisters it.

    ``source`` runs on the metric reader's thread at each collection: it must be cheap,
    thread-safe and not block (read values the owner already keeps, query nothing).
    """
    instruments()  # the gauge exists on the current provider (a proxy follows a later one)
    key = object()
    with _lag_sources_lock:
        _lag_sources[key] = source

    def unregister() -> None:
        with _lag_sources_lock:
            _lag_sources.pop(key, None)

    return unregister


def _observe_projection_lag(options: CallbackOptions) -> Iterable[Observation]:
    with _lag_sources_lock:
        sources = list(_lag_sources.values())
    observations: list[Observation] = []
    for source in sources:
        for projection, lag in source():
            observations.append(Observation(lag, {METRIC_PROJECTION: projection}))
    return observations
