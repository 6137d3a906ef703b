"""A link's state as a fold of its events: what the link needs to decide (its
configuration, each delegation and whether it is still running). The DelegationLink and the
replay of a ``link/`` stream fold with :func:`apply_link_event`; how a delegation ends and
when it is due are the rules in ``events/folds/delegation.py``, shared with the delegations
projection (the read side)."""

from __future__ import annotations

from clawlog.events import Event
from clawlog.events.domain.delegation import (
    DelegationAnnounced,
    DelegationRequested,
    DelegationRetried,
    LinkConfigured,
)
from clawlog.events.folds.delegation import deadline_of, delegation_end
from clawlog.events.folds.timers import apply_timer_event

from .messages import DelegationInfo, LinkState

__all__ = ["apply_link_event"]


def apply_link_event(state: LinkState, event: Event) -> LinkState:
    match event:
        case LinkConfigured():
            state.source, state.target = event.source, event.target
            state.max_concurrent, state.enabled = event.max_concurrent, event.enabled
            state.user_allow, state.user_deny = list(event.user_allow), list(event.user_deny)
        case DelegationRequested():
            state.delegations[event.delegation_id] = DelegationInfo(
                delegation_id=event.delegation_id,
                source=event.source,
                target=event.target,
                task=event.task,
                mode=event.mode,
                user=event.user,
                source_session=event.source_session,
                source_key=event.source_key,
                target_session=event.target_session,
                requested_at=event.at,
                deadline_at=deadline_of(event),
                skip_quality_gates=event.skip_quality_gates,
                call_id=event.call_id,
            )
        case DelegationRetried():
            state.delegations[event.delegation_id].attempts = event.attempt
        case DelegationAnnounced():
            state.delegations[event.delegation_id].announced = True
        case _:
            if not apply_timer_event(state.timers, event):
                _end(state, event)
    return state


def _end(state: LinkState, event: Event) -> None:
    end = delegation_end(event)
    if end is None:
        return
    info = state.delegations[end.delegation_id]
    info.status, info.reason, info.finished_at = end.status, end.reason, end.finished_at
    if end.result is not None:  # a cancellation keeps the result the link held
        info.result = end.result
