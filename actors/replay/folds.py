"""State as of a position for the actors' streams, with the folds the actors use.

    as_of = await stream_state_as_of(store, "team/release", position=900)
    as_of.state.tasks      # the board as it stood at position 900

:func:`projections.timeline.state_as_of` folds any function over a stream; this module
knows which fold belongs to which stream (team boards, session conversations, handoff
routes, agent configs and subagent tasks, delegation links, the custom tools in force).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import msgspec

from clawlog.events import Event, EventStore, RecordedEvent
from clawlog.events.folds.custom_tool import CustomToolDefinitions
from clawlog.events.streams import custom_tools_stream
from clawlog.projections.timeline import AsOf, Skipped, state_as_of

from ..agents.config import AgentConfig
from ..agents.handoff import RouteState, apply_route_event
from ..agents.pipeline_gateway import PipelineGateway
from ..agents.session_state import SessionState, apply_session_event
from ..agents.supervisor import AgentState, apply_agent_event
from ..automation.routines import RoutinesState, apply_routines_event
from ..delegation.messages import LinkState
from ..delegation.state import apply_link_event
from ..errors import ReplayError
from ..teams.board import BoardState, apply_board_event

__all__ = ["STATE_FOLDS", "CustomToolsState", "StateFold", "fold_for", "stream_state_as_of"]


Apply = Callable[[Any, RecordedEvent], Any]


@dataclass(frozen=True, slots=True)
class StateFold:
    """The state of one kind of stream: a fresh initial state, and a fresh fold of one
    recorded event for each pass over the stream (a fold may keep state beside the
    stream's)."""

    prefix: str
    what: str
    initial: Callable[[], Any]
    new_apply: Callable[[], Apply]


def _session_fold() -> Apply:
    # One reader for the whole pass: it folds the approval state the session keeps.
    reader = PipelineGateway(AgentConfig(key="replay"), [])

    def apply(state: SessionState, event: Event) -> SessionState:
        return apply_session_event(state, event, reader.read_event)

    return _of_events(apply)


class CustomToolsState(msgspec.Struct, frozen=True, kw_only=True):
    """``tools/custom`` as of a position: the custom tools then in force, each as
    ``clawlog tools --json`` shows one (env names only, never the sealed values)."""

    tools: list[dict[str, Any]] = msgspec.field(default_factory=list)


def _custom_tools_fold() -> Apply:
    # The System's own fold (it needs each event's position), kept for the whole pass.
    definitions = CustomToolDefinitions()

    def apply(state: CustomToolsState, recorded: RecordedEvent) -> CustomToolsState:
        definitions.apply(recorded)
        return CustomToolsState(tools=[entry.to_dict() for entry in definitions.entries()])

    return apply


def _of_events(apply: Callable[[Any, Event], Any]) -> Apply:
    """A fold of events as a fold of recorded events (tags this process does not know
    leave the state as it is)."""

    def apply_recorded(state: Any, recorded: RecordedEvent) -> Any:
        event = recorded.event
        return apply(state, event) if isinstance(event, Event) else state

    return apply_recorded


def _stateless(apply: Callable[[Any, Event], Any]) -> Callable[[], Apply]:
    folded = _of_events(apply)
    return lambda: folded


STATE_FOLDS: tuple[StateFold, ...] = (
    StateFold("team/", "task board", BoardState, _stateless(apply_board_event)),
    StateFold("session/", "conversation", SessionState, _session_fold),
    StateFold("handoff/", "handoff route", RouteState, _stateless(apply_route_event)),
    StateFold(
        "agent/", "agent config and subagent tasks", AgentState, _stateless(apply_agent_event)
    ),
    StateFold("link/", "delegation link", LinkState, _stateless(apply_link_event)),
    StateFold(
        "routines/",
        "routines, their timers and runs",
        RoutinesState,
        _stateless(apply_routines_event),
    ),
    StateFold(custom_tools_stream(), "custom tools", CustomToolsState, _custom_tools_fold),
)


def fold_for(stream: str) -> StateFold:
    for fold in STATE_FOLDS:
        if stream.startswith(fold.prefix):
            return fold
    known = ", ".join(f.prefix for f in STATE_FOLDS)
    raise ReplayError(f"no state is known for {stream!r}: streams under {known}")


async def stream_state_as_of(
    store: EventStore, stream: str, *, position: int | None = None, skip: Skipped | None = None
) -> AsOf[Any]:
    """The state of ``stream`` folded up to and including ``position`` (None: the head).
    Events of tags this process does not know are skipped; corrupt ones only with
    ``skip`` (which records them; see :func:`~clawlog.projections.timeline.timeline`)."""
    fold = fold_for(stream)
    return await state_as_of(
        store, stream, fold.new_apply(), fold.initial(), position=position, skip=skip
    )
