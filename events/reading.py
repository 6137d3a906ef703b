"""What reading the log takes, as protocols, so a reader works on any store.

:class:`LogReader` is satisfied by :class:`~clawlog.events.EventStore` and by a System's
``HubStore`` (the same store seen from the application's loop): the re-run engine and
other readers take it instead of a concrete store. A subscription needs one more thing,
the backend to wait on for new events (:class:`EventSource`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from .backends.base import StorageBackend
from .envelope import RecordedEvent

__all__ = ["EventSource", "LogReader"]


class LogReader(Protocol):
    """Decoded events by stream and by position."""

    async def read_stream(
        self, stream: str, from_version: int = 1, limit: int | None = None
    ) -> list[RecordedEvent]: ...

    async def read_all(
        self,
        from_position: int = 1,
        limit: int = 1000,
        *,
        stream_prefix: str | None = None,
        types: Sequence[str] | None = None,
    ) -> list[RecordedEvent]: ...


class EventSource(LogReader, Protocol):
    """What a subscription reads: a :class:`LogReader` whose backend it can wait on."""

    @property
    def closed(self) -> bool: ...

    @property
    def backend(self) -> StorageBackend: ...
