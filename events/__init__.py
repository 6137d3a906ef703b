"""The event log: typed events, envelopes, the store and its backends.

async with await open_store("clawlog.db") as store:
    recorded = await store.append("session/main/u1", [event], expected_version=NO_STREAM)
"""

from .backends.base import ANY, NO_STREAM, StorageBackend
from .backends.memory import MemoryBackend
from .backends.sqlite import SqliteBackend
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
