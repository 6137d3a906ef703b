"""Errors of the event log.

EventStoreError
 ├── StoreClosed            the store was closed (or never opened)
 ├── StoreUnavailable       the backend cannot be reached (connection lost, disk gone)
 ├── StoreLocked            another process holds the write lock of this SQLite file
 ├── NotAClawlogDatabase    the file or database is something else
 ├── StoreDamaged           the log's file is damaged: SQLite cannot read a page, or a
 │                          table/column is missing (names the position where known)
 ├── MissingDependency      a backend's optional package is not installed (also an ImportError)
 ├── InvalidAppend          bad input to append(); nothing was written
 │    ├── InvalidEvent       a field's value does not match its type (names event type and field)
 │    ├── PayloadTooLarge    one encoded event is over the size limit (1 MiB by default)
 │    └── UnknownEventClass  an event class was never registered
 ├── VersionConflict        expected_version did not match the stream's version
 ├── Fenced                 an append by a lease holder that lost its lease: another process
 │                          took the stream over (names its owner and epoch); nothing written
 ├── IdempotencyKeyReused   the key was first used for another stream
 ├── CorruptEvent           a stored row cannot be decoded (names its position; carries
 │                          the good events of the same read before it)
 ├── NoHashChain            the log has no hash chain to verify (an old log not yet opened
 │                          for writing, or a backend without one)
 └── InvalidCheckpoint      a checkpoint or key file cannot be read, or is not Ed25519
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .envelope import LeaseToken, RecordedEvent

__all__ = [
    "CorruptEvent",
    "EventStoreError",
    "Fenced",
    "IdempotencyKeyReused",
    "InvalidAppend",
    "InvalidCheckpoint",
    "InvalidEvent",
    "MissingDependency",
    "NoHashChain",
    "NotAClawlogDatabase",
    "PayloadTooLarge",
    "StoreClosed",
    "StoreDamaged",
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


class StoreDamaged(EventStoreError):
    """The log's file is damaged: SQLite cannot read a page, or a table or column is
    missing. Unlike :class:`StoreUnavailable` this does not heal by waiting: retrying the
    same read fails the same way.

    ``position`` is where the failed read began to fail: the first position it had not
    returned when it failed (its start if it returned nothing), so every row before it
    was readable and the damage lies at or after it; ``exact`` when the damage is at that
    very position (a read of every row; a filtered read skips rows it never returns, so
    its position is only a lower bound). None when the failure has no position (the
    schema check, a read by stream). ``log`` names the file (or the
    PostgreSQL schema); ``reason`` is the database's own words and what was being read.
    :class:`~clawlog.events.LogPages` steps over damaged rows. ``advice`` (what to do)
    ends the message: ``clawlog doctor`` unless the damage is the hash chain's.
    """

    def __init__(
        self,
        log: str,
        position: int | None,
        reason: str,
        *,
        exact: bool = True,
        advice: str = "run `clawlog doctor` on it to list every damaged position",
    ) -> None:
        where = ""
        if position is not None:
            where = f" at position {position}" if exact else f" at or after position {position}"
        super().__init__(f"the event log {log} is damaged{where}: {reason}; {advice}")
        self.log = log
        self.position = position
        self.reason = reason
        self.exact = exact


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


class Fenced(EventStoreError):
    """An append by a lease holder that lost its lease: another process took the stream
    over (``holder`` at ``epoch``) and nothing was written. The writer has to step back:
    the stream is the new holder's. ``token`` is what the refused append presented."""

    def __init__(self, stream: str, holder: str, epoch: int, token: LeaseToken) -> None:
        super().__init__(
            f"stream {stream!r} was taken over by {holder!r} (lease epoch {epoch}): the "
            f"append of {token.owner!r} with epoch {token.epoch} was refused and nothing "
            "was written"
        )
        self.stream = stream
        self.holder = holder
        self.epoch = epoch
        self.token = token


class CorruptEvent(EventStoreError):
    """A stored event cannot be decoded. Rows at other positions stay readable.

    ``events`` holds the decoded events of the same read that come before the bad row
    (empty if it was the first): a reader keeps them, then resumes at ``position + 1`` to
    skip the row or at ``position`` to meet it again.
    """

    def __init__(
        self,
        position: int,
        stream: str,
        type_: str,
        reason: str,
        *,
        events: list[RecordedEvent] | None = None,
    ) -> None:
        super().__init__(
            f"corrupt event at position {position} (stream {stream!r}, type {type_!r}): {reason}"
        )
        self.position = position
        self.stream = stream
        self.type = type_
        self.reason = reason
        self.events: list[RecordedEvent] = [] if events is None else events


class NoHashChain(EventStoreError):
    """The log has no hash chain to verify: a schema 1 log that no writer has opened since
    (the first one upgrades it in place), or a backend that keeps none."""


class InvalidCheckpoint(EventStoreError):
    """A checkpoint or key file cannot be read: not JSON of the right shape, not a PEM
    Ed25519 key. (A signature that does not verify is a finding, not this error.)"""


def _describe_expected(expected: int) -> str:
    if expected == -1:
        return "any version"
    if expected == 0:
        return "no stream (version 0)"
    return f"version {expected}"
