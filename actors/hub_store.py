"""The event store as seen from the embedding application's own asyncio loop.

The store lives on the I/O hub's loop; these methods run each call there and await the
result without blocking the caller's loop.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from clawlog.events import (
    EventMetadata,
    EventStore,
    LeaseToken,
    RecordedEvent,
    Snapshot,
    Subscription,
)

from ._bridge import Hub

__all__ = ["HubStore", "HubSubscription"]


class HubStore:
    """Forwards every call to the store on the hub."""

    def __init__(self, hub: Hub, store: EventStore) -> None:
        self._hub = hub
        self.store = store

    async def append(
        self,
        stream: str,
        events: Sequence[Any],
        expected_version: int,
        metadata: EventMetadata | None = None,
        *,
        lease: LeaseToken | None = None,
    ) -> list[RecordedEvent]:
        return await self._hub.run_async(
            self.store.append(stream, events, expected_version, metadata, lease=lease)
        )

    async def read_stream(
        self, stream: str, from_version: int = 1, limit: int | None = None
    ) -> list[RecordedEvent]:
        return await self._hub.run_async(self.store.read_stream(stream, from_version, limit))

    async def read_all(
        self,
        from_position: int = 1,
        limit: int = 1000,
        *,
        stream_prefix: str | None = None,
        types: Sequence[str] | None = None,
    ) -> list[RecordedEvent]:
        return await self._hub.run_async(
            self.store.read_all(from_position, limit, stream_prefix=stream_prefix, types=types)
        )

    async def stream_version(self, stream: str) -> int:
        return await self._hub.run_async(self.store.stream_version(stream))

    async def head_position(self) -> int:
        return await self._hub.run_async(self.store.head_position())

    async def load_snapshot(self, stream: str, state_type: type[Any]) -> Snapshot | None:
        return await self._hub.run_async(self.store.load_snapshot(stream, state_type))

    def subscribe(self, from_position: int = 1, **options: Any) -> HubSubscription:
        return HubSubscription(self._hub, self.store.subscribe(from_position, **options))


class HubSubscription:
    """A subscription read from another loop: each step runs on the hub."""

    def __init__(self, hub: Hub, inner: Subscription) -> None:
        self._hub = hub
        self._inner = inner

    def __aiter__(self) -> HubSubscription:
        return self

    async def __anext__(self) -> RecordedEvent:
        return await self._hub.run_async(self._inner.__anext__())

    async def aclose(self) -> None:
        await self._hub.run_async(self._inner.aclose())

    async def __aenter__(self) -> HubSubscription:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
