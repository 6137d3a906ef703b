"""The event log: typed events, envelopes, the store and its backends.

async with await open_store("clawlog.db") as store:
    recorded = await store.append("session/main/u1", [event], expected_version=NO_STREAM)

Backends load when opened (``open_store``) or when their name is first used here, so
``from clawlog.events import Event`` does not import aiosqlite or the SQLite writer.
``clawlog.events.testing`` holds the store contract suite for third-party backends.
``clawlog.events.streams`` builds every stream name (one function per stream family).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .backends.base import ANY, NO_STREAM, StorageBackend
from .base import Event, UnknownEvent, event_tag
from .domain import all_event_classes, default_registry
from .envelope import EventMetadata, RecordedEvent
from .errors import (
    CorruptEvent,
    EventStoreError,
    IdempotencyKeyReused,
    InvalidAppend,
    InvalidEvent,
    MissingDependency,
    NotAClawlogDatabase,
    PayloadTooLarge,
    StoreClosed,
    StoreLocked,
    StoreUnavailable,
    UnknownEventClass,
    VersionConflict,
)
from .open import backend_for, open_store
from .registry import EventRegistry, Upcaster
from .store import EventStore, Snapshot, validate_stream
from .subscription import Subscription

__all__ = [
    "ANY",
    "NO_STREAM",
    "CorruptEvent",
    "Event",
    "EventMetadata",
    "EventRegistry",
    "EventStore",
    "EventStoreError",
    "IdempotencyKeyReused",
    "InvalidAppend",
    "InvalidEvent",
    "MemoryBackend",
    "MissingDependency",
    "NotAClawlogDatabase",
    "PayloadTooLarge",
    "RecordedEvent",
    "Snapshot",
    "SqliteBackend",
    "StorageBackend",
    "StoreClosed",
    "StoreLocked",
    "StoreUnavailable",
    "Subscription",
    "UnknownEvent",
    "UnknownEventClass",
    "Upcaster",
    "VersionConflict",
    "all_event_classes",
    "backend_for",
    "default_registry",
    "event_tag",
    "open_store",
    "validate_stream",
]

# Backends by name, imported on first use (PEP 562).
_BACKENDS = {
    "MemoryBackend": "clawlog.events.backends.memory",
    "SqliteBackend": "clawlog.events.backends.sqlite",
}

if TYPE_CHECKING:
    from .backends.memory import MemoryBackend
    from .backends.sqlite import SqliteBackend
else:

    def __getattr__(name: str) -> Any:
        module = _BACKENDS.get(name)
        if module is None:
            raise AttributeError(f"module 'clawlog.events' has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        globals()[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(globals()) | set(__all__))
