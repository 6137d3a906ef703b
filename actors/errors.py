"""Errors of the actor runtime.

ActorError
 ├── AskTimeout        an ask got no reply within its timeout
 ├── ActorDead         the actor is stopped (or escalated); nothing will handle the message
 ├── ActorCrashed      the handler of an ask raised; the actor is being restarted
 ├── Escalated         a child failed too often and its supervisor gave up on it
 ├── Rejected          a handler refused a command (bad input); state is unchanged
 ├── HubError          the I/O hub is not running, or was used from the wrong thread
 ├── SystemClosed      the System was closed
 ├── TurnCancelledError  an agent's turn was cancelled before it replied
 └── TurnFailedError   an agent's turn ended without a reply (limit, model error, crash)
"""

from __future__ import annotations

__all__ = [
    "ActorCrashed",
    "ActorDead",
    "ActorError",
    "AskTimeout",
    "Escalated",
    "HubError",
    "Rejected",
    "SystemClosed",
    "TurnCancelledError",
    "TurnFailedError",
]


class ActorError(Exception):
    """Root of every error raised by :mod:`actors`."""


class AskTimeout(ActorError, TimeoutError):
    """No reply arrived within the ask's timeout."""


class ActorDead(ActorError):
    """The addressed actor is not running; the message became a dead letter."""


class ActorCrashed(ActorError):
    """The actor's handler raised while handling this ask; the actor restarts from its stream."""

    def __init__(self, path: str, error: BaseException) -> None:
        super().__init__(f"{path} crashed handling the request: {type(error).__name__}: {error}")
        self.path = path
        self.error = error


class Escalated(ActorError):
    """A child failed more often than its supervision policy allows."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path} escalated: {reason}")
        self.path = path
        self.reason = reason


class Rejected(ActorError):
    """Raised by a handler to refuse a command: the asker gets it, the actor does not restart."""


class HubError(ActorError):
    """The I/O hub cannot run this (stopped, or called from its own loop where it would block)."""


class SystemClosed(ActorError):
    """The System is closed."""


class TurnFailedError(ActorError):
    """A turn ended without a reply (iteration limit, model error, interruption)."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(f"{reason}: {message}")
        self.reason = reason
        self.message = message


class TurnCancelledError(ActorError):
    """The turn was cancelled before it produced a reply."""
