"""The event base class and the placeholder for events this reader does not know.

An event is a frozen msgspec Struct with an explicit, stable tag::

    class ToolCallCompleted(Event, tag="tool.call_completed"):
        call_id: str
        duration_ms: float = 0.0

Tags are forever: never rename one, never change its meaning. New fields get defaults.
A breaking change gets a new tag (or a higher ``schema_version``) plus an upcaster
registered with :class:`events.registry.EventRegistry`.
"""

from __future__ import annotations

from typing import Any, ClassVar

import msgspec

__all__ = ["Event", "UnknownEvent", "event_tag"]


class Event(msgspec.Struct, frozen=True, kw_only=True, tag_field="type"):
    """Base of every domain event. Subclasses must pass ``tag="domain.name"``, and
    ``frozen=True`` again: msgspec inherits it at run time, but type checkers following
    PEP 681 (dataclass_transform) only see what a class says itself."""

    #: Version of this class's payload layout. Raise it (and register an upcaster for the
    #: old number) when a change cannot be expressed by adding fields with defaults.
    schema_version: ClassVar[int] = 1


class UnknownEvent(msgspec.Struct, frozen=True):
    """An event whose tag this process does not know (a newer writer wrote it).

    The raw payload is kept untouched, so nothing is lost and a newer reader sees it.
    """

    type: str
    schema_version: int
    payload: bytes

    def as_dict(self) -> dict[str, Any]:
        """The payload decoded to plain Python values (best effort, for display)."""
        decoded = msgspec.msgpack.decode(self.payload)
        return decoded if isinstance(decoded, dict) else {"value": decoded}


def event_tag(cls: type[Event]) -> str:
    """The stable tag of an event class (``"tool.call_completed"``)."""
    tag = cls.__struct_config__.tag
    if not isinstance(tag, str) or tag == cls.__name__:
        raise TypeError(f"{cls.__qualname__} needs an explicit tag: class X(Event, tag='a.b')")
    return tag
