"""Who hears how a turn ended: one turn's answer to every asker of it.

A turn id can reach a session more than once (a routine run handed to it again after a
restart, a message redelivered after a takeover on a shared log); the session runs the
turn once and answers each asker (:meth:`Session._known_turn` in ``session.py``), from
how it ended when it already has (:func:`answer_ended`).
"""

from __future__ import annotations

from typing import Any

from ..errors import TurnCancelledError, TurnFailedError
from .session_state import EndedTurn

__all__ = ["Unanswered", "answer_ended", "fan_out"]


class Unanswered:
    """The reply of a told message: nobody waits for it."""

    def set(self, value: Any) -> None:
        pass

    def set_error(self, error: BaseException) -> None:
        pass


class FanOut:
    """One turn's answer to every asker of it (the same turn id sent more than once)."""

    def __init__(self, replies: list[Any]) -> None:
        self.replies = replies

    def set(self, value: Any) -> None:
        for reply in self.replies:
            reply.set(value)

    def set_error(self, error: BaseException) -> None:
        for reply in self.replies:
            reply.set_error(error)


def fan_out(first: Any, second: Any) -> Any:
    if first is None:
        return second
    if isinstance(first, FanOut):
        return FanOut([*first.replies, second])
    return FanOut([first, second])


def answer_ended(reply: Any, ended: EndedTurn) -> None:
    """Answer a repeated turn from how it ended, as its first asker was answered."""
    if ended.outcome == "completed":
        reply.set(ended.text)
    elif ended.outcome == "cancelled":
        reply.set_error(TurnCancelledError(f"the turn was cancelled by {ended.text}"))
    else:
        reply.set_error(TurnFailedError(ended.reason or "failed", ended.text))  # type: ignore[arg-type]
