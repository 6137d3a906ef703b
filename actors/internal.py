"""Messages the runtime sends itself; applications never see them."""

from __future__ import annotations

from typing import Any

import msgspec

from .messages import Message, Request

__all__ = ["ChildEscalated", "ChildStopped", "IdleCheck", "Ready", "RecordLater", "Resume"]


class Resume(Message, frozen=True, kw_only=True):
    """Backoff elapsed: restart from the stream now."""

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
    """Scheduled after a message; passivates the actor if nothing happened since."""

    activity: int


class Ready(Request[int], frozen=True, kw_only=True):
    """Answered with the actor's version once it has recovered (used by spawn)."""


class RecordLater(Message, frozen=True, kw_only=True):
    """Backoff elapsed: try again to record the events the store did not take."""
