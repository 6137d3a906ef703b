"""The root of the supervision tree: adopts top-level actors and records dead letters."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from clawlog.events.domain.actor import DeadLetter

from .actor import EventSourcedActor
from .messages import Message
from .runtime import ActorHandle

__all__ = ["Adopt", "Guardian", "RecordDeadLetter"]


class Adopt(Message, frozen=True, kw_only=True):
    """Take a freshly launched top-level actor under supervision."""

    handle: Any


class RecordDeadLetter(Message, frozen=True, kw_only=True):
    path: str
    message_type: str
    reason: str


class Guardian(EventSourcedActor[None]):
    """Supervises top-level actors. An escalation stops there: logged, recorded, reported.

    A top-level actor that escalated while the store was down could not record its
    ``actor.escalated``: it is in ``System.escalations`` at once, and the guardian records
    the event on its own stream as soon as the store takes it (retried with backoff)."""

    kind = "guardian"
    recover_state = False

    def __init__(
        self, *args: Any, on_escalation: Callable[[str, str], None] | None = None, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self._on_escalation = on_escalation

    def handle(self, message: Message) -> Any:
        match message:
            case Adopt(handle=handle):
                assert isinstance(handle, ActorHandle)
                self.children[handle.path] = handle
            case RecordDeadLetter(path=path, message_type=message_type, reason=reason):
                # Never fails the guardian: with the store down the letter is only logged
                # (the runtime did), and its failing append must not leave a stale version.
                self._record_lifecycle(
                    DeadLetter(path=path, message_type=message_type, reason=reason)
                )
            case _:
                return super().handle(message)
        return None

    def on_child_escalated(self, child_path: str, reason: str) -> None:
        self.log.error("top-level actor escalated to the guardian", child=child_path, reason=reason)
        if self._on_escalation is not None:
            self._on_escalation(child_path, reason)

    def handle_while_stopping(self, message: object) -> bool:
        if isinstance(message, RecordDeadLetter):
            self.handle(message)
            return True
        return False
