"""Catch-up-then-live subscriptions over any backend.

A subscription always reads from the store by position, so the switch from catching up
to following live can neither skip nor repeat an event: it only changes how long the
next read waits. Backends guarantee positions become visible in order.

A subscription reads through the small :class:`EventSource` interface, which
:class:`events.store.EventStore` satisfies, so this module does not import the store.

A row that does not decode is not an outage: reading it again fails again. The events
before it are delivered, then the subscription raises :class:`CorruptEvent` and stays at
the row (each later call raises again), or, created with ``skip_corrupt``, logs it, lists
it in ``skipped`` and goes on. :class:`StoreDamaged` (an unreadable page) is raised too,
never waited out like :class:`StoreUnavailable`.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Sequence
from types import TracebackType

from .envelope import RecordedEvent
from .errors import CorruptEvent, StoreClosed, StoreUnavailable
from .logging import get_logger
from .reading import EventSource

__all__ = ["Subscription"]

_log = get_logger(__name__)


class Subscription:
    """An async iterator of :class:`RecordedEvent` that never ends until closed."""

    def __init__(
        self,
        store: EventSource,
        from_position: int,
        stream_prefix: str | None,
        types: Sequence[str] | None,
        batch_size: int,
        wait_timeout: float = 1.0,
        *,
        skip_corrupt: bool = False,
    ) -> None:
        self._store = store
        self._next = max(from_position, 1)
        self._prefix = stream_prefix
        self._types = types
        self._batch_size = batch_size
        self._wait_timeout = wait_timeout
        self._buffer: deque[RecordedEvent] = deque()
        self._closed = False
        self._failures = 0
        self._skip_corrupt = skip_corrupt
        #: Positions of the corrupt rows skipped (``skip_corrupt`` only), in order.
        self.skipped: list[int] = []
        #: The log head as this subscription last read it (0 before its first read).
        self.head_seen = 0

    @property
    def next_position(self) -> int:
        """The position the next read starts from (after everything already yielded)."""
        return self._next

    def __aiter__(self) -> Subscription:
        return self

    async def __anext__(self) -> RecordedEvent:
        while not self._buffer:
            if self._closed or self._store.closed:
                raise StopAsyncIteration
            await self._fill_or_wait_for_the_store()
        return self._buffer.popleft()

    async def _fill_or_wait_for_the_store(self) -> None:
        """A lost connection (a database restart) is waited out: the subscription resumes
        from the position after the last event it yielded, so nothing is skipped or
        repeated."""
        try:
            await self._fill()
            self._failures = 0
        except StoreClosed as exc:  # closed while we were reading: the subscription ends
            raise StopAsyncIteration from exc
        except StoreUnavailable as exc:
            self._failures += 1
            delay = min(0.1 * 2 ** min(self._failures, 6), 5.0)
            _log.warning("subscription waiting for the store", error=str(exc), retry_in=delay)
            await asyncio.sleep(delay)

    async def next_batch(self) -> list[RecordedEvent]:
        """Everything available now (waiting for at least one event), for batch consumers."""
        while not self._buffer:
            if self._closed or self._store.closed:
                raise StopAsyncIteration
            await self._fill_or_wait_for_the_store()
        batch = list(self._buffer)
        self._buffer.clear()
        return batch

    async def _fill(self) -> None:
        backend = self._store.backend
        # A backend told of appends (PostgreSQL's notifications carry the new head) spares
        # the round trip for the head when what it was told is past this reader; else ask.
        told = getattr(backend, "notified_head", None)
        head = told() if told is not None else 0
        if head < self._next:
            head = await backend.head_position()
        self.head_seen = head
        if head >= self._next:
            try:
                events = await self._store.read_all(
                    self._next, self._batch_size, stream_prefix=self._prefix, types=self._types
                )
            except CorruptEvent as exc:
                self._take_corrupt(exc)
                return
            if events:
                self._buffer.extend(events)
                self._next = events[-1].position + 1
                if len(events) == self._batch_size:
                    return
            # Everything up to the head we saw was read (filters may have skipped it).
            self._next = max(self._next, head + 1)
            if events:
                return
        await backend.wait_for_append(self._next - 1, self._wait_timeout)

    def _take_corrupt(self, exc: CorruptEvent) -> None:
        """Deliver the good events before the corrupt row; then skip the row, or stop at
        it, so the next read meets it again (and raises, with nothing before it)."""
        self._buffer.extend(exc.events)
        if self._skip_corrupt:
            _log.warning(
                "skipped a corrupt event",
                position=exc.position,
                stream=exc.stream,
                type=exc.type,
                reason=exc.reason,
            )
            self.skipped.append(exc.position)
            self._next = exc.position + 1
            return
        self._next = exc.position
        if not exc.events:
            raise exc

    async def aclose(self) -> None:
        self._closed = True
        self._buffer.clear()

    async def __aenter__(self) -> Subscription:
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()
