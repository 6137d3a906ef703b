"""Lifecycle events of supervised actors (written to each actor's own stream)."""

from __future__ import annotations

from ..base import Event

__all__ = [
    "EVENTS",
    "ActorEscalated",
    "ActorEvent",
    "ActorFailed",
    "ActorRestarted",
    "ActorStarted",
    "ActorStopped",
    "DeadLetter",
]


class ActorStarted(Event, frozen=True, tag="actor.started"):
    """An actor started and folded its stream up to ``version``."""

    path: str
    kind: str
    version: int = 0
    from_snapshot: int | None = None


class ActorFailed(Event, frozen=True, tag="actor.failed"):
    """An actor's handler raised; its supervisor decides what happens next."""

    path: str
    error_type: str
    message: str
    #: sha256 of the formatted traceback, first 16 hex digits: groups identical crashes.
    traceback_digest: str
    failures_in_window: int = 1


class ActorRestarted(Event, frozen=True, tag="actor.restarted"):
    """A failed actor was started again from its stream after ``delay_s``."""

    path: str
    attempt: int
    delay_s: float


class ActorStopped(Event, frozen=True, tag="actor.stopped"):
    path: str
    reason: str = "stopped"


class ActorEscalated(Event, frozen=True, tag="actor.escalated"):
    """Too many failures in the window: the supervisor gave up and told its parent."""

    path: str
    failures: int
    window_s: float
    error_type: str = ""
    message: str = ""


class DeadLetter(Event, frozen=True, tag="actor.dead_letter"):
    """A message reached an actor that is not running."""

    path: str
    message_type: str
    reason: str


ActorEvent = (
    ActorStarted | ActorFailed | ActorRestarted | ActorStopped | ActorEscalated | DeadLetter
)
EVENTS = (ActorStarted, ActorFailed, ActorRestarted, ActorStopped, ActorEscalated, DeadLetter)
