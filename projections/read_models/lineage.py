"""Lineage: the chain of one request, from the turn that asked to where its outcome landed.

chains = await read_lineage(store, "dg-4f2a9c01b3e7")    # or a task, call or turn id
lost = await read_unreturned(store)                           # outcomes that never came back

A delegation, a subagent task or a handoff is asked for by a tool call in a turn of the
caller's session; the target works in turns of its own session; the outcome is recorded
(``delegation.completed|failed|cancelled``, ``subagent.finished``); and it comes back to
the caller: an async outcome as a new turn in the caller's session (sender
``delegate:{id}``, or the turn ``subagent.announced`` names), a sync one as the end of the
tool call that asked. The envelopes' causation ids tie the links together: the request's
is the asking call, the target turn's the delegation or task id, the outcome's the target
turn, the announcement turn's the outcome event (its log position, as a string; the
delegation or task id in logs written before). Deliveries are found by sender and turn
id, so both kinds of log read alike.

This is a reader over the log, not a read model: it reads the requests and outcomes
(``delegation.*``, ``subagent.*``, ``handoff.routed``), then the turn starts and tool
call events of the sessions involved, in two passes over those event types. Memory is
bounded by the number of requests matched, not by the log.

A missing delivery is the finding: :func:`read_unreturned` lists every outcome of a
delegation or subagent task that is recorded but whose delivery is not in the log (a
process stopped between the two, or the caller's session could not take it). A subagent
task cancelled by its caller, and a handoff (nothing comes back from one), are never
unreturned.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any, Literal

import msgspec

from clawlog.events import EventStore, RecordedEvent
from clawlog.events.domain.agent import (
    HandoffRouted,
    SubagentAnnounced,
    SubagentFinished,
    SubagentSpawned,
)
from clawlog.events.domain.delegation import DelegationAnnounced, DelegationRequested
from clawlog.events.domain.session import TurnFailed, TurnStarted
from clawlog.events.domain.tool import ToolCallCompleted, ToolCallFailed, ToolCallRequested
from clawlog.events.folds.delegation import delegation_end
from clawlog.events.streams import session_stream, subagent_stream

__all__ = [
    "Lineage",
    "LineageKind",
    "LineageOutcome",
    "LineagePoint",
    "read_lineage",
    "read_unreturned",
]

#: What was asked for.
LineageKind = Literal["delegation", "subagent", "handoff"]

_PAGE = 1000
_REQUEST_TYPES = (
    "delegation.requested",
    "delegation.completed",
    "delegation.failed",
    "delegation.cancelled",
    "delegation.announced",
    "subagent.spawned",
    "subagent.finished",
    "subagent.announced",
    "handoff.routed",
)
_SESSION_TYPES = (
    "session.turn_started",
    "session.turn_failed",
    "tool.call_requested",
    "tool.call_completed",
    "tool.call_failed",
)
#: How much of a result a chain shows.
_RESULT_CHARS = 200


class LineagePoint(msgspec.Struct, frozen=True, kw_only=True):
    """One link of a chain: an event of the log and the turn it belongs to."""

    stream: str
    #: The event's log position.
    position: int
    #: The turn (of ``stream``'s session) it belongs to, "" when it is not a session's.
    turn_id: str = ""
    #: The tool call it is or belongs to ("" for a turn's start).
    call_id: str = ""


class LineageOutcome(msgspec.Struct, frozen=True, kw_only=True):
    """What came back: how it ended (``completed``, ``failed``, ``cancelled``; ``routed``
    for a handoff), why, and the start of its result."""

    status: str
    reason: str = ""
    result: str = ""
    stream: str
    position: int


class Lineage(msgspec.Struct, frozen=True, kw_only=True):
    """The chain of one request: which turn asked, who worked, what came back, where it
    was delivered. ``delivered`` is None while no outcome is recorded."""

    kind: LineageKind
    #: The delegation id, the subagent task id, or for a handoff its tool call id
    #: (``handoff@POSITION`` when none is recorded).
    id: str
    #: sync | async ("" for a handoff).
    mode: str
    #: The asking agent and session stream; the target agent (a subagent's is its own
    #: agent) and the stream of the session that worked.
    source: str
    source_session: str
    target: str
    target_session: str
    task: str
    #: The caller's turn (correlation id of the request) and tool call (its causation).
    turn_id: str
    call_id: str
    #: The caller's turn start, and the asking tool call (None when not in the log).
    asked_turn: LineagePoint | None
    asked_call: LineagePoint | None
    #: The recorded request (``delegation.requested``, ``subagent.spawned``,
    #: ``handoff.routed``).
    request: LineagePoint
    #: The target's turns on it (one per attempt), in log order.
    worked: list[LineagePoint]
    outcome: LineageOutcome | None
    #: The caller's turn (async) or tool call end (sync) that received the outcome; for a
    #: handoff, the target's introduction turn.
    delivery: LineagePoint | None
    delivered: bool | None
    #: The asking turn's cause (its causation id): the delegation or subagent task it
    #: worked on (a nested request: ``clawlog lineage`` of it shows the parent) or whose
    #: result it received (the turn is caused by the outcome's position: named here by
    #: its delegation or task id), the handoff call that brought the chat; "" when the
    #: log names no cause (a person's message).
    caused_by: str = ""
    #: Why the turn that received an async outcome failed ("reason: message"; "" when it
    #: did not): the outcome is in the caller's session, but its model did not answer it.
    delivery_failed: str = ""


class _Chain(msgspec.Struct, kw_only=True):
    """A chain being assembled (mutable while the log is read)."""

    kind: LineageKind
    id: str
    mode: str
    source: str
    source_session: str
    target: str
    target_session: str
    task: str
    turn_id: str
    call_id: str
    request: LineagePoint
    asked_turn: LineagePoint | None = None
    asked_call: LineagePoint | None = None
    worked: list[LineagePoint] = msgspec.field(default_factory=list)
    outcome: LineageOutcome | None = None
    #: ``subagent.announced`` (or ``delegation.announced``) named this turn.
    announce_turn: str = ""
    announced: bool = False
    caused_by: str = ""
    delivery: LineagePoint | None = None
    delivery_failed: str = ""

    def done(self) -> Lineage:
        delivered: bool | None = None
        if self.outcome is not None:
            delivered = self.delivery is not None or self._delivered_otherwise()
        fields = {f: getattr(self, f) for f in Lineage.__struct_fields__ if f != "delivered"}
        return Lineage(**fields, delivered=delivered)

    def _delivered_otherwise(self) -> bool:
        """Delivered although no delivering event is found: a task its caller cancelled,
        or a log written before lineage (announced, but which turn is not named)."""
        cancelled = self.outcome is not None and self.outcome.status == "cancelled"
        if self.kind == "subagent" and cancelled and not self.announced:
            return True
        if self.mode == "async":
            return self.announced and not self.announce_turn and self.kind == "subagent"
        return not self.call_id  # a sync request recorded without its call: unknown


async def read_lineage(store: EventStore, id: str) -> list[Lineage]:
    """The chains ``id`` names: a delegation id, a subagent task id, the tool call that
    asked (a delegate, spawn or handoff call; an evaluate loop asks several), or the
    caller's turn id (the correlation id: every request made in that turn). Empty when
    the log holds none."""
    if not id:
        return []
    chains = await _requests(store, lambda c: id in (c.id, c.call_id, c.turn_id))
    await _follow(store, chains)
    await _name_outcome_causes(store, chains)
    return [c.done() for c in chains]


async def read_unreturned(store: EventStore) -> list[Lineage]:
    """Every delegation and subagent task whose outcome is recorded but never reached its
    caller, in the order they were requested."""
    chains = await _requests(store, lambda c: c.kind != "handoff")
    ended = [c for c in chains if c.outcome is not None]
    await _follow(store, ended)
    return [lineage for lineage in (c.done() for c in ended) if lineage.delivered is False]


# -- pass 1: the requests and their outcomes -------------------------------------------
async def _requests(store: EventStore, wanted: Callable[[_Chain], bool]) -> list[_Chain]:
    chains: dict[str, _Chain] = {}
    async for recorded in _read(store, _REQUEST_TYPES):
        event: Any = recorded.event
        chain = _new_chain(recorded)
        if chain is not None:
            if wanted(chain):
                chains[chain.id] = chain
            continue
        for key in _keys(event):
            found = chains.get(key)
            if found is not None:
                _record(found, recorded)
    return list(chains.values())


def _new_chain(recorded: RecordedEvent) -> _Chain | None:
    event = recorded.event
    point = LineagePoint(stream=recorded.stream, position=recorded.position)
    turn_id, cause = recorded.correlation_id or "", recorded.causation_id or ""
    match event:
        case DelegationRequested():
            return _Chain(
                kind="delegation",
                id=event.delegation_id,
                mode=event.mode,
                source=event.source,
                source_session=event.source_session,
                target=event.target,
                target_session=session_stream(event.target, event.target_session),
                task=event.task,
                turn_id=turn_id,
                call_id=event.call_id or cause,
                request=point,
            )
        case SubagentSpawned():
            agent = recorded.stream.removeprefix("agent/")
            return _Chain(
                kind="subagent",
                id=event.task_id,
                mode=event.mode,
                source=agent,
                source_session=event.parent_session,
                target=agent,
                target_session=subagent_stream(event.task_id),
                task=event.task,
                turn_id=turn_id,
                call_id=event.call_id or cause,
                request=point,
            )
        case HandoffRouted():
            call_id = event.call_id or cause
            return _Chain(
                kind="handoff",
                id=call_id or f"handoff@{recorded.position}",
                mode="",
                source=event.from_agent,
                source_session=session_stream(event.from_agent, event.session_key),
                target=event.to_agent,
                target_session=session_stream(event.to_agent, event.session_key),
                task=event.reason,
                turn_id=turn_id,
                call_id=call_id,
                request=point,
                outcome=LineageOutcome(
                    status="routed", stream=recorded.stream, position=recorded.position
                ),
            )
    return None


def _keys(event: Any) -> Iterable[str]:
    if isinstance(event, SubagentAnnounced):
        return event.task_ids
    key = getattr(event, "delegation_id", None) or getattr(event, "task_id", None)
    return (key,) if key else ()


def _record(chain: _Chain, recorded: RecordedEvent) -> None:
    """An outcome or an announcement of ``chain``."""
    event: Any = recorded.event
    stream, position = recorded.stream, recorded.position
    if isinstance(event, DelegationAnnounced | SubagentAnnounced):
        chain.announced, chain.announce_turn = True, event.turn_id
    elif isinstance(event, SubagentFinished):
        text = event.result if event.status == "completed" else event.error
        chain.outcome = LineageOutcome(
            status=event.status, result=text[:_RESULT_CHARS], stream=stream, position=position
        )
    else:
        end = delegation_end(event)
        if end is not None:
            chain.outcome = LineageOutcome(
                status=end.status,
                reason=end.reason,
                result=(end.result or "")[:_RESULT_CHARS],
                stream=stream,
                position=position,
            )


# -- pass 2: the sessions' turns and calls ---------------------------------------------
async def _follow(store: EventStore, chains: list[_Chain]) -> None:
    """Find each chain's asking turn and call, the target's turns and the delivery."""
    if not chains:
        return
    index = _Index()
    for c in chains:
        index.add(index.asking_turns, (c.source_session, c.turn_id), c, bool(c.turn_id))
        # Providers reuse call ids across turns (a counter restarting with the process):
        # a call is its turn's, when the request names the turn.
        index.add(
            index.calls, (c.source_session, _call_key(c.turn_id, c.call_id)), c, bool(c.call_id)
        )
        index.add(index.working, (c.target_session, ""), c, c.kind != "handoff")
        sender = f"delegate:{c.id}"
        index.add(index.senders, (c.source_session, sender), c, c.kind == "delegation")
        turn = (c.source_session, c.announce_turn)
        index.add(index.announce_turns, turn, c, bool(c.announce_turn))
        intro = (c.target_session, f"handoff:{c.source}")
        index.add(index.introductions, intro, c, c.kind == "handoff")
    async for recorded in _read(store, _SESSION_TYPES):
        event: Any = recorded.event
        stream = recorded.stream
        if isinstance(event, TurnStarted):
            point = LineagePoint(stream=stream, position=recorded.position, turn_id=event.turn_id)
            _turn_started(point, event, index, recorded.causation_id or "")
        elif isinstance(event, TurnFailed):
            for chain in index.deliveries.get((stream, event.turn_id), ()):
                chain.delivery_failed = f"{event.reason}: {_one_line(event.message)}"
        elif isinstance(event, ToolCallRequested | ToolCallCompleted | ToolCallFailed):
            point = LineagePoint(
                stream=stream,
                position=recorded.position,
                turn_id=recorded.correlation_id or "",
                call_id=event.call_id,
            )
            for chain in index.calls_of(stream, point.turn_id, event.call_id):
                if isinstance(event, ToolCallRequested):
                    chain.asked_call = chain.asked_call or point
                elif chain.mode == "sync" and _returns(chain, recorded.position, event):
                    chain.delivery = chain.delivery or point


class _Index:
    """The chains by what their session events are found by: (stream, key) -> chains."""

    def __init__(self) -> None:
        self.asking_turns: dict[tuple[str, str], list[_Chain]] = {}
        self.calls: dict[tuple[str, str], list[_Chain]] = {}
        self.working: dict[tuple[str, str], list[_Chain]] = {}
        self.senders: dict[tuple[str, str], list[_Chain]] = {}
        self.announce_turns: dict[tuple[str, str], list[_Chain]] = {}
        self.introductions: dict[tuple[str, str], list[_Chain]] = {}
        #: (stream, turn id) of the turns that received an async outcome.
        self.deliveries: dict[tuple[str, str], list[_Chain]] = {}

    def calls_of(self, stream: str, turn_id: str, call_id: str) -> list[_Chain]:
        """The chains asked by call ``call_id`` of turn ``turn_id`` in ``stream`` (and
        those recorded without their turn, by the call id alone)."""
        found = self.calls.get((stream, _call_key(turn_id, call_id)), [])
        if turn_id:
            found = found + self.calls.get((stream, _call_key("", call_id)), [])
        return found

    @staticmethod
    def add(
        table: dict[tuple[str, str], list[_Chain]], key: tuple[str, str], chain: _Chain, when: bool
    ) -> None:
        if when:
            table.setdefault(key, []).append(chain)


def _call_key(turn_id: str, call_id: str) -> str:
    return f"{turn_id}\0{call_id}"


def _turn_started(point: LineagePoint, event: TurnStarted, index: _Index, cause: str) -> None:
    stream, position = point.stream, point.position
    for chain in index.asking_turns.get((stream, event.turn_id), ()):
        if chain.asked_turn is None:
            chain.asked_turn, chain.caused_by = point, cause
    for chain in index.working.get((stream, ""), ()):
        if position > chain.request.position:
            chain.worked.append(point)
    delivering = [
        *index.senders.get((stream, event.sender), ()),
        *index.announce_turns.get((stream, event.turn_id), ()),
    ]
    for chain in delivering:
        if chain.delivery is None and chain.outcome is not None:
            chain.delivery = point
            index.add(index.deliveries, (stream, event.turn_id), chain, True)
    for chain in index.introductions.get((stream, event.sender), ()):
        if not chain.worked and position > chain.request.position:
            chain.worked.append(point)
            chain.delivery = point


async def _name_outcome_causes(store: EventStore, chains: list[_Chain]) -> None:
    """An asking turn that received an outcome is caused by the outcome event's position:
    name it by the delegation or task that ended there (what ``read_lineage`` takes)."""
    named: dict[str, str] = {}
    for chain in chains:
        cause = chain.caused_by
        if not cause.isdigit():
            continue
        if cause not in named:
            named[cause] = cause
            page = await store.read_all(int(cause), 1)
            if page and page[0].position == int(cause) and _is_outcome(page[0].event):
                named[cause] = next(iter(_keys(page[0].event)), cause)
        chain.caused_by = named[cause]


def _is_outcome(event: Any) -> bool:
    return isinstance(event, SubagentFinished) or delegation_end(event) is not None


def _returns(chain: _Chain, position: int, event: Any) -> bool:
    """A sync request's call ended with the outcome: after it, or interrupted as it was."""
    outcome = chain.outcome
    if outcome is None:
        return False
    if position > outcome.position:
        return True
    return outcome.reason == "interrupted" and isinstance(event, ToolCallFailed)


def _one_line(text: str) -> str:
    return " ".join(text.split())[:_RESULT_CHARS]


async def _read(store: EventStore, types: tuple[str, ...]) -> AsyncIterator[RecordedEvent]:
    position = 1
    while True:
        page = await store.read_all(position, _PAGE, types=types)
        for recorded in page:
            yield recorded
        if len(page) < _PAGE:
            return
        position = page[-1].position + 1
