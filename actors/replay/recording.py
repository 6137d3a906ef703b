"""A session's stream read as turns → iterations → tool calls, for serving and comparing.

The same reader turns the recorded stream and the re-run's stream into
:class:`RecordedTurn` values, so the comparison works on one shape. Each model request
keeps the conversation it was sent (the stream folded up to it) so a re-run can compare
its own requests with the recorded ones.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec

from clawlog.events import Event, LogReader, RecordedEvent
from clawlog.events.domain.agent import AgentRegistered
from clawlog.events.domain.session import (
    ChatMessage,
    CompactionFailed,
    ModelFailed,
    ModelReplied,
    ModelRequested,
    SessionCleared,
    SessionCompacted,
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
)
from clawlog.events.streams import agent_stream

from ..agents.config import AgentConfig
from ..agents.pipeline_gateway import PipelineGateway
from ..agents.session_state import SessionState, apply_session_event
from ..errors import NothingRecorded

__all__ = [
    "RecordedCall",
    "RecordedIteration",
    "RecordedTurn",
    "config_before",
    "parse_turns",
    "read_session",
    "read_stream",
]

_PAGE = 1000


@dataclass
class RecordedCall:
    """One tool call of a model reply, and every tool event recorded for it."""

    call_id: str
    name: str
    arguments: str
    position: int
    events: list[tuple[int, Event]] = field(default_factory=list)

    @property
    def outcome(self) -> str:
        """ran | failed | refused:<step> | interrupted | pending (what the model was told)."""
        for _, event in self.events:
            match event:
                case ToolCallCompleted():
                    return "ran"
                case ToolCallFailed(error_kind="interrupted"):
                    return "interrupted"
                case ToolCallFailed():
                    return "failed"
        for _, event in self.events:
            if isinstance(event, ToolCallRefused):
                return f"refused:{event.step}"
        return "pending"

    @property
    def result(self) -> ToolCallCompleted | ToolCallFailed | None:
        """The recorded result event (what a re-run serves for this call)."""
        for _, event in self.events:
            if isinstance(event, ToolCallCompleted | ToolCallFailed):
                return event
        return None

    @property
    def refusal(self) -> ToolCallRefused | None:
        for _, event in self.events:
            if isinstance(event, ToolCallRefused):
                return event
        return None

    @property
    def asked(self) -> bool:
        """Whether the call waited for a person's approval."""
        return any(isinstance(event, ToolApprovalRequested) for _, event in self.events)

    @property
    def approval(self) -> ApprovalOutcome | None:
        """The recorded approval decision, if the call waited for one."""
        for _, event in self.events:
            if isinstance(event, ToolApprovalDecided):
                return event.decision
        return None


@dataclass
class RecordedIteration:
    """One model request of a turn, its reply (or failure) and the calls it asked for."""

    request: ModelRequested
    position: int
    #: The conversation the request carried (the stream folded up to it).
    messages: list[ChatMessage]
    reply: ModelReplied | None = None
    failure: ModelFailed | None = None
    reply_position: int = 0
    calls: list[RecordedCall] = field(default_factory=list)


@dataclass
class RecordedTurn:
    started: TurnStarted
    position: int
    iterations: list[RecordedIteration] = field(default_factory=list)
    end: TurnCompleted | TurnFailed | TurnCancelled | None = None
    end_position: int = 0
    #: Position of the last event of the turn (the place a missing or extra step is at).
    last_position: int = 0
    #: Clears and on-demand compactions recorded after the turn before ended, before this
    #: one started (a re-run does them again, in order).
    before: list[Event] = field(default_factory=list)

    @property
    def turn_id(self) -> str:
        return self.started.turn_id

    def call(self, call_id: str) -> RecordedCall | None:
        for iteration in self.iterations:
            for recorded in iteration.calls:
                if recorded.call_id == call_id:
                    return recorded
        return None


def parse_turns(recorded: Sequence[RecordedEvent]) -> list[RecordedTurn]:
    """The turns of one session stream, in order, each with its iterations and calls."""
    reader = PipelineGateway(AgentConfig(key="replay"), [])
    state = SessionState()
    turns: list[RecordedTurn] = []
    between: list[Event] = []
    for item in recorded:
        event, position = item.event, item.position
        if not isinstance(event, Event):
            continue  # a tag this process does not know: not part of the loop it replays
        turn = turns[-1] if turns and turns[-1].end is None else None
        match event:
            case TurnStarted():
                turns.append(RecordedTurn(started=event, position=position, before=between))
                turn, between = turns[-1], []
            case SessionCleared() | SessionCompacted() | CompactionFailed() if turn is None:
                between.append(event)
            case ModelRequested() if turn is not None:
                messages = list(state.messages)
                turn.iterations.append(RecordedIteration(event, position, messages))
            case ModelReplied() if turn is not None and turn.iterations:
                iteration = turn.iterations[-1]
                iteration.reply, iteration.reply_position = event, position
                iteration.calls = [
                    RecordedCall(c.id, c.name, c.arguments, position) for c in event.tool_calls
                ]
            case ModelFailed() if turn is not None and turn.iterations:
                turn.iterations[-1].failure = event
                turn.iterations[-1].reply_position = position
            case TurnCompleted() | TurnFailed() | TurnCancelled() if turn is not None:
                turn.end, turn.end_position = event, position
            case _ if turn is not None:
                call_id = getattr(event, "call_id", None)
                found = turn.call(call_id) if isinstance(call_id, str) else None
                if found is not None:
                    found.events.append((position, event))
        if turn is not None:
            turn.last_position = position
        apply_session_event(state, event, reader.read_event)
    return turns


async def read_stream(log: LogReader, stream: str) -> list[RecordedEvent]:
    events: list[RecordedEvent] = []
    while page := await log.read_stream(stream, len(events) + 1, _PAGE):
        events.extend(page)
        if len(page) < _PAGE:
            break
    return events


async def read_session(log: LogReader, stream: str) -> list[RecordedEvent]:
    """Every event of a session stream, or :class:`NothingRecorded`."""
    events = await read_stream(log, stream)
    if not events:
        raise NothingRecorded(f"nothing is recorded on {stream!r}")
    return events


async def config_before(log: LogReader, agent: str, position: int) -> AgentConfig:
    """The agent's config as recorded on ``agent/{key}`` before ``position`` (the first
    one recorded when none is older)."""
    found: dict[str, Any] | None = None
    for item in await read_stream(log, agent_stream(agent)):
        if isinstance(item.event, AgentRegistered):
            if found is not None and item.position > position:
                break
            found = dict(item.event.config)
    if found is None:
        raise NothingRecorded(f"no agent.registered is recorded on 'agent/{agent}'")
    return msgspec.convert(found, AgentConfig)
