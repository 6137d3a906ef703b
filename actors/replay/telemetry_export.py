"""A recorded session as OpenTelemetry spans, after the fact (``clawlog export-otel``).

The live run emits spans while the work happens (:mod:`events.telemetry` names them);
this module reads the same work back from the log and emits the same tree, with the
recorded times, so an audit of a past session can be looked at in the tracing UI the
operator already uses::

    await export_session(store, "lead", "demo-user", tracer_provider=provider)

One trace per turn of the session: the turn span ``invoke_agent {agent}`` is its root,
with a ``chat {model}`` span per model request (its usage, response model and cost as
``session.model_replied`` recorded them), a ``chat {summarizer}`` span per summary a
compaction wrote or failed to write in the turn (``session.compacted`` /
``session.compaction_failed``; an on-demand compaction belongs to no turn and is not
exported) and an ``execute_tool {tool}`` span per tool call under it. The work a tool
call started elsewhere hangs under that call's span, found by the ids the events carry:
a subagent task (``subagent.spawned`` on ``agent/{agent}``, the subagent's own turns
under it), a delegation (``delegation.requested`` on ``link/{agent}->{target}``, the
target session's turns under it), a handoff
(``handoff.routed``) and an MCP call (the call's server); an agent quality gate's review
turns (``delegation.gate_evaluated``: the reviewer's session ``gate-{id}-{attempt}``) hang
under the delegation, as live. A turn that announces async results links (span links) to
the spans of the runs or the delegation it announces, in the traces of the turns that
started them, when the ids are derived (:class:`ExportIds`). A turn its session resumed
after a stop or a restart (``actor.stopped`` / ``actor.started`` inside the turn) is one
span per run of the session, as live: the first ``interrupted``, each later one its child,
marked ``clawlog.turn.resumed``, with the model requests that run made and the tool calls
whose end it recorded. Every span starts and ends at the
``recorded_at`` of the events that started and ended its work, and carries the position of
the event that ended it (``clawlog.log.position``), so a span leads back to the log.

It only reads the log, yet it lives here, in ``actors`` (the one package that may import
all three others), rather than in ``projections`` (which may import only ``events``): a
tool call's span is rebuilt with the very functions the live pipeline derives it with from
the same events (:mod:`tools.call_telemetry`: outcome, refused step, error type, status),
so the live and the exported span cannot drift apart. It starts no actor and no System.

Trace and span ids. The OpenTelemetry API gives a library no way to choose ids: the SDK's
id generator does. :class:`ExportIds` is such a generator for the application to install
(``TracerProvider(id_generator=ExportIds())``, as ``clawlog export-otel`` does): the spans
of an export then get ids derived from the log (the trace id from the turn id, see
:func:`turn_trace_id`; a span id from the position of the event that started it), so a
re-export of a turn yields the very same trace and spans, which a tracing backend shows as
one trace, and a turn's trace can be opened from its id alone. With any other generator
the export gets fresh ids; its spans still carry the turn id as ``clawlog.correlation_id``.
"""

from __future__ import annotations

import contextvars
import hashlib
import random
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import (
    Link,
    Span,
    SpanContext,
    SpanKind,
    Status,
    StatusCode,
    TraceFlags,
)

from clawlog.events import Event, EventStore, LogPages, RecordedEvent
from clawlog.events import telemetry as otel
from clawlog.events.domain.actor import ActorStarted, ActorStopped
from clawlog.events.domain.agent import (
    HandoffRouted,
    SubagentAnnounced,
    SubagentFinished,
    SubagentSpawned,
)
from clawlog.events.domain.delegation import (
    DelegationCancelled,
    DelegationCompleted,
    DelegationFailed,
    DelegationRequested,
    GateEvaluated,
)
from clawlog.events.domain.mcp import McpToolsDiscovered
from clawlog.events.domain.session import (
    CompactionFailed,
    ModelFailed,
    ModelReplied,
    ModelRequested,
    SessionCompacted,
    SessionStarted,
    TurnCancelled,
    TurnCompleted,
    TurnFailed,
    TurnStarted,
)
from clawlog.events.domain.tool import (
    ApprovalOutcome,
    ToolApprovalDecided,
    ToolApprovalRequested,
    ToolCallCompleted,
    ToolCallFailed,
    ToolCallRefused,
    ToolCallRequested,
    ToolCallStarted,
)
from clawlog.events.streams import agent_stream, session_stream, subagent_stream
from clawlog.tools import ErrorKind
from clawlog.tools.call_telemetry import (
    APPROVAL_DECIDED,
    APPROVAL_REQUESTED,
    ended_attributes,
    ended_status,
    span_name,
)

from ..agents.turn_trace import STOPPED_MID_TURN
from ..errors import NothingRecorded

__all__ = ["ExportIds", "export_session", "turn_trace_id"]

