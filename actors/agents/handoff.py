"""Handoff routes (seed 001 §10): (channel, chat) → agent, one small actor per route.

``handoff/{channel}/{chat}`` holds the route's history. ``System.send`` asks the route
before normal routing, so after ``handoff(agent=...)`` later messages on that channel and
chat go to the target; ``handoff(action="clear")`` hands back. Idle routes passivate.

Lineage: ``handoff.routed`` is caused by the handoff tool call that asked (correlated with
the caller's turn), and the target's introduction turn is caused by that call too.
"""

from __future__ import annotations

from typing import Any

import msgspec

from clawlog.events import Event
from clawlog.events.domain.agent import HandoffCleared, HandoffRouted

from ..actor import EventSourcedActor
from ..errors import Rejected
from ..messages import Message, Request

__all__ = [
    "ClearRoute",
    "GetRoute",
    "HandoffRoute",
    "RouteState",
    "SetRoute",
    "apply_route_event",
]


class RouteState(msgspec.Struct, kw_only=True):
    agent: str | None = None
    previous: str | None = None
    changes: int = 0


def apply_route_event(state: RouteState, event: Event) -> RouteState:
    """The fold of a ``handoff/{channel}/{chat}`` stream (also used by replay)."""
    match event:
        case HandoffRouted(to_agent=to_agent, from_agent=from_agent):
            state.previous, state.agent = from_agent, to_agent
            state.changes += 1
        case HandoffCleared():
            state.agent = None
            state.changes += 1
    return state


class GetRoute(Request["str | None"], frozen=True, kw_only=True):
    pass


class SetRoute(Request[int], frozen=True, kw_only=True):
    """Route (channel, chat) to ``to_agent``; replies with the position of the recorded
    ``handoff.routed`` (for the handoff's span), 0 when the route already went there."""

    channel: str
    chat_id: str
    from_agent: str
    to_agent: str
    reason: str = ""
    session_key: str = ""
    #: The handoff tool call that asks (the route change's causation).
    call_id: str = ""


class ClearRoute(Request["str | None"], frozen=True, kw_only=True):
    """Hand back; replies with the agent that had the route (None if there was none)."""

    channel: str
    chat_id: str
    agent: str


class HandoffRoute(EventSourcedActor[RouteState]):
    kind = "handoff-route"
    idle_timeout_s = 60.0

    def initial_state(self) -> RouteState:
        return RouteState()

    def apply(self, state: RouteState, event: Event) -> RouteState:
        return apply_route_event(state, event)

    def handle(self, message: Message) -> Any:
        match message:
            case GetRoute():
                return self.state.agent
            case SetRoute():
                if message.to_agent == message.from_agent:
                    raise Rejected("an agent cannot hand off to itself")
                if self.state.agent == message.to_agent:
                    return 0
                recorded = self.emit(
                    [
                        HandoffRouted(
                            channel=message.channel,
                            chat_id=message.chat_id,
                            from_agent=message.from_agent,
                            to_agent=message.to_agent,
                            reason=message.reason,
                            session_key=message.session_key,
                            call_id=message.call_id,
                        )
                    ],
                    correlation_id=message.correlation_id,
                    causation_id=message.call_id or None,
                )
                return recorded[0].position
            case ClearRoute():
                current = self.state.agent
                if current is None:
                    return None
                self.emit(
                    [
                        HandoffCleared(
                            channel=message.channel,
                            chat_id=message.chat_id,
                            agent=current,
                            back_to=self.state.previous or "",
                        )
                    ],
                    correlation_id=message.correlation_id,
                )
                return current
        return super().handle(message)
