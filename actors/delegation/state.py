"""A link's state as a fold of its events."""

from __future__ import annotations

from clawlog.events import Event
from clawlog.events.domain.delegation import (
    DelegationAnnounced,
    DelegationCancelled,
    DelegationCompleted,
    DelegationFailed,
    DelegationRequested,
    DelegationRetried,
    LinkConfigured,
)

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
                deadline_at=event.at + event.deadline_s,
                skip_hooks=event.skip_hooks,
            )
        case DelegationCompleted():
            info = state.delegations[event.delegation_id]
            info.status, info.result, info.finished_at = "completed", event.result, event.at
        case DelegationFailed():
            info = state.delegations[event.delegation_id]
            info.status, info.reason, info.finished_at = "failed", event.reason, event.at
            info.result = event.message
        case DelegationCancelled():
            info = state.delegations[event.delegation_id]
            info.status, info.reason, info.finished_at = "cancelled", "cancelled", event.at
        case DelegationRetried():
            state.delegations[event.delegation_id].attempts = event.attempt
        case DelegationAnnounced():
            state.delegations[event.delegation_id].announced = True
    return state