_PAGE = 1000
_CALL_ENDS = (ToolCallCompleted, ToolCallFailed, ToolCallRefused)
_DELEGATION_TYPES = [
    "delegation.requested",
    "delegation.gate_evaluated",
    "delegation.completed",
    "delegation.failed",
    "delegation.cancelled",
]
#: The tools that spawn subagents, and the delegation tool (actors.agents.tools,
#: actors.delegation.tools): their calls are the parents of that work.
_SPAWN_TOOLS = ("subagent", "spawn")
_DELEGATE_TOOL = "delegate"
_HANDOFF_TOOL = "handoff"
#: How ``delegation.gate_evaluated`` names an agent gate (actors.delegation.gates.gate_name),
#: whose reviewer answers in its session ``gate-{delegation id}-{attempt}``.
_AGENT_GATE = "agent:"
#: The name of a subagent run's span (actors.agents.supervisor).
_SUBAGENT_SPAN = f"{otel.OPERATION_INVOKE_AGENT} subagent"


# -- ids ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _PlannedIds:
    trace_id: int
    span_id: int


#: The ids the span being started should get (set around one ``start_span`` call).
_planned: contextvars.ContextVar[_PlannedIds | None] = contextvars.ContextVar(
    "clawlog_export_ids", default=None
)


def _digest(text: str, size: int) -> int:
    value = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=size).digest(), "big")
    return value or 1  # 0 is the invalid id


def turn_trace_id(turn_id: str) -> int:
    """The trace id an export with :class:`ExportIds` gives a turn's trace (print it with
    ``format(trace_id, "032x")`` to open the trace in a tracing UI)."""
    return _digest(f"clawlog-trace:{turn_id}", 16)


class ExportIds:
    """An SDK id generator (``TracerProvider(id_generator=ExportIds())``): the spans of
    :func:`export_session` get ids derived from the log, every other span random ones, as
    the SDK's default generator gives."""

    def generate_trace_id(self) -> int:
        planned = _planned.get()
        return planned.trace_id if planned is not None else _random_id(128)

    def generate_span_id(self) -> int:
        planned = _planned.get()
        return planned.span_id if planned is not None else _random_id(64)

    def is_trace_id_random(self) -> bool:
        # Derived ids are not random: samplers must not count on their low bits.
        return False


def _span_id(root: str, started: RecordedEvent, name: str) -> int:
    """The span id ExportIds gives the span ``name`` started by ``started`` in the trace of
    the turn ``root``."""
    return _digest(f"clawlog-span:{root}:{started.position}:{name}", 8)


def _random_id(bits: int) -> int:
    value = 0
    while value == 0:
        value = random.getrandbits(bits)
    return value


def _ns(seconds: float) -> int:
    return round(seconds * 1e9)


# -- a session read as turns -------------------------------------------------------------


@dataclass
class _Call:
    """One tool call of a turn: its ``tool.call_requested`` and every later tool event."""

    requested: RecordedEvent
    events: list[RecordedEvent] = field(default_factory=list)

    @property
    def event(self) -> ToolCallRequested:
        assert isinstance(self.requested.event, ToolCallRequested)
        return self.requested.event

    @property
    def last(self) -> RecordedEvent:
        return self.events[-1] if self.events else self.requested

    def first(self, kind: type[Event]) -> RecordedEvent | None:
        return next((e for e in self.events if isinstance(e.event, kind)), None)

    def argument(self, name: str) -> str:
        value = self.event.arguments.get(name)
        return value if isinstance(value, str) else ""


@dataclass
class _Request:
    """One model request of a turn and how it ended (``model_replied`` / ``model_failed``)."""

    requested: RecordedEvent
    end: RecordedEvent | None = None


@dataclass
class _Run:
    """The part of a turn one run of its session actor did: the whole turn, unless the
    session stopped during it (``actor.stopped``; a killed process records no stop, its
    next ``actor.started`` shows it) and a later run resumed it. Live, each run is a turn
    span of its own: an interrupted one, then a resumed one as its child."""

    started: RecordedEvent
    requests: list[_Request] = field(default_factory=list)
    #: The summarizer calls of its compactions: (the event before the call, its outcome).
    summaries: list[tuple[RecordedEvent, RecordedEvent]] = field(default_factory=list)
    #: Where the run stopped (None: it ended the turn).
    stopped: RecordedEvent | None = None
    #: The last event added (where a failed summary's call, whose start the log does not
    #: record, is taken to start; where a killed run is taken to end).
    last: RecordedEvent | None = None


@dataclass
class _Turn:
    number: int
    started: RecordedEvent
    calls: list[_Call] = field(default_factory=list)
    end: RecordedEvent | None = None
    runs: list[_Run] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.runs.append(_Run(self.started))

    @property
    def turn_id(self) -> str:
        assert isinstance(self.started.event, TurnStarted)
        return self.started.event.turn_id

    def add(self, recorded: RecordedEvent) -> None:
        event, run = recorded.event, self.runs[-1]
        before, run.last = run.last or run.started, recorded
        match event:
            case ActorStopped():
                run.stopped = recorded
            case ActorStarted():  # a later run of the session resumes the turn
                run.stopped = run.stopped or before
                self.runs.append(_Run(recorded))
            case SessionCompacted(model=model) | CompactionFailed(model=model) if model and (
                isinstance(event, CompactionFailed) or event.summarized_turns
            ):
                run.summaries.append((before, recorded))
            case ModelRequested():
                run.requests.append(_Request(recorded))
            case ModelReplied() | ModelFailed() if run.requests:
                run.requests[-1].end = recorded
            case ToolCallRequested():
                self.calls.append(_Call(recorded))
            case TurnCompleted() | TurnFailed() | TurnCancelled():
                self.end = recorded
            case _:
                call_id = getattr(event, "call_id", None)
                if recorded.type.startswith("tool.") and isinstance(call_id, str):
                    for call in reversed(self.calls):
                        if call.event.call_id == call_id:
                            call.events.append(recorded)
                            break

    def run_of(self, call: _Call) -> int:
        """The run whose span a call's span is under: the one that recorded its end. A call
        in flight when its run stopped is begun again by the run that resumes it (an
        approval wait restored, a call run again or closed as interrupted), as live."""
        position = (_ending(call) or call.last).position
        return max(i for i, run in enumerate(self.runs) if run.started.position <= position)


