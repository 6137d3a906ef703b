"""State as of a position for the actors' streams, with the folds the actors use.

    as_of = await stream_state_as_of(store, "team/release", position=900)
    as_of.state.tasks      # the board as it stood at position 900

:func:`projections.timeline.state_as_of` folds any function over a stream; this module
knows which fold belongs to which stream (team boards, session conversations, handoff
routes, agent configs and subagent tasks, delegation links).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from clawlog.events import Event, EventStore, RecordedEvent
from clawlog.projections.timeline import AsOf, Skipped, state_as_of

from ..agents.config import AgentConfig
from ..agents.handoff import RouteState, apply_route_event
from ..agents.pipeline_gateway import PipelineGateway
from ..agents.session_state import SessionState, apply_session_event
from ..agents.supervisor import AgentState, apply_agent_event
from ..delegation.messages import LinkState
from ..delegation.state import apply_link_event
from ..errors import ReplayError
from ..teams.board import BoardState, apply_board_event

__all__ = ["STATE_FOLDS", "StateFold", "fold_for", "stream_state_as_of"]


Apply = Callable[[Any, Event], Any]


@dataclass(frozen=True, slots=True)
class StateFold:
    """The state of one kind of stream: a fresh initial state, and a fresh fold of one
    event for each pass over the stream (a fold may keep state beside the stream's)."""

    prefix: str
    what: str
    initial: Callable[[], Any]
    new_apply: Callable[[], Apply]


def _session_fold() -> Apply:
    # One reader for the whole pass: it folds the approval state the session keeps.
    reader = PipelineGateway(AgentConfig(key="replay"), [])

    def apply(state: SessionState, event: Event) -> SessionState:
        return apply_session_event(state, event, reader.read_event)

    return apply


def _stateless(apply: Apply) -> Callable[[], Apply]:
    return lambda: apply


STATE_FOLDS: tuple[StateFold, ...] = (
    StateFold("team/", "task board", BoardState, _stateless(apply_board_event)),
    StateFold("session/", "conversation", SessionState, _session_fold),
    StateFold("handoff/", "handoff route", RouteState, _stateless(apply_route_event)),
    StateFold(
        "agent/", "agent config and subagent tasks", AgentState, _stateless(apply_agent_event)
    ),
    StateFold("link/", "delegation link", LinkState, _stateless(apply_link_event)),
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
    apply_event = fold.new_apply()

    def apply(state: Any, recorded: RecordedEvent) -> Any:
        event = recorded.event
        return apply_event(state, event) if isinstance(event, Event) else state

    return await state_as_of(store, stream, apply, fold.initial(), position=position, skip=skip)
