"""Messages the runtime sends itself; applications never see them."""

from __future__ import annotations

from typing import Any

import msgspec

from .messages import Message, Request

__all__ = [
    "AwaitRecovery",
    "ChildEscalated",
    "ChildStopped",
    "IdleCheck",
    "LeaseLost",
    "RecordLater",
    "RestartDue",
    "TimerDue",
]


class RestartDue(Message, frozen=True, kw_only=True):
    """Backoff elapsed after a failure or a store outage: restart from the stream now."""

    attempt: int
    delay_s: float


class ChildEscalated(Message, frozen=True, kw_only=True):
    path: str
    reason: str
    #: The child's ``actor.escalated`` event when the store did not take it.
    unrecorded: Any = None


class ChildStopped(Message, frozen=True, kw_only=True):
    path: str
    #: (message, reply) pairs a passivating child did not handle.
    leftovers: list[Any] = msgspec.field(default_factory=list)


class IdleCheck(Message, frozen=True, kw_only=True):
    """Scheduled after a message that left the actor idle (one at a time); passivates it
    if it handled nothing for its ``idle_timeout_s``, else is scheduled again for then."""


class AwaitRecovery(Request[int], frozen=True, kw_only=True):
    """Asked to wait until the actor has recovered from its stream; answered with its
    version (used by spawn: a request stashed during a restart waits for the recovery)."""


class RecordLater(Message, frozen=True, kw_only=True):
    """Backoff elapsed: try again to record the events the store did not take."""


class TimerDue(Message, frozen=True, kw_only=True):
    """From the timer service (``actors.timers``): a durable timer of this actor is due.
    Stale when the actor's book no longer holds ``timer_id`` at ``due_at`` (it fired,
    was cancelled or moved): then it is ignored."""

    timer_id: str
    due_at: float


class LeaseLost(Message, frozen=True, kw_only=True):
    """From the lease renewer: another process took this actor's stream over. The actor
    steps back at once, writing nothing (a shared PostgreSQL log)."""