def _ending(call: _Call) -> RecordedEvent | None:
    """The event that ended the call, if recorded."""
    return next((e for e in call.events if isinstance(e.event, _CALL_ENDS)), None)


@dataclass
class _SessionInfo:
    stream: str
    agent: str
    session_key: str
    channel: str = ""


#: Which turns of a session to export: all of them, or those a test accepts (the one turn a
#: handoff started in the target's session).
TurnFilter = Callable[[RecordedEvent], bool]


async def _read_turns(
    store: EventStore, info: _SessionInfo, first: int, last: int | None, only: TurnFilter | None
) -> AsyncIterator[_Turn]:
    """The finished turns numbered ``first`` to ``last`` of a session stream (and accepted
    by ``only``), one at a time, read page by page (a turn is held until it ends, never the
    whole stream)."""
    turn: _Turn | None = None
    number = 0
    version = 1
    while page := await store.read_stream(info.stream, version, _PAGE):
        version = page[-1].version + 1
        for recorded in page:
            event = recorded.event
            if not isinstance(event, Event):
                continue  # a tag this process does not know: not part of the turn's tree
            if isinstance(event, SessionStarted):
                info.channel = event.channel
            elif isinstance(event, TurnStarted):
                number += 1
                if last is not None and number > last:
                    return
                wanted = number >= first and (only is None or only(recorded))
                turn = _Turn(number, recorded) if wanted else None
            elif turn is not None and getattr(event, "turn_id", turn.turn_id) == turn.turn_id:
                turn.add(recorded)
                if turn.end is not None:
                    yield turn
                    turn = None
        if len(page) < _PAGE:
            return


# -- what the log links to a turn ----------------------------------------------------------


@dataclass
class _Delegation:
    requested: RecordedEvent
    end: RecordedEvent | None = None
    #: The agent gates' reviews: (reviewer agent, attempt), in the order they were recorded.
    reviews: list[tuple[str, int]] = field(default_factory=list)

    @property
    def event(self) -> DelegationRequested:
        assert isinstance(self.requested.event, DelegationRequested)
        return self.requested.event


