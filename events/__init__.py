"""The event log: typed events, envelopes, the store and its backends.

async with await open_store("clawlog.db") as store:
    recorded = await store.append("session/main/u1", [event], expected_version=NO_STREAM)

Backends load when opened (``open_store``) or when their name is first used here, so
``from clawlog.events import Event`` does not import aiosqlite or the SQLite writer.
``clawlog.events.testing`` holds the store contract suite for third-party backends.
``clawlog.events.streams`` builds every stream name (one function per stream family).
``LogPages`` walks the log a page at a time in bounded memory, and through damaged rows
when asked (``skip_corrupt``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .backends.base import (
    ANY,
    NO_STREAM,
    Lease,
    LeaseBackend,
    LeaseToken,
    SnapshotRecord,
    StorageBackend,
    check_expected_version,
)
from .base import Event, UnknownEvent, event_tag
from .domain import all_event_classes, default_registry
from .envelope import EventMetadata, NewRecord, RecordedEvent, StoredRecord
from .errors import (
    CorruptEvent,
    EventStoreError,
    Fenced,
    IdempotencyKeyReused,
    InvalidAppend,
    InvalidCheckpoint,
    InvalidEvent,
    MissingDependency,
    NoHashChain,
    NotAClawlogDatabase,
    PayloadTooLarge,
    StoreClosed,
    StoreDamaged,
    StoreLocked,
    StoreUnavailable,
    UnknownEventClass,
    VersionConflict,
)
from .open import backend_for, open_store
from .pages import LogPages
from .reading import EventSource, LogReader
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
    "EventSource",
    "EventStore",
    "EventStoreError",
    "Fenced",
    "IdempotencyKeyReused",
    "InvalidAppend",
    "InvalidCheckpoint",
    "InvalidEvent",
    "Lease",
    "LeaseBackend",
    "LeaseToken",
    "LogPages",
    "LogReader",
    "MemoryBackend",
    "MissingDependency",
    "NewRecord",
    "NoHashChain",
    "NotAClawlogDatabase",
    "PayloadTooLarge",
    "PostgresBackend",
    "RecordedEvent",
    "Snapshot",
    "SnapshotRecord",
    "SqliteBackend",
    "StorageBackend",
    "StoreClosed",
    "StoreDamaged",
    "StoreLocked",
    "StoreUnavailable",
    "StoredRecord",
    "Subscription",
    "UnknownEvent",
    "UnknownEventClass",
    "Upcaster",
    "VersionConflict",
    "all_event_classes",
    "backend_for",
    "check_expected_version",
    "default_registry",
    "event_tag",
    "open_store",
    "validate_stream",
]

# Backends by name, imported on first use (PEP 562).
_BACKENDS = {
    "MemoryBackend": "clawlog.events.backends.memory",
    "SqliteBackend": "clawlog.events.backends.sqlite",
    "PostgresBackend": "clawlog.events.backends.postgres",
}

if TYPE_CHECKING:
    from .backends.memory import MemoryBackend
    from .backends.postgres import PostgresBackend
    from .backends.sqlite import SqliteBackend
else:

    def __getattr__(name: str) -> Any:
        module = _BACKENDS.get(name)
        if module is None:
            raise AttributeError(f"module 'clawlog.events' has no attribute {name!r}")
        try:
            value = getattr(importlib.import_module(module), name)
        except ImportError as exc:
            if name != "PostgresBackend":  # asyncpg is the one optional dependency
                raise
            raise MissingDependency(
                f"{name} needs asyncpg: pip install 'clawlog[postgres]'"
            ) from exc
        globals()[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(globals()) | set(__all__))
