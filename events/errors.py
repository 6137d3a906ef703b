"""Errors of the event log.

EventStoreError
 ├── StoreClosed            the store was closed (or never opened)
 ├── StoreUnavailable       the backend cannot be reached (connection lost, disk gone)
 ├── StoreLocked            another process holds the write lock of this SQLite file
 ├── NotAClawlogDatabase    the file or database is something else
 ├── MissingDependency      a backend's optional package is not installed (also an ImportError)
 ├── InvalidAppend          bad input to append(); nothing was written
 │    ├── InvalidEvent       a field's value does not match its type (names event type and field)
 │    ├── PayloadTooLarge    one encoded event is over the size limit (1 MiB by default)
 │    └── UnknownEventClass  an event class was never registered
 ├── VersionConflict        expected_version did not match the stream's version
 ├── IdempotencyKeyReused   the key was first used for another stream
 └── CorruptEvent           a stored row cannot be decoded (names its position)
"""

from __future__ import annotations

__all__ = [
    "CorruptEvent",
    "EventStoreError",
    "IdempotencyKeyReused",
    "InvalidAppend",
    "InvalidEvent",
    "MissingDependency",
    "NotAClawlogDatabase",
    "PayloadTooLarge",
    "StoreClosed",
    "StoreLocked",
    "StoreUnavailable",
    "UnknownEventClass",
    "VersionConflict",
]


class EventStoreError(Exception):
    """Root of every error raised by :mod:`events`."""


class StoreClosed(EventStoreError):
    """The store was closed; open a new one."""


class MissingDependency(EventStoreError, ImportError):
    """A backend needs an optional package that is not installed; the message says which
    extra to install (``pip install 'clawlog[postgres]'``)."""


class StoreUnavailable(EventStoreError):
    """The backend cannot be reached; the append may be retried with its idempotency key."""


class StoreLocked(EventStoreError):
    """Another process is already writing this SQLite file."""


class NotAClawlogDatabase(EventStoreError):
    """The file or database exists but is not a clawlog event log."""


class InvalidAppend(EventStoreError):
    """The append was refused before anything was written."""


class InvalidEvent(InvalidAppend):
    """An event's field holds a value its declared type does not allow, so the log could
    not read it back. Names the event type (its tag) and the field (None if unknown)."""

    def __init__(self, event_type: str, field: str | None, reason: str) -> None:
        where = f"field {field!r} of " if field is not None else ""
        super().__init__(f"{where}{event_type} event is invalid: {reason}; nothing was appended")
        self.event_type = event_type
        self.field = field
        self.reason = reason


class PayloadTooLarge(InvalidAppend):
    """One encoded event is over the store's configured size limit."""


class UnknownEventClass(InvalidAppend):
    """The event's class is not registered with the store's registry."""


class IdempotencyKeyReused(EventStoreError):
    """An idempotency key was reused for a different stream."""


class VersionConflict(EventStoreError):
    """The stream is not at the version the writer expected: a second writer exists."""

    def __init__(self, stream: str, expected: int, actual: int) -> None:
        super().__init__(
            f"stream {stream!r} is at version {actual}, but the append expected "
            f"{_describe_expected(expected)}"
        )
        self.stream = stream
        self.expected = expected
        self.actual = actual


class CorruptEvent(EventStoreError):
    """A stored event cannot be decoded. Rows at other positions stay readable."""

    def __init__(self, position: int, stream: str, type_: str, reason: str) -> None:
        super().__init__(
            f"corrupt event at position {position} (stream {stream!r}, type {type_!r}): {reason}"
        )
        self.position = position
        self.stream = stream
        self.type = type_
        self.reason = reason


def _describe_expected(expected: int) -> str:
    if expected == -1:
        return "any version"
    if expected == 0:
        return "no stream (version 0)"
    return f"version {expected}"