class _Links:
    """The subagent tasks, delegations, handoffs and MCP servers a session's turns used,
    indexed by the ids their events carry. Each index is read once, when first needed,
    from the position of the export's first turn on (the MCP tool names from the start:
    a server lists its tools before any session calls them)."""

    def __init__(self, store: EventStore, start: int) -> None:
        self._store = store
        self._start = start
        #: agent → (parent session stream, parent turn id) → spawns, in order
        self._spawns: dict[str, dict[tuple[str, str], list[RecordedEvent]]] = {}
        self._finished: dict[str, RecordedEvent] = {}
        #: source agent → (source session stream, source turn id) → delegations, in order
        self._delegations: dict[str, dict[tuple[str, str], list[_Delegation]]] = {}
        self._handoffs: dict[str, list[RecordedEvent]] | None = None
        self._mcp_tools: dict[str, tuple[str, str]] | None = None
        #: task id → its ``subagent.spawned``; announcing turn id → the tasks it announced
        self._spawned: dict[str, RecordedEvent] = {}
        self._announced: dict[str, list[str]] = {}
        #: delegation id → its ``delegation.requested``
        self._requested: dict[str, RecordedEvent] = {}

    async def _scan(
        self, start: int, *, prefix: str, types: Sequence[str]
    ) -> AsyncIterator[RecordedEvent]:
        async for page in LogPages(self._store, start, stream_prefix=prefix, types=types):
            for recorded in page:
                yield recorded

    async def spawn(self, agent: str, stream: str, turn_id: str, task: str) -> list[RecordedEvent]:
        """The subagent task a spawning call of the turn started (matched by its task
        text, else the turn's next one), taken out of the index."""
        return _take(await self._spawns_of(agent, stream, turn_id), lambda e: e.event.task == task)

    async def spawns_left(self, agent: str, stream: str, turn_id: str) -> list[RecordedEvent]:
        """The turn's subagent tasks no call was matched with (a steer's new task)."""
        left = await self._spawns_of(agent, stream, turn_id)
        taken, left[:] = list(left), []
        return taken

    async def _spawns_of(self, agent: str, stream: str, turn_id: str) -> list[RecordedEvent]:
        if agent not in self._spawns:
            found: dict[tuple[str, str], list[RecordedEvent]] = {}
            version = 1
            book = agent_stream(agent)
            while page := await self._store.read_stream(book, version, _PAGE):
                version = page[-1].version + 1
                for recorded in page:
                    match recorded.event:
                        case SubagentSpawned(parent_session=parent, task_id=task_id):
                            key = (parent, recorded.correlation_id or "")
                            found.setdefault(key, []).append(recorded)
                            self._spawned[task_id] = recorded
                        case SubagentAnnounced(turn_id=announcing, task_ids=tasks) if announcing:
                            self._announced[announcing] = tasks
                        case SubagentFinished(task_id=task_id):
                            self._finished[task_id] = recorded
                if len(page) < _PAGE:
                    break
            self._spawns[agent] = found
        return self._spawns[agent].setdefault((stream, turn_id), [])

    def finished(self, task_id: str) -> RecordedEvent | None:
        return self._finished.get(task_id)

    async def delegation(
        self, agent: str, stream: str, turn_id: str, target: str, task: str
    ) -> list[_Delegation]:
        """The delegation a ``delegate`` call of the turn made (matched by target and
        task, else the turn's next one), taken out of the index."""
        found = await self._delegations_of(agent, stream, turn_id)
        return _take(found, lambda d: (d.event.target, d.event.task) == (target, task))

    async def delegations_left(self, agent: str, stream: str, turn_id: str) -> list[_Delegation]:
        """The turn's delegations no call was matched with (an evaluate_loop's)."""
        left = await self._delegations_of(agent, stream, turn_id)
        taken, left[:] = list(left), []
        return taken

    async def _delegations_of(self, agent: str, stream: str, turn_id: str) -> list[_Delegation]:
        if agent not in self._delegations:
            found: dict[tuple[str, str], list[_Delegation]] = {}
            by_id: dict[str, _Delegation] = {}
            prefix = f"link/{agent}->"
            async for recorded in self._scan(self._start, prefix=prefix, types=_DELEGATION_TYPES):
                match recorded.event:
                    case DelegationRequested(delegation_id=delegation_id, source_session=source):
                        delegation = _Delegation(recorded)
                        by_id[delegation_id] = delegation
                        self._requested[delegation_id] = recorded
                        key = (source, recorded.correlation_id or "")
                        found.setdefault(key, []).append(delegation)
                    case DelegationCompleted() | DelegationFailed() | DelegationCancelled():
                        if recorded.event.delegation_id in by_id:
                            by_id[recorded.event.delegation_id].end = recorded
                    case GateEvaluated(delegation_id=delegation_id, gate=gate, attempt=attempt):
                        reviewer = gate.removeprefix(_AGENT_GATE)
                        if delegation_id in by_id and gate.startswith(_AGENT_GATE):
                            by_id[delegation_id].reviews.append((reviewer, attempt))
            self._delegations[agent] = found
        return self._delegations[agent].setdefault((stream, turn_id), [])

    async def causes(self, agent: str, turn: _Turn) -> list[tuple[RecordedEvent, str]]:
        """What a turn announcing async results announces: the run (``subagent.spawned``)
        or delegation (``delegation.requested``) that started each span its live span
        links to, with that span's name. Each started in a turn of this session, the root
        of its trace (the root's turn id is the event's correlation id)."""
        started = turn.started.event
        assert isinstance(started, TurnStarted)
        if started.sender == "subagent":
            await self._spawns_of(agent, "", "")  # reads the agent's book once
            runs = (self._spawned.get(t) for t in self._announced.get(turn.turn_id, []))
            return [(run, _SUBAGENT_SPAN) for run in runs if run is not None]
        delegation_id = started.sender.removeprefix("delegate:")
        if delegation_id == started.sender:
            return []
        await self._delegations_of(agent, "", "")
        requested = self._requested.get(delegation_id)
        if requested is None or not isinstance(requested.event, DelegationRequested):
            return []
        return [(requested, f"delegate {requested.event.target}")]

    async def handoff(self, turn_id: str, agent: str, target: str) -> list[RecordedEvent]:
        """The route a ``handoff`` call of the turn set, taken out of the index."""
        if self._handoffs is None:
            self._handoffs = {}
            scan = self._scan(self._start, prefix="handoff/", types=["handoff.routed"])
            async for recorded in scan:
                self._handoffs.setdefault(recorded.correlation_id or "", []).append(recorded)
        routed = [
            r
            for r in self._handoffs.get(turn_id, [])
            if isinstance(r.event, HandoffRouted) and r.event.from_agent == agent
        ]
        taken = _take(routed, lambda r: r.event.to_agent == target)
        for recorded in taken:
            self._handoffs[turn_id].remove(recorded)
        return taken

    async def mcp_tool(self, call: _Call) -> tuple[str, str] | None:
        """(server, the tool's name on the server) of an MCP tool call, else None."""
        for recorded in call.events:
            details = getattr(recorded.event, "details", None)
            if isinstance(details, dict) and isinstance(details.get("server"), str):
                return details["server"], str(details.get("tool") or call.event.tool)
        if self._mcp_tools is None:
            self._mcp_tools = {}
            scan = self._scan(1, prefix="mcp/", types=["mcp.tools_discovered"])
            async for recorded in scan:
                if isinstance(recorded.event, McpToolsDiscovered):
                    for tool in recorded.event.tools:
                        self._mcp_tools[tool.registered_name] = (recorded.event.server, tool.name)
        return self._mcp_tools.get(call.event.tool)


