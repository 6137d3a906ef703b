"""The domain event modules. Each defines one tagged union; the registry joins them all."""

from __future__ import annotations

import importlib

from ..base import Event
from ..registry import EventRegistry

__all__ = ["DOMAIN_MODULES", "all_event_classes", "default_registry"]

#: Every module under events.domain that defines an ``EVENTS`` tuple.
DOMAIN_MODULES = (
    "actor",
    "agent",
    "custom_tool",
    "delegation",
    "inbox",
    "mcp",
    "outbox",
    "routine",
    "session",
    "team",
    "timer",
    "tool",
    "workspace",
)


def all_event_classes() -> tuple[type[Event], ...]:
    classes: list[type[Event]] = []
    for name in DOMAIN_MODULES:
        module = importlib.import_module(f"{__name__}.{name}")
        classes.extend(module.EVENTS)
    return tuple(classes)


def default_registry() -> EventRegistry:
    """A new registry holding every domain event of clawlog."""
    return EventRegistry(all_event_classes())
