"""The seam between the typed store and a storage engine: bytes and envelopes only."""

from __future__ import annotations

from collections.abc import Awaitable, Sequence
from typing import Protocol, runtime_checkable

import msgspec

from ..chain import ChainedRow, ChainState
from ..envelope import EventMetadata, Lease, LeaseToken, NewRecord, StoredRecord

__all__ = [
    "ANY",
    "NO_STREAM",
    "ChainBackend",
    "Lease",
    "LeaseBackend",
    "LeaseToken",
    "SnapshotRecord",
    "StorageBackend",
    "check_expected_version",
]

#: ``expected_version`` that accepts any current version.
ANY = -1
#: ``expected_version`` that requires the stream to have no events yet.
NO_STREAM = 0


class SnapshotRecord(msgspec.Struct, frozen=True):
    """The latest saved state of one stream, as encoded bytes."""

    stream: str
    version: int
    state_type: str
    payload: bytes
    recorded_at: float


class StorageBackend(Protocol):
    """What every backend implements. It never encodes or decodes events.

    Invariants every backend keeps (the contract suite checks them):
    positions are global, gapless from 1 and become visible to readers in order;
    versions are per stream from 1; an append is all or nothing; a repeated
    idempotency key returns the first append's records and writes nothing.
    """

    async def open(self) -> None: ...

    def append(
        self,
        stream: str,
        records: Sequence[NewRecord],
        expected_version: int,
        metadata: EventMetadata,
    ) -> Awaitable[list[StoredRecord]]:
        """An ``async def`` or, to spare the hot path a coroutine, a plain method
        returning a future."""

    async def read_stream(
        self, stream: str, from_version: int, limit: int | None
    ) -> list[StoredRecord]: ...

    async def read_all(
        self,
        from_position: int,
        limit: int,
        stream_prefix: str | None,
        types: Sequence[str] | None,
    ) -> list[StoredRecord]: ...

    async def stream_version(self, stream: str) -> int: ...

    async def head_position(self) -> int: ...

    async def wait_for_append(self, after_position: int, timeout: float) -> None:
        """Return once the head is past ``after_position``, or after ``timeout`` seconds."""
        ...

    async def save_snapshot(self, snapshot: SnapshotRecord) -> None: ...

    async def load_snapshot(self, stream: str) -> SnapshotRecord | None: ...

    async def close(self) -> None: ...


def check_expected_version(stream: str, expected: int, actual: int) -> None:
    """Raise :class:`VersionConflict` unless ``actual`` satisfies ``expected``."""
    from ..errors import VersionConflict

    if expected != ANY and expected != actual:
        raise VersionConflict(stream, expected, actual)


@runtime_checkable
class LeaseBackend(Protocol):
    """Optional: stream ownership for backends shared by several processes (PostgreSQL).

    A lease says which process owns (writes) a stream until it expires; its epoch goes up
    with each change of holder, and an append carrying an older :class:`LeaseToken` is
    refused (fencing) in the same step that assigns its positions. Backends that only one
    process can write (SQLite, memory) do not implement it. Times are the server's.
    """

    def append(
        self,
        stream: str,
        records: Sequence[NewRecord],
        expected_version: int,
        metadata: EventMetadata,
        *,
        lease: LeaseToken | None = None,
    ) -> Awaitable[list[StoredRecord]]:
        """As :meth:`StorageBackend.append`; with ``lease``, refused with ``Fenced`` when
        the stream's lease exists and is held by another (owner, epoch). Without a lease
        row the append goes on (its expected version still applies)."""
        ...

    async def acquire_leases(
        self, streams: Sequence[str], owner: str, ttl_s: float
    ) -> dict[str, Lease]:
        """Take or extend each lease for ``owner`` (granted when the stream has no lease,
        its lease expired, or ``owner`` holds it) in one round trip; return each stream's
        lease after the call: granted when ``lease.owner == owner``."""
        ...

    async def renew_leases(self, owner: str, ttl_s: float) -> list[str]:
        """Extend every lease ``owner`` still holds and has not released (expired ones
        too: nobody took them over); return their streams. A stream missing from the
        answer was taken over, or released."""
        ...

    async def release_leases(self, streams: Sequence[str] | None, owner: str) -> None:
        """Expire the given leases of ``owner`` (all of them when ``streams`` is None);
        their rows and epochs stay, so the next holder's epoch is higher."""
        ...

    async def leases(self, streams: Sequence[str]) -> dict[str, Lease]:
        """The current leases of ``streams`` (a stream never leased is absent)."""
        ...

    async def expired_leases(self, prefix: str, limit: int = 1000) -> list[Lease]:
        """Leases of streams starting with ``prefix`` that expired without being
        released, oldest expiry first: the streams a dead (or stalled) process left
        behind. Released leases are not listed: their owner stopped serving them."""
        ...


@runtime_checkable
class ChainBackend(Protocol):
    """Optional: a backend whose writer keeps the hash chain (:mod:`clawlog.events.chain`),
    read by :func:`clawlog.events.verify.verify_chain` (SQLite, PostgreSQL)."""

    async def chain_state(self) -> ChainState | None:
        """The writer's recorded head and the last position, in one snapshot; None while
        the log has no chain (an old log not yet upgraded by a writer)."""
        ...

    async def read_chain(self, from_position: int, limit: int) -> list[ChainedRow]:
        """Up to ``limit`` stored rows from ``from_position`` on, in position order, each
        with its hash last."""
        ...