# -- spans ---------------------------------------------------------------------------------


class _Exporter:
    """Emits one session's turns (and what they link to) as spans; counts them."""

    def __init__(
        self, store: EventStore, tracer: trace.Tracer, links: _Links, derived_ids: bool
    ) -> None:
        self._store = store
        self._tracer = tracer
        self._links = links
        #: The provider gives the spans the ids ExportIds derives: a span of another turn's
        #: trace can be linked to by its ids, since its export gets the same ones.
        self._derived_ids = derived_ids
        self.spans = 0
        #: The turn id of the trace being exported: every span id is derived from it.
        self._root = ""

    def _start(
        self,
        name: str,
        parent: Span | None,
        started: RecordedEvent,
        attributes: dict[str, Any],
        kind: SpanKind = SpanKind.INTERNAL,
        links: list[Link] | None = None,
        start_time: float | None = None,
    ) -> Span:
        # A root gets an empty context: a span current in the caller is not its parent.
        context = trace.set_span_in_context(parent) if parent is not None else Context()
        ids = _PlannedIds(turn_trace_id(self._root), _span_id(self._root, started, name))
        token = _planned.set(ids)
        try:
            span = self._tracer.start_span(
                name,
                context=context,
                kind=kind,
                attributes=attributes,
                links=links,
                start_time=_ns(started.recorded_at if start_time is None else start_time),
            )
        finally:
            _planned.reset(token)
        self.spans += 1
        return span

    async def _announced(self, info: _SessionInfo, turn: _Turn) -> list[Link] | None:
        """The links of a turn announcing async results: to the spans of the runs (the
        delegation) it announces, as the live turn has them. Only with derived ids: other
        ids of those spans are known to nobody."""
        if not self._derived_ids:
            return None
        links = [
            Link(
                SpanContext(
                    trace_id=turn_trace_id(root),
                    span_id=_span_id(root, started, name),
                    is_remote=False,
                    trace_flags=TraceFlags(TraceFlags.SAMPLED),
                )
            )
            for started, name in await self._links.causes(info.agent, turn)
            if (root := started.correlation_id)
        ]
        return links or None

    @staticmethod
    def _end(
        span: Span, started: RecordedEvent, ended: RecordedEvent, *, position: bool = True
    ) -> None:
        """Ends ``span`` when ``ended`` was recorded, naming its position unless the work
        ended unrecorded (an unanswered model request)."""
        if position:
            span.set_attribute(otel.POSITION, ended.position)
        span.end(end_time=_ns(max(ended.recorded_at, started.recorded_at)))

    async def session(
        self,
        info: _SessionInfo,
        parent: Span | None,
        first: int = 1,
        last: int | None = None,
        *,
        only: TurnFilter | None = None,
        most: int | None = None,
    ) -> int:
        """Emits the session's finished turns ``first`` to ``last`` (those ``only``
        accepts, at ``most`` that many); how many there were."""
        count = 0
        async for turn in _read_turns(self._store, info, first, last, only):
            if parent is None:
                self._root = turn.turn_id
            await self._turn(info, turn, parent)
            count += 1
            if most is not None and count >= most:
                break
        return count

    async def _turn(self, info: _SessionInfo, turn: _Turn, parent: Span | None) -> None:
        """The turn's span, or, for a turn a later run of its session resumed, one span per
        run as live: the first ``interrupted``, each later one ``clawlog.turn.resumed`` and
        the child of the one before (the same trace, as a turn resumed in the process
        that interrupted it is traced)."""
        started = turn.started.event
        assert isinstance(started, TurnStarted) and turn.end is not None
        attributes: dict[str, Any] = {
            otel.GEN_AI_OPERATION: otel.OPERATION_INVOKE_AGENT,
            otel.GEN_AI_AGENT: info.agent,
            otel.GEN_AI_CONVERSATION: info.stream,
            otel.SESSION_KEY: info.session_key,
            otel.CORRELATION: turn.turn_id,
            otel.STREAM: info.stream,
        }
        channel = started.channel or info.channel
        if channel:
            attributes[otel.CHANNEL] = channel
        links = await self._announced(info, turn) if parent is None else None
        calls: list[list[_Call]] = [[] for _ in turn.runs]
        for call in turn.calls:
            calls[turn.run_of(call)].append(call)
        span = parent
        for index, run in enumerate(turn.runs):
            if index:
                attributes = {**attributes, otel.TURN_RESUMED: True}
            span = self._start(
                f"invoke_agent {info.agent}",
                span,
                run.started,
                attributes,
                links=links if index == 0 else None,
            )
            ends = run.stopped or turn.end
            for request in run.requests:
                self._chat(span, request, turn, ends)
            for before, outcome in run.summaries:
                self._summary(span, before, outcome)
            for call in calls[index]:
                await self._call(info, turn, span, call, run.started if index else None)
            if run.stopped is not None:
                span.set_attribute(otel.TURN_OUTCOME, otel.OUTCOME_INTERRUPTED)
                span.set_status(Status(StatusCode.ERROR, STOPPED_MID_TURN))
                self._end(span, run.started, run.stopped, position=False)
        assert span is not None
        await self._unmatched(info, turn, span)
        match turn.end.event:
            case TurnFailed(reason=reason, message=message):
                span.set_attribute(otel.TURN_OUTCOME, "failed")
                span.set_status(
                    Status(StatusCode.ERROR, f"{reason}: {message}" if message else reason)
                )
            case TurnCancelled():
                span.set_attribute(otel.TURN_OUTCOME, "cancelled")
            case _:
                span.set_attribute(otel.TURN_OUTCOME, "completed")
        self._end(span, turn.runs[-1].started, turn.end)

    def _chat(self, turn_span: Span, request: _Request, turn: _Turn, ends: RecordedEvent) -> None:
        """A model request, under the span of the run that made it (``ends``: where that
        run ended, the turn's end or the run's stop)."""
        asked = request.requested.event
        assert isinstance(asked, ModelRequested)
        attributes: dict[str, Any] = {
            otel.GEN_AI_OPERATION: otel.OPERATION_CHAT,
            otel.GEN_AI_PROVIDER: asked.provider,
            otel.GEN_AI_REQUEST_MODEL: asked.model,
            otel.ITERATION: asked.iteration,
            otel.CORRELATION: turn.turn_id,
        }
        span = self._start(
            f"{otel.OPERATION_CHAT} {asked.model}",
            turn_span,
            request.requested,
            attributes,
            SpanKind.CLIENT,
        )
        # A request never answered (the turn was cancelled, the session stopped) ends with
        # its run, unpositioned.
        end = request.end or ends
        match end.event:
            case ModelReplied(usage=usage, stop_reason=stop_reason, model=model, cost_usd=cost):
                if stop_reason:
                    span.set_attribute(otel.GEN_AI_FINISH, [stop_reason])
                span.set_attributes(otel.reply_attributes(usage, model, cost))
            case ModelFailed(kind=kind, message=message):
                exception = {otel.EXCEPTION_TYPE: kind, otel.EXCEPTION_MESSAGE: message}
                span.add_event("exception", exception, timestamp=_ns(end.recorded_at))
                span.set_status(Status(StatusCode.ERROR, f"{kind}: {message}"))
                span.set_attribute(otel.ERROR_TYPE, kind)
        self._end(span, request.requested, end, position=request.end is not None)

    def _summary(self, turn_span: Span, before: RecordedEvent, outcome: RecordedEvent) -> None:
        """A summarizer's call (actors.agents.summary_trace): named and filled from its
        recorded outcome as the live span is; it started ``duration_ms`` before a written
        summary was recorded (a failure records no duration: it started after ``before``)."""
        event = outcome.event
        assert isinstance(event, (SessionCompacted, CompactionFailed))
        name, attributes = otel.summary_span(event)
        start = before.recorded_at
        if isinstance(event, SessionCompacted) and event.duration_ms:
            start = max(start, outcome.recorded_at - event.duration_ms / 1000)
        span = self._start(name, turn_span, outcome, attributes, SpanKind.CLIENT, start_time=start)
        if isinstance(event, CompactionFailed):
            exception = {otel.EXCEPTION_TYPE: event.kind, otel.EXCEPTION_MESSAGE: event.message}
            span.add_event("exception", exception, timestamp=_ns(outcome.recorded_at))
            span.set_status(Status(StatusCode.ERROR, f"{event.kind}: {event.message}"))
        self._end(span, outcome, outcome)

    async def _call(
        self,
        info: _SessionInfo,
        turn: _Turn,
        turn_span: Span,
        call: _Call,
        resumed: RecordedEvent | None = None,
    ) -> None:
        """A tool call's span; a call in flight when its run stopped starts again where the
        run that ``resumed`` it started (live, that run begins it again)."""
        requested = call.event
        attributes: dict[str, Any] = {
            otel.GEN_AI_OPERATION: otel.OPERATION_EXECUTE_TOOL,
            otel.GEN_AI_TOOL: requested.tool,
            otel.GEN_AI_TOOL_CALL: requested.call_id,
        }
        if call.requested.correlation_id:
            attributes[otel.CORRELATION] = call.requested.correlation_id
        begun = resumed if resumed is not None else call.requested
        span = self._start(span_name(requested.tool), turn_span, begun, attributes)
        approval = self._approval(span, call, begun)
        ending = _ending(call)
        await self._linked(info, turn, span, call, ending)
        if ending is not None and isinstance(ending.event, _CALL_ENDS):
            span.set_attributes(ended_attributes(ending.event, approval))
            status = ended_status(ending.event, approval)
            if status is not None:
                span.set_status(status)
            # An interrupted call raised nothing: its owner closed it (live, no exception).
            failed = ending.event
            if isinstance(failed, ToolCallFailed) and failed.error_kind != ErrorKind.INTERRUPTED:
                exception = {
                    otel.EXCEPTION_TYPE: str(failed.error_kind),
                    otel.EXCEPTION_MESSAGE: failed.message,
                }
                span.add_event("exception", exception, timestamp=_ns(ending.recorded_at))
        self._end(span, begun, ending or call.last)

    @staticmethod
    def _approval(span: Span, call: _Call, begun: RecordedEvent) -> ApprovalOutcome | None:
        """The approval wait as the live span has it: two span events and the wait in ms
        (the request's event no earlier than the span: a resumed run asks again)."""
        asked, decided = call.first(ToolApprovalRequested), call.first(ToolApprovalDecided)
        if asked is not None:
            at = max(asked.recorded_at, begun.recorded_at)
            span.add_event(APPROVAL_REQUESTED, timestamp=_ns(at))
        if decided is None or not isinstance(decided.event, ToolApprovalDecided):
            return None
        decision = decided.event.decision
        span.add_event(
            APPROVAL_DECIDED, {otel.APPROVAL_DECISION: decision}, timestamp=_ns(decided.recorded_at)
        )
        if asked is not None:
            wait_ms = max(decided.recorded_at - asked.recorded_at, 0.0) * 1000
            span.set_attribute(otel.APPROVAL_WAIT, round(wait_ms, 3))
        return decision

    async def _linked(
        self,
        info: _SessionInfo,
        turn: _Turn,
        span: Span,
        call: _Call,
        ending: RecordedEvent | None,
    ) -> None:
        """The work this call started elsewhere, as children of its span (``ending``: the
        event that ended the call, if recorded)."""
        if call.first(ToolCallStarted) is None:
            return  # refused before it ran: it started nothing
        tool, links, key = call.event.tool, self._links, (info.agent, info.stream, turn.turn_id)
        if tool in _SPAWN_TOOLS:
            for spawned in await links.spawn(*key, call.argument("task")):
                await self._subagent(info, span, spawned)
        elif tool == _DELEGATE_TOOL:
            target, task = call.argument("agent"), call.argument("task")
            for delegation in await links.delegation(*key, target, task):
                await self._delegation(span, delegation)
        elif tool == _HANDOFF_TOOL:
            for routed in await links.handoff(turn.turn_id, info.agent, call.argument("agent")):
                await self._handoff(span, call, routed)
        elif (server := await links.mcp_tool(call)) is not None:
            self._mcp(span, call, ending, *server)

    async def _unmatched(self, info: _SessionInfo, turn: _Turn, turn_span: Span) -> None:
        """The turn's subagent tasks and delegations no call was matched with (a steer's
        new task, an evaluate_loop's delegations): under the turn span."""
        key = (info.agent, info.stream, turn.turn_id)
        for spawned in await self._links.spawns_left(*key):
            await self._subagent(info, turn_span, spawned)
        for delegation in await self._links.delegations_left(*key):
            await self._delegation(turn_span, delegation)

    async def _subagent(self, info: _SessionInfo, parent: Span, spawned: RecordedEvent) -> None:
        event = spawned.event
        assert isinstance(event, SubagentSpawned)
        stream = subagent_stream(event.task_id)
        attributes: dict[str, Any] = {
            otel.GEN_AI_OPERATION: otel.OPERATION_INVOKE_AGENT,
            otel.GEN_AI_AGENT: info.agent,
            otel.SUBAGENT_TASK: event.task_id,
            otel.STREAM: stream,
            otel.SUBAGENT_MODE: event.mode,
        }
        if spawned.correlation_id:
            attributes[otel.CORRELATION] = spawned.correlation_id
        span = self._start(_SUBAGENT_SPAN, parent, spawned, attributes)
        await self.session(_SessionInfo(stream, info.agent, event.task_id), span)
        finished = self._links.finished(event.task_id)
        if finished is not None and isinstance(finished.event, SubagentFinished):
            span.set_attribute(otel.SUBAGENT_OUTCOME, finished.event.status)
            if finished.event.status == "failed":
                span.set_status(Status(StatusCode.ERROR, finished.event.error))
        self._end(span, spawned, finished or spawned)

    async def _delegation(self, parent: Span, delegation: _Delegation) -> None:
        event = delegation.event
        attributes: dict[str, Any] = {
            otel.DELEGATION: event.delegation_id,
            otel.DELEGATION_SOURCE: event.source,
            otel.DELEGATION_TARGET: event.target,
            otel.DELEGATION_MODE: event.mode,
            otel.STREAM: delegation.requested.stream,
        }
        if delegation.requested.correlation_id:
            attributes[otel.CORRELATION] = delegation.requested.correlation_id
        span = self._start(f"delegate {event.target}", parent, delegation.requested, attributes)
        target = session_stream(event.target, event.target_session)
        await self.session(_SessionInfo(target, event.target, event.target_session), span)
        for reviewer, attempt in delegation.reviews:  # the agent gates' review turns
            key = f"gate-{event.delegation_id}-{attempt}"
            await self.session(_SessionInfo(session_stream(reviewer, key), reviewer, key), span)
        end = delegation.end
        if end is not None:
            span.set_attribute(otel.DELEGATION_OUTCOME, end.type.removeprefix("delegation."))
            if isinstance(end.event, DelegationFailed):
                description = f"{end.event.reason}: {end.event.message}"[:500]
                span.set_status(Status(StatusCode.ERROR, description))
        self._end(span, delegation.requested, end or delegation.requested)

    async def _handoff(self, parent: Span, call: _Call, routed: RecordedEvent) -> None:
        """The route, and the target's turn on the introduction it was sent."""
        event = routed.event
        assert isinstance(event, HandoffRouted)
        started = call.first(ToolCallStarted) or call.requested
        attributes: dict[str, Any] = {
            otel.HANDOFF_FROM: event.from_agent,
            otel.HANDOFF_TO: event.to_agent,
            otel.CHANNEL: event.channel,
            otel.SESSION_KEY: event.session_key,
            otel.STREAM: routed.stream,
        }
        if routed.correlation_id:
            attributes[otel.CORRELATION] = routed.correlation_id
        span = self._start(f"handoff {event.to_agent}", parent, started, attributes)
        sender = f"handoff:{event.from_agent}"

        def introduction(recorded: RecordedEvent) -> bool:
            turn = recorded.event
            return (
                isinstance(turn, TurnStarted)
                and turn.sender == sender
                and (recorded.position > routed.position)
            )

        target = _SessionInfo(
            session_stream(event.to_agent, event.session_key), event.to_agent, event.session_key
        )
        await self.session(target, span, only=introduction, most=1)
        self._end(span, started, routed)

    def _mcp(
        self, parent: Span, call: _Call, ending: RecordedEvent | None, server: str, remote: str
    ) -> None:
        """The MCP request of the call: as live, it carries the call's correlation id and
        the position of the call's ending event (live it keeps the time the server
        answered as its end, which the log does not record: here the ending's time)."""
        started = call.first(ToolCallStarted) or call.requested
        attributes: dict[str, Any] = {otel.MCP_SERVER: server, otel.GEN_AI_TOOL: remote}
        if call.requested.correlation_id:
            attributes[otel.CORRELATION] = call.requested.correlation_id
        span = self._start(f"mcp tools/call {server}", parent, started, attributes, SpanKind.CLIENT)
        ended = ending or call.last
        match ended.event:
            case ToolCallFailed(error_kind=kind, message=message):
                if kind != ErrorKind.INTERRUPTED:  # the owner closed it: nothing was raised
                    exception = {otel.EXCEPTION_TYPE: str(kind), otel.EXCEPTION_MESSAGE: message}
                    span.add_event("exception", exception, timestamp=_ns(ended.recorded_at))
                span.set_status(Status(StatusCode.ERROR, message[:500]))
            case ToolCallCompleted(is_error=True):  # the server ran the tool and says it failed
                span.set_attribute(otel.ERROR_TYPE, "tool_error")
                span.set_status(Status(StatusCode.ERROR, "the server reported a tool error"))
        self._end(span, started, ended, position=ending is not None)


