"""Typed messages between actors: frozen msgspec Structs, never dicts.

``Message`` is told; ``Request[R]`` is asked and declares its reply type, so
``await system.ask(ref, GetTotal())`` is typed as the reply.
"""

from __future__ import annotations

from typing import Any, Generic, TypeVar

import msgspec

__all__ = ["Message", "Piped", "R", "Request"]

R = TypeVar("R")


class Message(msgspec.Struct, frozen=True, kw_only=True):
    """Base of every message. ``correlation_id`` follows a user turn or job through actors."""

    correlation_id: str | None = None
    #: The OpenTelemetry context of the work that sent it (a W3C ``traceparent`` carrier from
    #: :func:`clawlog.events.telemetry.context_carrier`), None when nothing is traced. The
    #: receiving actor handles the message inside it, so its spans continue the sender's
    #: trace across threads. Messages are not events: it is never persisted.
    trace_context: dict[str, str] | None = None


class Request(Message, Generic[R], frozen=True, kw_only=True):
    """A message that expects a reply of type ``R``."""


class Piped(Message, frozen=True, kw_only=True):
    """The outcome of I/O an actor started with ``pipe``: sent back to the same actor."""

    #: What the actor asked to be told (its own label for the operation).
    label: str
    #: Which operation of that kind (a call id, a turn and iteration, ...).
    key: str = ""
    value: Any = None
    error: BaseException | None = None