def _take(items: list[Any], wanted: Any) -> list[Any]:
    """Removes from ``items`` the first item ``wanted`` accepts (else the first item) and
    returns it in a list: a call starts one subagent, delegation or handoff."""
    for index, item in enumerate(items):
        if wanted(item):
            return [items.pop(index)]
    return [items.pop(0)] if items else []


async def export_session(
    store: EventStore,
    agent: str,
    session_key: str,
    *,
    tracer_provider: trace.TracerProvider | None = None,
    first_turn: int = 1,
    last_turn: int | None = None,
) -> int:
    """Emits the recorded session ``session/{agent}/{session_key}`` as spans; returns how
    many spans were emitted.

    Turns ``first_turn`` to ``last_turn`` (counted from 1, as ``clawlog replay --rerun``
    counts them; None: the last) are exported, each as its own trace; a turn still running
    (no end recorded yet) is left out. ``tracer_provider`` defaults to the global one.
    Raises :class:`~clawlog.actors.NothingRecorded` when nothing is recorded for the
    session, and the store's errors (a corrupt event names its position).
    """
    if type(first_turn) is not int or first_turn < 1:
        raise ValueError(f"first_turn counts turns from 1, not {first_turn!r}")
    if last_turn is not None and (type(last_turn) is not int or last_turn < first_turn):
        raise ValueError(f"last_turn must be None or at least first_turn, not {last_turn!r}")
    stream = session_stream(agent, session_key)
    head = await store.read_stream(stream, 1, 1)
    if not head:
        raise NothingRecorded(await _nothing_recorded(store, agent, stream))
    provider = tracer_provider if tracer_provider is not None else trace.get_tracer_provider()
    tracer = provider.get_tracer(otel.SCOPE_NAME, _version())
    derived_ids = isinstance(getattr(provider, "id_generator", None), ExportIds)
    exporter = _Exporter(store, tracer, _Links(store, head[0].position), derived_ids)
    turns = await exporter.session(
        _SessionInfo(stream, agent, session_key), None, first_turn, last_turn
    )
    if turns == 0 and first_turn > 1:
        raise NothingRecorded(f"{stream} has no finished turn from turn {first_turn} on")
    return exporter.spans


async def _nothing_recorded(store: EventStore, agent: str, stream: str) -> str:
    """Why there is nothing to export: no such agent (naming the agents there are), or no
    such session of it."""
    if await store.stream_version(agent_stream(agent)) > 0:
        return (
            f"nothing is recorded on {stream}: agent {agent!r} has no such session "
            f"(`clawlog tail --stream-prefix session/{agent}/` lists its sessions)"
        )
    agents: set[str] = set()
    async for page in LogPages(store, 1, stream_prefix="agent/", types=["agent.registered"]):
        agents.update(recorded.stream.removeprefix("agent/") for recorded in page)
    known = ", ".join(sorted(agents)) or "none"
    return f"no agent {agent!r} is recorded in this log (agents: {known})"


def _version() -> str:
    import clawlog

    return clawlog.__version__
